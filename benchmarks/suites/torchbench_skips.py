"""TorchBench's skip rules, each with its reason: our skip data (torchbench_skips.yaml, or --torchbench-skips) and
the model's own metadata.yaml `not_implemented` entries, read by the parent (no torch); and, in the child, a
`train`/`eval` method that does nothing but raise NotImplementedError (read from its source, not run)."""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
from typing import Optional

from benchmarks.plumbing.cli_support import UsageError

DEFAULT_SKIPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchbench_skips.yaml")
SKIP_KEYS = ("test", "accelerator", "xla", "dynamo")


def as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def load_skips(path: Optional[str]) -> list:
    """Our skip groups: [{"reason", "models", and any of SKIP_KEYS}], validated. 'none' -> []."""
    import yaml

    if path is not None and path.strip().lower() == "none":
        return []
    path = path or DEFAULT_SKIPS
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except OSError as exc:
        raise UsageError(f"--torchbench-skips {path}: {exc.strerror}")
    except yaml.YAMLError as exc:
        raise UsageError(f"--torchbench-skips {path} is not valid YAML: {str(exc).splitlines()[0]}")
    groups = data.get("skips") if isinstance(data, dict) else None
    if not isinstance(groups, list):
        raise UsageError(f"--torchbench-skips {path}: expected a top-level 'skips:' list")
    for number, group in enumerate(groups, start=1):
        if not isinstance(group, dict) or not group.get("reason") or not isinstance(group.get("models"), list):
            raise UsageError(f"--torchbench-skips {path}: group {number} needs 'reason' and a 'models' list")
        unknown = set(group) - {"reason", "models", *SKIP_KEYS}
        if unknown:
            raise UsageError(f"--torchbench-skips {path}: group {number} has unknown key(s) {', '.join(sorted(unknown))}")
    return groups


def group_applies(group: dict, name: str, experiment) -> bool:
    if name not in group["models"]:
        return False
    if "test" in group and experiment.test not in as_list(group["test"]):
        return False
    if "accelerator" in group and experiment.accelerator not in as_list(group["accelerator"]):
        return False
    if "xla" in group and bool(experiment.xla) not in [bool(v) for v in as_list(group["xla"])]:
        return False
    if "dynamo" in group and experiment.dynamo not in as_list(group["dynamo"]):
        return False
    return True


def read_metadata(folder: str) -> dict:
    import yaml

    path = os.path.join(folder, "metadata.yaml")
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def metadata_skip(metadata: dict, experiment) -> Optional[str]:
    """The model's own `not_implemented` entries: {device?, test?}; a device is `cpu`, `cuda` or a GPU name."""
    for entry in metadata.get("not_implemented") or ():
        if not isinstance(entry, dict) or not ({"device", "test"} & set(entry)):
            continue
        device, test = entry.get("device"), entry.get("test")
        if test is not None and test != experiment.test:
            continue
        if device is not None and device not in (experiment.accelerator, experiment.accelerator_model):
            continue
        what = f"{test} on {device}" if test and device else test or f"every test on {device}"
        return f"the model's metadata.yaml marks {what} as not implemented"
    return None


def declared_unsupported(cls, test: str) -> Optional[str]:
    """The message of a `train`/`eval` method that does nothing but raise (or return) NotImplementedError."""
    method = cls.__dict__.get(test)
    if method is None:
        for base in cls.__mro__[1:]:
            if test in base.__dict__:
                method = base.__dict__[test]
                break
    if method is None:
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    except (OSError, TypeError, SyntaxError):
        return None
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # a docstring
    if len(body) != 1 or not isinstance(body[0], (ast.Raise, ast.Return)):
        return None
    value = body[0].exc if isinstance(body[0], ast.Raise) else body[0].value
    call = value if isinstance(value, ast.Call) else None
    target = call.func if call else value
    if not (isinstance(target, ast.Name) and target.id == "NotImplementedError"):
        return None
    if call and call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return f"{test} is not implemented by this TorchBench model: {call.args[0].value}"
    return f"{test} is not implemented by this TorchBench model"
