"""The command that reruns one config by itself: experiment_runner.py with its --model-config and --experiment-config
(the config as it was asked for, so the rerun's fingerprint is the original's) and the child's flags of the sweep
(repeats, --verify, diagnostics, ...), into a fresh results directory of its own under the sweep's. Every record
carries it (`rerun`); the end-of-sweep failure list, aggregate's page, compare's changes and history's config page
show it. It is one shell line (cli_support.command_line: shlex-quoted, safe to paste whatever the model is named);
a rerun that is a sweep selects its model alone, case and all (`exact_filter`), where its suite finds it
(`location_flags`). No torch."""

from __future__ import annotations

import json
import os
import re
import sys

from benchmarks.config import axes, compile_options
from benchmarks.plumbing import machine_facts
from benchmarks.plumbing.cli_support import command_line
from benchmarks.plumbing.safe_paths import safe_name

# Child flags a rerun does not take from the sweep: where it writes (a directory of its own), and the sweep's time
# (a rerun is a run of its own).
NOT_CARRIED = ("--output-dirname", "--output-basename", "--timestamp")
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
    out = fresh_dir(options.output_dirname, model, experiment.slug())
    if experiment.dynamo and experiment.compile_cache == compile_options.WARM_START:
        located = any(flag.split("=", 1)[0] in LOCATION_FLAGS for flag in flags)
        argv = entry_argv() + sweep_flags(model, experiment.to_dict(), located) + flags
    else:
        argv = single_config_argv(flags, model, experiment.to_dict())
    return command_line(argv + [f"--output-dirname={out}"])
