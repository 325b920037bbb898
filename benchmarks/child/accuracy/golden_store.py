"""A golden entry on disk: where it lives, what its manifest says, reading it back and refusing one that belongs
to another config or format (docs/runner.md, "Golden inputs and outputs").

One entry per (suite, model and its params, test, precision, requested batch size), a folder:
  <DIR>/<suite>/<model>/<test>-<precision>[-bs<N>]/
    manifest.json          format, the config it belongs to, tolerances, steps, versions and machine
    weights.safetensors    the model's state dict the result started from
    inputs.safetensors     the inputs (args, kwargs)
    expected.safetensors   eval: the output; train: the loss and every gradient after `steps` steps
A DIR that holds a manifest.json itself is one entry, used as it is (and refused for any other config).
A golden folder may come from elsewhere, so what it says is checked, not obeyed: the manifest is read as a regular
file (a FIFO would block the child), its `files` must name the files this store writes for each kind (never an
absolute path or `..`), and each must be a regular file inside the entry's folder; its tolerances and steps must be
usable numbers (finite, in range); anything else is GoldenRefused.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import stat
from typing import Optional

from benchmarks.plumbing import disk_writes, machine_facts, safe_reads
from benchmarks.plumbing.safe_paths import PathEscapes, inside, model_dirname

FORMAT = "ptbench-golden"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
FILES = {"weights": "weights.safetensors", "inputs": "inputs.safetensors", "expected": "expected.safetensors"}


class GoldenRefused(Exception):
    """The entry exists but cannot be used: unreadable, another config's, another format; says which file and why."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path


def entry_dir(root: str, model_config: dict, experiment) -> str:
    """The entry of this config (the requested one: before the model picks its batch size)."""
    if os.path.isfile(os.path.join(root, MANIFEST)):
        return root
    name = f"{experiment.test}-{experiment.precision or 'fp32'}"
    if experiment.batch_size:
        name += f"-bs{experiment.batch_size}"
    return os.path.join(root, str(model_config.get("suite_name")), model_dirname(model_config), name)


MODEL_IDENTITY = ("suite_name", "model_name", "params", "script_model")


def model_identity(model_config) -> dict:
    """The part of a model config that names the model: not its path or labels, which differ between checkouts
    (a golden saved in one is used in another). Read from a stored manifest too, so older entries match."""
    if not isinstance(model_config, dict):
        return model_config
    return {key: model_config[key] for key in MODEL_IDENTITY if model_config.get(key)}


def identity(model_config: dict, experiment) -> dict:
    """What an entry must match to be used for a config."""
    return {"model": model_identity(model_config), "test": experiment.test,
            "precision": experiment.precision or "fp32", "batch_size": experiment.batch_size}


def new_manifest(model_config: dict, experiment, steps: int, atol: float, rtol: float, dtype: str) -> dict:
    environment = machine_facts.collect()
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, **identity(model_config, experiment),
        "steps": steps, "atol": atol, "rtol": rtol, "dtype": dtype, "files": dict(FILES),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {key: environment.get(key) for key in ("python", *machine_facts.PACKAGES, "git_commit")},
        "machine": {key: environment.get(key) for key in ("hostname", "cpu_model", "cpu_count", "gpu_names",
                                                          "platform")},
        "accelerator": experiment.accelerator, "accelerator_model": experiment.accelerator_model,
    }


def write_entry(directory: str, manifest: dict, trees: dict) -> None:
    """Write the entry's tensor files, then its manifest last (atomically): a manifest names a whole entry. An
    older manifest goes first, so a crash mid-write leaves no manifest over half-written files."""
    from benchmarks.child.accuracy import tensor_tree_file

    os.makedirs(directory, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(directory, MANIFEST))
    for kind, filename in FILES.items():
        tensor_tree_file.save(trees[kind], os.path.join(directory, filename))
    disk_writes.write_json(os.path.join(directory, MANIFEST), manifest, indent=1, sort_keys=True, newline=True)


MAX_STEPS = 10_000  # STEPS[test] is a handful; a manifest asking for more would hold the child for ever


def values_problem(manifest: dict) -> Optional[str]:
    """Why the manifest's numbers are unusable, by the record check's rules (results/record_check.py): atol and
    rtol finite and >= 0, steps a whole number from 1 to MAX_STEPS; None when they are fine."""
    for key in ("atol", "rtol"):
        value = manifest.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
            return f"{key} is {str(value)[:40]!r}, not a finite tolerance >= 0"
    steps = manifest.get("steps")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        return f"steps is {str(steps)[:40]!r}, not a whole number from 1 to {MAX_STEPS}"
    return None


def read_manifest(directory: str, model_config: dict, experiment) -> Optional[dict]:
    """The entry's manifest checked against the config; None when there is no entry; GoldenRefused otherwise."""
    path = os.path.join(directory, MANIFEST)
    try:  # a regular file only (a FIFO would block), JSON not too deep (safe_reads: DamagedFile)
        manifest = safe_reads.load_json(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise GoldenRefused(path, f"unreadable manifest ({exc})")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise GoldenRefused(path, f"not a golden manifest (format {manifest.get('format') if isinstance(manifest, dict) else None!r}, "
                                  f"expected {FORMAT!r})")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise GoldenRefused(path, f"golden format version {manifest.get('format_version')!r}; this runner reads "
                                  f"version {FORMAT_VERSION}")
    bad = values_problem(manifest)
    if bad:
        raise GoldenRefused(path, bad)
    wanted = identity(model_config, experiment)
    stored = {**manifest, "model": model_identity(manifest.get("model"))}
    for key in ("model", "test", "precision", "batch_size"):
        if stored.get(key) != wanted[key]:
            raise GoldenRefused(path, f"it is the golden of another config: {key} {describe(stored.get(key))}, "
                                      f"this config's is {describe(wanted[key])}")
    return manifest


def describe(value) -> str:
    if isinstance(value, dict) and "model_name" in value:
        extra = {k: v for k, v in value.items() if k not in ("suite_name", "model_name")}
        return f"{value.get('suite_name')}/{value['model_name']}" + (f" {json.dumps(extra, sort_keys=True)}" if extra else "")
    return json.dumps(value)


def read_tree(directory: str, manifest: dict, kind: str):
    """One of the entry's tensor files; GoldenRefused naming the file and why."""
    from benchmarks.child.accuracy import tensor_tree_file

    files = manifest.get("files")
    filename = files.get(kind, FILES[kind]) if isinstance(files, dict) else FILES[kind]
    path = os.path.join(directory, FILES[kind])
    if filename != FILES[kind]:  # the store writes these names only: an absolute path or `..` leads elsewhere
        raise GoldenRefused(os.path.join(directory, MANIFEST), f"it names {describe(filename)} as the entry's {kind}; "
                                                              f"a golden entry's {kind} is {FILES[kind]}")
    try:
        inside(directory, FILES[kind])
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the child
            raise GoldenRefused(path, f"not a regular file (the entry's {kind})")
        return tensor_tree_file.load(path)
    except PathEscapes as escape:
        raise GoldenRefused(path, f"a link out of the entry's folder (to {escape.resolved})")
    except FileNotFoundError:
        raise GoldenRefused(path, f"missing (the manifest names it as the entry's {kind})")
    except tensor_tree_file.TreeFileError as exc:
        raise GoldenRefused(path, str(exc))
