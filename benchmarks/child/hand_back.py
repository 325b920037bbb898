"""The record's way out of the child, in one place. Launched by the parent with --record-fd: phase markers (so the
parent knows where a crash or hang happened) and then the record go to that pipe as JSON lines (Channel), never
mixed with the model's output. Run by hand (no --record-fd): the record, with the command that reruns it, is
appended to the results file through the writer and its check, as a sweep's parent appends it, and one line says
how the config did. Either way the record first says the environment the process ran in (describe_environment)."""

from __future__ import annotations

import json
import logging
import os

from benchmarks.child import feature_methods
from benchmarks.child.process_start import Started
from benchmarks.child.timed_phase import add_warning
from benchmarks.config import rerun_command
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing import safe_paths
from benchmarks.results import accuracy_status, record_check, records
from benchmarks.results.records import RecordStatus

log = logging.getLogger("benchmarks.child.hand_back")


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
        message = {"record": record}
        undeclared_by = getattr(record, "undeclared_by", None)
        if undeclared_by:  # beside the record, never in it: the parent's check names the feature (results/record.py)
            message["undeclared_by"] = dict(undeclared_by)
        self._send(message)
        self._stream.close()
        self._stream = None
        return True


def hand_back(options: RunOptions, model_config: dict, experiment, record: dict, started: Started,
              channel: Channel) -> int:
    """The record, its environment described, to the parent (exit status 0) or, by hand, appended to the results
    file (append_by_hand's exit status)."""
    describe_environment(record, experiment, started)
    if options.record_fd is not None:
        channel.send_record(record)
        return 0
    return append_by_hand(options, model_config, experiment, record)


def describe_environment(record: dict, experiment, started: Started) -> None:
    """The record's environment as this process ran: its cores, its allocator and CPU profile against
    `started.wanted` (the environment the config composes), a warning for each that is not in force."""
    record["environment"]["cpu_affinity"] = started.cpu_affinity
    record["environment"]["allocator"] = feature_methods.provided("allocator_facts")(experiment, started.wanted)
    if record["environment"]["allocator"] is not None and not record["environment"]["allocator"]["applied"]:
        add_warning(record, f"allocator: the policy {experiment.allocator} is not in force: "
                            f"{record['environment']['allocator']['problem']}")
    profile = feature_methods.provided("cpu_profile_facts")(experiment, started.wanted, started.numa,
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
    path = safe_paths.under(options.output_dirname, options.output_basename)
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
