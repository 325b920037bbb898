"""One config in one process: load the model, prepare the backend, warm up, time, hand back one record.

main is the route, a stage a call: the flags turned into the config to run (config_from_flags), this process made
ready for it (child/process_start.py), the run phase by phase (child/config_run.py), and the record's way out
(child/hand_back.py: to the parent over --record-fd, or, for a config run by hand, appended to the results file).
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import threading
import time

from benchmarks.child import hand_back, process_start
from benchmarks.child.config_run import run_config
from benchmarks.config import experiment_config
from benchmarks.config.process_env import PARENT_PID_VARIABLE, STACKS_SIGNAL
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing import disk_writes, value_limits
from benchmarks.plumbing.cli_support import EXIT_USAGE, UsageError
from benchmarks.suites import suite_names


def main(options: RunOptions) -> int:
    """One config in this process, from the flags (UsageError: bad --model-config/--experiment-config)."""
    model_config, experiment = config_from_flags(options)
    started = process_start.start(options, model_config, experiment)
    if options.record_fd is not None:
        die_with_parent()
        faulthandler.register(STACKS_SIGNAL, all_threads=True)  # a timeout's last word, into its log (launcher)
    channel = hand_back.Channel(options.record_fd)
    try:
        record = run_config(options, model_config, experiment, channel)
    except Exception as exc:
        if not disk_writes.disk_full(exc):
            raise
        refused = disk_writes.describe_failure(exc, None)  # a write of its log has no path here: the parent's
        if options.record_fd is not None:
            channel.send_write_failed(refused)
            return EXIT_USAGE
        raise disk_writes.from_description({**refused, "path": refused["path"] or "this process's output"}) from None
    return hand_back.hand_back(options, model_config, experiment, record, started, channel)


def config_from_flags(options: RunOptions) -> tuple:
    """(model_config dict, ExperimentConfig) from --model-config and --experiment-config, or UsageError."""
    if (options.model_config is None) != (options.experiment_config is None):
        raise UsageError("--model-config and --experiment-config go together")
    try:  # held to the record's limits: a value no record could keep is refused here, not once it is written
        model = value_limits.checked_json(options.model_config)
    except ValueError as exc:
        raise UsageError(f"--model-config {exc}")
    try:
        experiment_data = value_limits.checked_json(options.experiment_config)
    except ValueError as exc:
        raise UsageError(f"--experiment-config {exc}")
    if not isinstance(model, dict) or not model.get("model_name"):
        raise UsageError('--model-config must be a JSON object with "model_name" (and "suite_name")')
    suite = model.setdefault("suite_name", options.suite_name)
    if suite not in suite_names():
        raise UsageError(f"--model-config names suite {suite!r}; known suites: {', '.join(suite_names())}")
    try:
        experiment = experiment_config.ExperimentConfig.from_dict(experiment_data)
    except experiment_config.ConfigError as exc:
        raise UsageError(f"--experiment-config: {exc}")
    return model, experiment


def die_with_parent() -> None:
    """If the parent dies (even by SIGKILL), take this child's whole process group down too."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    # The launcher names itself: a parent that died before this line (PDEATHSIG set too late, getppid()
    # already the reaper's) is caught at once instead of never.
    named = os.environ.get(PARENT_PID_VARIABLE, "")
    parent = int(named) if named.isdigit() else os.getppid()
    if os.getppid() != parent:
        os.killpg(os.getpgrp(), signal.SIGKILL)

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
