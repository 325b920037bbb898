"""The command that reruns one config by itself: experiment_runner.py with its --model-config and --experiment-config
(the config as it was asked for, so the rerun's fingerprint is the original's) and the child's flags of the sweep
(repeats, --verify, diagnostics, ...), into a fresh results directory of its own under the sweep's. Every record
carries it (`rerun`); the end-of-sweep failure list, aggregate's page, compare's changes and history's config page
show it. It is one shell line (cli_support.command_line: shlex-quoted, safe to paste whatever the model is named);
a rerun that is a sweep selects its model alone, case and all (`exact_filter`), where its suite finds it
(`location_flags`). A record read back is untrusted (a shared results file), so what the tools show of it is
`trusted_rerun`: the stored command only when it is one that rerun_text could have written for that record (quoted as
command_line quotes, Python starting experiment_runner.py, flags only, its own model), never `...; touch PWNED`.
No torch."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from typing import Optional

from benchmarks import features
from benchmarks.config import axes
from benchmarks.plumbing import machine_facts
from benchmarks.plumbing.cli_support import command_line
from benchmarks.plumbing.safe_paths import safe_name

# Child flags a rerun does not take from the sweep: where it writes (a directory of its own), the sweep's time (a
# rerun is a run of its own), and a config run by hand's own --model-config/--experiment-config (the rerun names
# the config it ran, once).
NOT_CARRIED = ("--output-dirname", "--output-basename", "--timestamp", "--model-config", "--experiment-config")
RERUN_DIR = "rerun"


def entry_argv() -> list:
    """How to start experiment_runner.py: the top-level script when present, else the package."""
    script = os.path.join(machine_facts.PROJECT_ROOT, "experiment_runner.py")
    if os.path.exists(script):
        return [sys.executable, script]
    return [sys.executable, "-m", "benchmarks"]


def single_config_argv(child_flags, model: dict, experiment: dict) -> list:
    """The command line of one config's child (its record over --record-fd, which the launcher adds)."""
    return entry_argv() + list(child_flags) + [
        "--model-config=" + json.dumps(model, sort_keys=True),
        "--experiment-config=" + json.dumps(experiment),
    ]


def child_command_line(child_flags, model: dict, experiment: dict) -> str:
    """single_config_argv as one shell line: what --dry-run prints for each config's child."""
    argv = single_config_argv(child_flags, model, experiment)
    return command_line(argv)


def fresh_dir(output_dirname: str, model: dict, slug: str) -> str:
    """Where a config's rerun writes: <the sweep's output>/rerun/<model>/<config slug>."""
    return os.path.join(output_dirname, RERUN_DIR, safe_name(str(model.get("model_name"))), slug)


def _literal(name: str) -> str:
    """A model name as a regex that matches only itself (its metacharacters escaped; dashes left readable)."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", name)


def exact_filter(name: str) -> str:
    """The -k pattern that selects the model `name` and no other: anchored, and case-sensitive although -k ignores
    case (a scoped `(?-i:...)`), so a rerun of `mlp` does not also run `MLP` (suites/library_names.plain_name still
    reads the name out of it, for a library's models beyond the suite's list)."""
    return f"^(?-i:{_literal(name)})$"


# The suites whose models are files found under --search-dir: a rerun names the folder (as the model's path and
# name say: the name is the path's tail below it), or this placeholder where the record does not say (history's
# configs keep no path).
SEARCH_DIR_SUITES = ("files", "scripts")
SEARCH_DIR_PLACEHOLDER = "PATH/TO/YOUR/MODELS"
LOCATION_FLAGS = ("--search-dir", "--model-file", "--script")


def search_dir(model: dict) -> str:
    """The --search-dir under which a files or scripts model has its name: `more/tiny_mlp` at
    /x/models/more/tiny_mlp.py is /x/models; SEARCH_DIR_PLACEHOLDER when the model has no path, or a name its path
    does not end with (a name numbered apart: tiny-2)."""
    path = model.get("path")
    name = str(model.get("model_name")).split("::")[0]  # a script's model: <script>.py::<model>
    if model.get("suite_name") == "files":
        name += ".py"
    tail = os.sep + name.replace("/", os.sep)
    if isinstance(path, str) and path.endswith(tail) and len(path) > len(tail):
        return path[:-len(tail)]
    return SEARCH_DIR_PLACEHOLDER


def location_flags(model: dict) -> list:
    """What the suite needs to find the model again: --search-dir for the files and scripts suites."""
    return [f"--search-dir={search_dir(model)}"] if model.get("suite_name") in SEARCH_DIR_SUITES else []


def sweep_flags(model: dict, experiment: dict, located: bool = False) -> list:
    """The runner's flags of a sweep of this one config: its suite, its model alone (exact_filter), where the suite
    finds it (location_flags; `located`: the caller's flags say already), its parameters, upstream's keys and every
    axis not at its default (`Axis.flag_args`)."""
    e = experiment
    flags = [f"--suite-name={model.get('suite_name')}", f"--filter={exact_filter(str(model.get('model_name')))}"]
    flags += [] if located else location_flags(model)
    flags += [f"--accelerator={e.get('accelerator') or 'cpu'}", f"--xla={e.get('xla') or 'None'}",
              f"--dynamo={e.get('dynamo') or 'None'}", f"--test={e.get('test')}"]
    if model.get("params"):
        flags.append("--model-params=" + json.dumps(model["params"], sort_keys=True))
    if e.get("batch_size") is not None:
        flags.append(f"--batch-size={e['batch_size']}")
    if e.get("xla_flags"):
        flags.append(f"--xla-flags={e['xla_flags']}")
    for axis in axes.AXES:
        flags.extend(axis.flag_args(e.get(axis.key)))
    return flags


def rerun_text(options, model: dict, experiment) -> str:
    """The record's `rerun`: one shell command line that reruns exactly this config (an ExperimentConfig, as asked
    for) with the sweep's child flags (`options`: RunOptions) in a fresh results directory: the single-config
    command, or, for a warm start (two processes, which only a sweep starts), the sweep of this one config."""
    flags = [flag for flag in options.child_flags if flag.split("=", 1)[0] not in NOT_CARRIED]
    if any(runs_twice(experiment) for runs_twice in features.declared("runs_twice")):
        located = any(flag.split("=", 1)[0] in LOCATION_FLAGS for flag in flags)
        argv = entry_argv() + sweep_flags(model, experiment.to_dict(), located) + flags
    else:
        argv = single_config_argv(flags, model, experiment.to_dict())
    out = fresh_dir(options.output_dirname, model, experiment.slug())
    return command_line(argv + [f"--output-dirname={out}"])


_PYTHON = re.compile(r"python[0-9.]*")
_FLAG = re.compile(r"--[a-z][a-z0-9-]*(=.*)?", re.DOTALL)


def _starts_the_runner(argv: list) -> int:
    """How many words of `argv` start experiment_runner.py (entry_argv's two forms, any Python), 0 if they don't."""
    if len(argv) >= 2 and _PYTHON.fullmatch(os.path.basename(argv[0])):
        if os.path.basename(argv[1]) == "experiment_runner.py":
            return 2
        if argv[1:3] == ["-m", "benchmarks"]:
            return 3
    return 0


def _names_its_model(flags: list, model: dict) -> bool:
    """The command runs the record's own model: its --model-config names it, or (a warm start's sweep) its --filter
    selects it alone."""
    for flag in flags:
        if flag.startswith("--model-config="):
            try:
                asked = json.loads(flag.split("=", 1)[1])
            except (ValueError, RecursionError):
                return False
            return isinstance(asked, dict) and all(asked.get(k) == model.get(k) for k in ("suite_name", "model_name"))
    return f"--filter={exact_filter(str(model.get('model_name')))}" in flags


def trusted_rerun(record) -> Optional[str]:
    """The record's `rerun` when it is a command the runner writes (rerun_text) for this record, else None: every
    tool that shows a record's rerun shows this. A shared results file is untrusted, and a stored `rerun` of
    `experiment_runner.py; touch PWNED #` would run `touch` when pasted, so the text must be exactly what
    command_line gives for its words (nothing unquoted), those words Python starting experiment_runner.py followed by
    long flags only, one printable line, and the model it runs the record's own."""
    command = record.get("rerun") if isinstance(record, dict) else None
    model = record.get("model") if isinstance(record, dict) else None
    if not isinstance(command, str) or not command.isprintable() or not isinstance(model, dict):
        return None  # a newline or a terminal escape: not one line to paste
    try:
        argv = shlex.split(command)
    except ValueError:  # an unclosed quote
        return None
    start = _starts_the_runner(argv)
    if not start or command_line(argv) != command:
        return None
    flags = argv[start:]
    if not all(_FLAG.fullmatch(flag) for flag in flags) or not _names_its_model(flags, model):
        return None
    return command


CONFIG_FLAGS = ("--model-config", "--experiment-config")


def short_rerun(record) -> Optional[str]:
    """The rerun a person reads beside a table (compare's changes): `experiment_runner.py` and the flags of a sweep of
    this one config (sweep_flags: its suite, model, upstream keys and the axes not at their default), then the
    record's own child flags and results directory, instead of its JSON configs (`rerun`, the exact command, stays in
    the record and in compare's JSON and CSV). None where the record's rerun is not trusted (trusted_rerun)."""
    command = trusted_rerun(record)
    if command is None:
        return None
    argv = shlex.split(command)
    flags = argv[_starts_the_runner(argv):]
    if not any(flag.split("=", 1)[0] == "--model-config" for flag in flags):  # already a sweep (a warm start's)
        return command_line(["experiment_runner.py"] + flags)
    experiment = record.get("experiment") if isinstance(record.get("experiment"), dict) else {}
    carried = [flag for flag in flags if flag.split("=", 1)[0] not in CONFIG_FLAGS]
    located = any(flag.split("=", 1)[0] in LOCATION_FLAGS for flag in carried)
    return command_line(["experiment_runner.py"] + sweep_flags(record["model"], experiment, located) + carried)
