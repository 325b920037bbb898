"""One config in one process: load the model, prepare the backend, warm up, time, hand back one record.

Launched by the parent with --record-fd: the record (and phase markers before it, so the parent knows
where a crash or hang happened) go to that pipe as JSON lines, never mixed with the model's output.
Run by hand (no --record-fd), the record is appended to the results file through the same writer. The run itself,
phase by phase: child/config_run.py.
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import logging
import os
import signal
import threading
import time

from benchmarks.child import feature_methods
from benchmarks.child.config_run import run_config
from benchmarks.child.timed_phase import add_warning
from benchmarks.config import experiment_config, rerun_command
from benchmarks.config.process_env import PARENT_PID_VARIABLE, STACKS_SIGNAL, child_environment
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing import disk_writes, output_paths, torch_support, value_limits
from benchmarks.plumbing.cli_support import EXIT_USAGE, UsageError
from benchmarks.plumbing.cpu_affinity import pin_self
from benchmarks.results import accuracy_status, record_check, records
from benchmarks.results.records import RecordStatus
from benchmarks.suites import suite_names

log = logging.getLogger("benchmarks.child.single_config")


class Channel:
    """The child's end of the hand-back: phase markers, then the record."""

    def __init__(self, fd):
        self.phase = "setup"
        self._stream = None
        if fd is not None:
            os.set_inheritable(fd, False)  # not passed on to the model's own subprocesses
            self._stream = os.fdopen(fd, "w", encoding="utf-8")

    def set_phase(self, phase: str) -> None:
        if phase == self.phase:
            return
        self.phase = phase
        log.debug("phase %s", phase)
        self._send({"phase": phase})

    def _send(self, message: dict) -> None:
        if self._stream is None:
            return
        try:
            self._stream.write(json.dumps(message, ensure_ascii=False) + "\n")
            self._stream.flush()
        except (BrokenPipeError, OSError):
            self._stream = None  # the parent is gone; the watchdog ends this process

    def send_write_failed(self, refused: dict) -> None:
        """The disk refused a write (disk_writes.describe_failure): the parent stops the sweep, blaming nothing."""
        self._send({"write_failed": refused})

    def send_record(self, record: dict) -> bool:
        if self._stream is None:
            return False
        self._send({"record": record})
        self._stream.close()
        self._stream = None
        return True


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


def parse_single_config(options: RunOptions) -> tuple:
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


def environment_by_hand(options: RunOptions, model_config: dict, experiment) -> dict:
    """A config by hand: the environment a sweep's parent would compose for it (process_env.child_environment),
    after the checks that parent makes; this process restarted under it when its allocator policy needs a fresh
    start (it acts only from a process's start). UsageError when the config can't run by hand."""
    problem = (torch_support.environment_problem()  # the sweep's parent checked it for its children
               or feature_methods.provided("by_hand_problem")(experiment))  # two processes, which a sweep starts
    if problem:
        raise UsageError(problem)
    wanted = child_environment(experiment, options, dict(os.environ), model_config)
    feature_methods.provided("restart_under_policy")(wanted)
    return wanted


def main(options: RunOptions) -> int:
    """One config in this process, from the flags (UsageError: bad --model-config/--experiment-config)."""
    model_config, experiment = parse_single_config(options)
    launched_by_parent = options.record_fd is not None
    # The config's environment: a sweep's child started in the one its parent composed for it (runner/sweep.py's
    # make_job); a config by hand composes the same for itself.
    wanted = dict(os.environ) if launched_by_parent else environment_by_hand(options, model_config, experiment)
    cpu_affinity = pin_self(options.noise)  # before any thread starts (--cpu-affinity; also by hand)
    # --cpu-profile=dashboard: numactl's --membind, before the model
    numa = feature_methods.provided("bind_memory")(experiment)
    if launched_by_parent:
        die_with_parent()
        faulthandler.register(STACKS_SIGNAL, all_threads=True)  # a timeout's last word, into its log (launcher)
    else:  # a hand-run config takes the environment the parent would compose (before torch is imported)
        for key, value in wanted.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
    channel = Channel(options.record_fd)
    try:
        record = run_config(options, model_config, experiment, channel)
    except Exception as exc:
        if not disk_writes.disk_full(exc):
            raise
        refused = disk_writes.describe_failure(exc, None)  # a write of its log has no path here: the parent's
        if launched_by_parent:
            channel.send_write_failed(refused)
            return EXIT_USAGE
        raise disk_writes.from_description({**refused, "path": refused["path"] or "this process's output"}) from None
    describe_environment(record, experiment, wanted, cpu_affinity, numa)
    if launched_by_parent:
        channel.send_record(record)
        return 0
    return append_by_hand(options, model_config, experiment, record)


def describe_environment(record: dict, experiment, wanted: dict, cpu_affinity, numa) -> None:
    """The record's environment as this process ran: its cores, its allocator and CPU profile against `wanted`
    (the environment the config composes), a warning for each that is not in force."""
    record["environment"]["cpu_affinity"] = cpu_affinity
    record["environment"]["allocator"] = feature_methods.provided("allocator_facts")(experiment, wanted)
    if record["environment"]["allocator"] is not None and not record["environment"]["allocator"]["applied"]:
        add_warning(record, f"allocator: the policy {experiment.allocator} is not in force: "
                            f"{record['environment']['allocator']['problem']}")
    profile = feature_methods.provided("cpu_profile_facts")(experiment, wanted, numa,
                                                            record["environment"]["allocator"])
    if profile is not None:
        record["environment"]["cpu_profile"] = profile
        if profile["missing"]:
            add_warning(record, f"cpu profile {profile['name']}: not as the dashboard runs: "
                                + "; ".join(profile["missing"]))


def append_by_hand(options: RunOptions, model_config: dict, experiment, record: dict) -> int:
    """A config by hand: its record (with the command that reruns it) appended to the results file, one line
    said; the exit status (1: it failed, or its accuracy check did)."""
    record["rerun"] = rerun_command.rerun_text(options, model_config, experiment)  # a sweep's parent writes its own
    path = output_paths.under(options.output_dirname, options.output_basename)
    with records.ResultsWriter(path) as writer:
        writer.append(record_check.written(record, log))  # the writer's check, as a sweep's parent does
    metrics = record["metrics"]
    if record["status"] == RecordStatus.OK:
        per_iter = sorted(metrics["per_iter_time"])[len(metrics["per_iter_time"]) // 2]
        verdict = record["accuracy"]
        if accuracy_status.failed(verdict):  # ran, but its check failed: the sweep's rule (runner/progress.not_passing)
            log.error("%s: median %.3f ms per iteration; record appended to %s", verdict, per_iter * 1e3, path)
            return 1
        log.info("ok: median %.3f ms per iteration; record appended to %s", per_iter * 1e3, path)
        return 0
    log.error("%s in phase %s: %s; record appended to %s", record["status"], record["error"]["phase"],
              record["error"]["message"], path)
    return 0 if record["status"] == RecordStatus.SKIP else 1
