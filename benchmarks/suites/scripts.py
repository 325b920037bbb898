"""`scripts`: the user's unmodified scripts as models (MLAgility's benchit): every top-level torch.nn.Module a
script calls is a model, benchmarked on the exact inputs of its first call.

Listing (parent, no torch) asks suites/script_discovery.py which models each script calls (a discovery child,
cached by the script's content and --script-args); each becomes a config named `script.py::NAME`. A script
that calls none, crashes or times out before its first call is one config whose record says so. The
benchmark's child runs the script again and stops it at its model's first call (suites/script_capture.py).
docs/runner.md, "Scripts".

The design:

`suites/scripts.py` lists a script's models by asking `script_discovery.discover`: a cached answer (`<output
dir>/script-discovery/`, keyed by the script's content, `--script-args`, the cache format and the installed torch's
version, read from its package metadata without importing it; a crashed one is never served), or a discovery child
(`python -m benchmarks.suites.script_capture SPEC`, its own process group, output to a log) that runs the script to
its end while `script_capture.Interceptor` patches `torch.nn.Module.__call__`: a thread-local depth tells a
top-level call from a nested one, the first top-level call of each module names it (the caller's variable, else its
class) and is written to a partial result file at once, so a crash or a kill keeps what was found. The parent times
the script from that file's first write (`--script-timeout`), not from the child's start. The benchmark child's
`build` runs the script again through the same interceptor and stops it at the wanted name (`capture`, a
BaseException), so discovery and build name models by one rule. The script runs in a fresh module that is `__main__`
while it runs and is registered under a name of its own afterwards (dynamo's guards import a function's module by
its globals' `__name__`). A script without a model is one config carrying `script_problem` (`no_model`: the parent's
skip; `crash`, `timeout`: `build` raises `ScriptCrashed`/`ScriptTimedOut` with the cached message, without running
the script again). `Suite.dry_run_lines` is how a suite adds lines to `--dry-run`.
"""

from __future__ import annotations

import argparse
import ast
import logging
import shlex
from typing import Optional

from benchmarks.config.flags import PARENT, Group
from benchmarks.plumbing.cli_support import UsageError, positive_float
from benchmarks.plumbing.safe_paths import PathEscapes
from benchmarks.suites import BenchmarkModel, Suite, model_config
from benchmarks.suites import files, script_discovery

log = logging.getLogger("benchmarks.suites.scripts")

BATCH_SIZE_REASON = "a script sets its own batch size: pass it as a script argument (--script-args='--batch_size 8')"


class ScriptCrashed(Exception):
    """Discovery saw the script crash before it called any model."""


class ScriptTimedOut(Exception):
    """Discovery killed the script (--script-timeout) before it called any model."""


def script_args_text(text: str) -> str:
    """argparse type: the text must split as a shell command line would (it is the script's sys.argv[1:])."""
    try:
        shlex.split(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"cannot split {text!r} into arguments: {exc}")
    return text


def runs_as_script(path: str) -> bool:
    """True if the file does something when run: an `if __name__ == "__main__":` block or a top-level call
    (a file of definitions only is a helper, not a script). A file that does not parse counts: its discovery
    records the SyntaxError."""
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return True
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.dump(node.test):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            return True
    return False


SUITE_NAME = "scripts"
DESCRIPTION = "your scripts as models (its design: the module's docstring)"
ORDER = 60


class ScriptsSuite(Suite):
    name = SUITE_NAME

    _group = Group("scripts as models (--suite-name=scripts; also --search-dir and --labels)")
    flags = (
        _group.flag("--script", PARENT, "a script whose every top-level torch.nn.Module call is a model (repeatable)",
                    repeatable=True, metavar="FILE"),
        _group.flag("--script-args", PARENT, "the scripts' command-line arguments, part of each model config and its "
                    "fingerprint (e.g. \"--batch_size 8\")", type=script_args_text, metavar="ARGS"),
        _group.flag("--script-timeout", PARENT, "discovery: a script still running after this many seconds is killed "
                    "(the models it called by then are kept; default 300)", default=300.0, type=positive_float,
                    metavar="SECONDS"),
    )

    def __init__(self):
        self.answers: dict = {}  # (path, args, output dir, timeout) -> Discovery, this process's

    def discoveries(self, flags) -> list:
        """(script label, labels, Discovery) for every script the flags name and the label filters keep."""
        candidates = files.candidate_files(flags, explicit_flag="--script")
        if not (getattr(flags, "script", None) or getattr(flags, "search_dir", None)):
            raise UsageError("--suite-name=scripts needs --script FILE or --search-dir DIR")
        filters = files.parse_label_filters(getattr(flags, "labels", None))
        output_dir = getattr(flags, "output_dirname", None) or "./output/"
        args = getattr(flags, "script_args", None)
        timeout = flags.script_timeout
        found = []
        for (path, _, explicit), label in zip(candidates, files.script_names(candidates)):
            if not explicit and not runs_as_script(path):
                continue
            labels, _ = files.inspect_file(path)
            if not files.labels_match(labels, filters):
                continue
            key = (path, args, output_dir, timeout)
            if key not in self.answers:  # once per process: --dry-run's lines say where listing's answer came from
                try:
                    self.answers[key] = script_discovery.discover(path, args, output_dir, timeout)
                except (OSError, PathEscapes) as exc:  # a link in its folder: nothing written outside
                    raise UsageError(f"cannot discover the models of {path}: {exc}") from None
            discovery = self.answers[key]
            found.append((label, labels, discovery))
        return found

    def list_models(self, flags):
        configs = []
        for label, labels, discovery in self.discoveries(flags):
            common = dict(path=discovery.script, labels=labels or None,
                          params={"script_args": discovery.script_args} if discovery.script_args else None)
            if discovery.problem:
                log.warning("%s: no model to benchmark: %s", label, discovery.summary())
                message = discovery.summary() if discovery.status != script_discovery.CRASHED else discovery.message
                configs.append(model_config(self.name, label, script_problem=discovery.problem,
                                            script_message=(message or "")[:500], **common))
            for found in discovery.models:
                configs.append(model_config(self.name, f"{label}::{found['name']}", script_model=found["name"],
                                            **common))
        return configs

    def dry_run_lines(self, flags) -> list:
        lines = []
        for label, _, discovery in self.discoveries(flags):
            origin = "cached" if discovery.cached else "discovered now"
            args = f" with {discovery.script_args!r}" if discovery.script_args else ""
            lines.append(f"{label}{args}: {len(discovery.models)} model(s), {discovery.summary()} ({origin})")
            lines += [f"  {label}::{m['name']}: {m['class']} called on {m['inputs']}" for m in discovery.models]
        return lines

    def skip_reason(self, model_config, experiment, flags) -> Optional[str]:
        if model_config.get("script_problem") == "no_model":
            return f"{model_config['model_name']} called no torch.nn.Module ({model_config.get('script_message')})"
        if experiment.batch_size is not None:
            return BATCH_SIZE_REASON
        return None

    def build(self, model_config, experiment, device, flags):
        problem = model_config.get("script_problem")
        if problem:
            error = ScriptTimedOut if problem == "timeout" else ScriptCrashed
            raise error(f"{model_config['model_name']} gave no model: {model_config.get('script_message')}")
        from benchmarks.suites import script_capture, tensor_trees

        call = script_capture.capture(model_config["path"], (model_config.get("params") or {}).get("script_args"),
                                      model_config["script_model"])
        return BenchmarkModel(module=call.module.to(device), example_inputs=tensor_trees.move(call.args, device),
                              example_kwargs=tensor_trees.move(call.kwargs, device),
                              batch_size=leading_dimension(call.args, call.kwargs),
                              info={"script_class": type(call.module).__qualname__})


def leading_dimension(args: tuple, kwargs: dict) -> Optional[int]:
    """The batch size a call ran at: the first dimension of its first tensor input (None without one)."""
    for value in list(args) + list(kwargs.values()):
        shape = getattr(value, "shape", None)
        if shape is not None and len(shape):
            return int(shape[0])
    return None


SUITE = ScriptsSuite()
