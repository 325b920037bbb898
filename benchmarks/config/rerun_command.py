"""The command that reruns one config by itself: experiment_runner.py with its --model-config and --experiment-config
(the config as it was asked for, so the rerun's fingerprint is the original's) and the child's flags of the sweep
(repeats, --verify, diagnostics, ...), into a fresh results directory of its own under the sweep's. Every record
carries it (`rerun`); the end-of-sweep failure list, aggregate's page, compare's changes and history's config page
show it. No torch."""

from __future__ import annotations

import json
import os
import shlex
import sys

from benchmarks.plumbing import machine_facts
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


def rerun_text(options, model: dict, experiment) -> str:
    """The record's `rerun`: one shell command line that reruns exactly this config (an ExperimentConfig, as asked
    for) with the sweep's child flags (`options`: RunOptions) in a fresh results directory."""
    flags = [flag for flag in options.child_flags if flag.split("=", 1)[0] not in NOT_CARRIED]
    out = fresh_dir(options.output_dirname, model, experiment.slug())
    return shlex.join(single_config_argv(flags, model, experiment.to_dict()) + [f"--output-dirname={out}"])
