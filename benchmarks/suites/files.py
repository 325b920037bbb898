"""`files`: the user's own models, one Python file each (openxla-benchmark's create_model, MLAgility's corpora).

A model file defines `create_model(batch_size: int, **params)` returning `(module, example_inputs)`,
and optionally `BATCH_SIZE` (its default batch size), `TOLERANCE` (verification_code's limit, config/tolerances.py) and a first line
`# labels: key::v1,v2 key2::v` (MLAgility's form). The model is named after the file.

Listing reads the files as text (the parent runs no user code); the child imports the one file it runs.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import logging
import os
import sys
from typing import Optional

from benchmarks.config.flags import BOTH, Group
from benchmarks.plumbing import value_limits
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.suites import BenchmarkModel, Suite, model_config

log = logging.getLogger("benchmarks.suites.files")

ENTRY_POINT = "create_model"
LABELS_PREFIX = "labels:"


class ModelFileError(Exception):
    """A model file that cannot be used (import failure, no create_model, bad return value)."""


# ---------------------------------------------------------------- flags


def model_params_text(text: str) -> str:
    """argparse type: the text must be a JSON object; kept as text so that it forwards as given."""
    problem = params_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def label_filter_text(text: str) -> str:
    key, sep, values = text.partition("::")
    if not sep or not key.strip() or not values.strip():
        raise argparse.ArgumentTypeError(f"expected key::value (or key::v1,v2), not {text!r}")
    return text


def params_problem(text: str) -> str:
    """'' if `text` is a JSON object, else why not."""
    try:  # held to the record's limits: the params are part of each record's model config
        params = value_limits.checked_json(text)
    except ValueError as exc:
        return str(exc)
    if not isinstance(params, dict):
        return f"must be a JSON object such as '{{\"seq_len\": 128}}', not {text!r}"
    return ""


def parse_model_params(text: Optional[str]) -> Optional[dict]:
    """--model-params -> dict (None when not given); bad JSON is a UsageError."""
    if text is None:
        return None
    problem = params_problem(text)
    if problem:
        raise UsageError(f"--model-params {problem}")
    return value_limits.checked_json(text)


def models_with_params(suite_name: str, names, flags, check_params) -> list:
    """The model configs of a suite whose models all take the same --model-params (image sizes, classes ...):
    `check_params(params) -> problem or None`; a problem is a UsageError."""
    params = parse_model_params(getattr(flags, "model_params", None))
    problem = check_params(params or {})
    if problem:
        raise UsageError(problem)
    return [model_config(suite_name, name, params=params or None) for name in names]


def size_limit_reason(model_config: dict, limits: dict) -> Optional[str]:
    """Why a model can't take the requested --model-params image_size (limits: name -> (accepts(size), why)),
    or None."""
    size = (model_config.get("params") or {}).get("image_size")
    limit = limits.get(model_config["model_name"])
    if size and limit and not limit[0](size):
        return f"{limit[1]}, not {size}"
    return None


def parse_label_filters(texts: list) -> list:
    """['key::v1,v2', ...] -> [(key, {v1, v2}), ...]; a model matches when every key has one of the values."""
    filters = []
    for text in texts or ():
        key, _, values = text.partition("::")
        filters.append((key.strip(), {v.strip() for v in values.split(",") if v.strip()}))
    return filters


def labels_match(labels: dict, filters: list) -> bool:
    return all(set(labels.get(key, ())) & wanted for key, wanted in filters)


# ---------------------------------------------------------------- reading files without running them


def parse_labels_line(line: str) -> dict:
    """'# labels: name::resnet author::torchvision,me' -> {'name': ['resnet'], 'author': ['torchvision', 'me']}."""
    text = line.strip()
    if not text.startswith("#"):
        return {}
    text = text.lstrip("#").strip()
    if not text.lower().startswith(LABELS_PREFIX):
        return {}
    labels: dict = {}
    for token in text[len(LABELS_PREFIX):].split():
        key, sep, values = token.partition("::")
        if sep and key:
            labels.setdefault(key, []).extend(v for v in values.split(",") if v)
    return labels


def read_labels(source: str) -> dict:
    lines = source.splitlines()
    if lines and lines[0].startswith("#!"):  # a shebang may come first
        lines = lines[1:]
    return parse_labels_line(lines[0]) if lines else {}


def binds_name(body: list, name: str) -> bool:
    """True if these statements bind `name` at module level (def, assignment or import; also under if/try)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" or (alias.asname or alias.name) == name for alias in node.names):
                return True
        for field in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.If, ast.Try, ast.With)) and binds_name(getattr(node, field, []), name):
                return True
        if isinstance(node, ast.Try) and any(binds_name(h.body, name) for h in node.handlers):
            return True
    return False


def inspect_file(path: str) -> tuple:
    """(labels, problem) for a candidate model file; problem is None, 'no-entry' or 'unparsable: ...'."""
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"unreadable: {exc}"
    labels = read_labels(source)
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return labels, f"unparsable: {exc.msg} (line {exc.lineno})"
    return labels, None if binds_name(tree.body, ENTRY_POINT) else "no-entry"


def candidate_files(flags, explicit_flag: str = "--model-file") -> list:
    """(path, name if the stem is taken, explicit) for every *.py under each --search-dir (recursively, sorted),
    then each file named by `explicit_flag` (--model-file; the scripts suite's --script); absolute and unique."""
    found = []
    for directory in getattr(flags, "search_dir", None) or ():
        if not os.path.isdir(directory):
            raise UsageError(f"--search-dir {directory}: no such directory")
        for root, dirs, names in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            for name in sorted(names):
                if name.endswith(".py") and name != "__init__.py":
                    path = os.path.join(root, name)
                    found.append((path, os.path.splitext(os.path.relpath(path, directory))[0], False))
    for path in getattr(flags, explicit_flag.lstrip("-").replace("-", "_"), None) or ():
        if not os.path.isfile(path):
            raise UsageError(f"{explicit_flag} {path}: no such file")
        stem = os.path.splitext(os.path.basename(path))[0]
        found.append((path, f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}/{stem}", True))
    seen, unique = set(), []
    for path, long_name, explicit in found:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            unique.append((os.path.abspath(path), long_name.replace(os.sep, "/"), explicit))
    return unique


def script_names(candidates: list) -> list:
    """The file part of each model name of the scripts suite (suites/scripts.py): the script's file name; scripts
    that share one are told apart by their folders (sub/run.py), as model_names does for model files."""
    bases = [os.path.basename(path) for path, _, _ in candidates]
    return [base if bases.count(base) == 1 else long_name + ".py"
            for base, (_, long_name, _) in zip(bases, candidates)]


def model_names(files: list) -> list:
    """Named after the file; files that share a name are told apart by their folders (more/tiny_mlp)."""
    stems = [os.path.splitext(os.path.basename(path))[0] for path, _ in files]
    names = [stem if stems.count(stem) == 1 else long_name for stem, (_, long_name) in zip(stems, files)]
    for index, name in enumerate(names):  # still the same (one name in two search dirs): number them
        if names.count(name) > 1:
            names[index] = f"{name}-{names[:index + 1].count(name)}"
    return names


# ---------------------------------------------------------------- the suite


SUITE_NAME = "files"
DESCRIPTION = "your own model files, and helpers the image suites share"
ORDER = 50


class FilesSuite(Suite):
    name = SUITE_NAME

    _group = Group("model files (--suite-name=files) and model parameters")
    flags = (
        _group.flag("--search-dir", BOTH, "every *.py under DIR defining create_model(batch_size, **params) is a "
                    "model (repeatable); for --suite-name=scripts, every *.py under DIR that runs as a script",
                    repeatable=True, metavar="DIR"),
        _group.flag("--model-file", BOTH, "one model file (repeatable)", repeatable=True, metavar="FILE"),
        _group.flag("--labels", BOTH, "keep model files (or scripts) whose '# labels:' line has this label "
                    "(repeatable: all must match; KEY::V1,V2 matches either value)", repeatable=True, type=label_filter_text,
                    metavar="KEY::VALUE"),
        _group.flag("--model-params", BOTH, "parameters for the model builder, part of each model config and its "
                    "fingerprint: create_model(batch_size, **params) for files; image_size and num_classes for "
                    "torchvision; config fields, seq_len and dropout for huggingface; image_size for timm",
                    type=model_params_text, metavar="JSON"),
    )

    def list_models(self, flags):
        params = parse_model_params(getattr(flags, "model_params", None))
        filters = parse_label_filters(getattr(flags, "labels", None))
        candidates = candidate_files(flags)
        if not candidates:
            if not (getattr(flags, "search_dir", None) or getattr(flags, "model_file", None)):
                raise UsageError("--suite-name=files needs --search-dir DIR or --model-file FILE")
            log.warning("no *.py model file under %s", ", ".join(flags.search_dir))
        kept = []
        for path, long_name, explicit in candidates:
            labels, problem = inspect_file(path)
            if problem == "no-entry" and not explicit:
                log.warning("%s: defines no %s(batch_size, **params); not a model file, skipped", path, ENTRY_POINT)
                continue
            if problem and problem != "no-entry":
                # It is still listed: its child fails to import it and writes a record that says why.
                log.warning("%s: %s", path, problem)
            if not labels_match(labels, filters):
                continue
            kept.append((path, long_name, labels))
        names = model_names([(path, long_name) for path, long_name, _ in kept])
        return [model_config(self.name, name, path=path, params=params or None, labels=labels or None)
                for name, (path, _, labels) in zip(names, kept)]

    def build(self, model_config, experiment, device, flags):
        path = model_config.get("path")
        if not path:
            raise ModelFileError(f"model config of {model_config.get('model_name')!r} has no \"path\"")
        module = import_model_file(path)
        create = getattr(module, ENTRY_POINT, None)
        if not callable(create):
            raise ModelFileError(f"{path} defines no {ENTRY_POINT}(batch_size, **params)")
        default = getattr(module, "BATCH_SIZE", 1)
        if not isinstance(default, int) or isinstance(default, bool) or default < 1:
            raise ModelFileError(f"{path}: BATCH_SIZE must be a positive integer, not {default!r}")
        batch_size = experiment.batch_size or default
        params = model_config.get("params") or {}
        result = create(batch_size, **params)
        net, args, kwargs = split_result(result, path)
        from benchmarks.suites import tensor_trees

        tolerance = getattr(module, "TOLERANCE", None)
        return BenchmarkModel(module=net.to(device), example_inputs=tensor_trees.move(args, device),
                              example_kwargs=tensor_trees.move(kwargs, device), batch_size=batch_size,
                              tolerance=float(tolerance) if tolerance is not None else None)


def import_model_file(path: str):
    """Import one user file as its own module (its folder first on sys.path, for sibling imports)."""
    name = "benchmarks_user_model_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelFileError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise ModelFileError(f"cannot import {path}: {type(exc).__name__}: {exc}") from exc
    return module


def split_result(result, path: str) -> tuple:
    """create_model's (module, example_inputs) -> (module, args tuple, kwargs dict)."""
    import torch

    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise ModelFileError(f"{path}: {ENTRY_POINT} must return (module, example_inputs), "
                             f"not {type(result).__name__}")
    net, inputs = result
    if not isinstance(net, torch.nn.Module):
        raise ModelFileError(f"{path}: {ENTRY_POINT} returned a {type(net).__name__}, not a torch.nn.Module")
    if isinstance(inputs, dict):
        return net, (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return net, tuple(inputs), {}
    return net, (inputs,), {}


SUITE = FilesSuite()
