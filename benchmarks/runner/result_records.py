"""The record of each config of a sweep, written by the parent: the child's own record with the sweep's facts
added, or the failure record of a child that handed none back (crash, timeout, oom, lost), or a skip record.
Every one of them says how the config ran (environment.executor) and how long its child took (run_seconds).
"""

from __future__ import annotations

import logging
from typing import Optional

from benchmarks.config import rerun_command
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing import safe_paths, xla_dump_env
from benchmarks.results import accuracy_status, records
from benchmarks.results.record import Record
from benchmarks.results.records import RecordStatus, VerificationCode
from benchmarks.runner import launcher, lock_waits, noise, warm_start

log = logging.getLogger("benchmarks.runner.sweep")


def hung_in(where: Optional[str]) -> str:
    return f", in {where} (every thread's stack is in its log)" if where else ""


def parent_record(config, options: RunOptions, env_facts: dict, status: RecordStatus, error_type: str, message: str,
                  phase: str, log_path: Optional[str] = None,
                  verification_code: VerificationCode = VerificationCode.VERIFIER_DIDNT_RUN) -> dict:
    """A record the parent builds for a config whose child handed none back (or never ran): built as the child
    builds its own (records.config_record), marked failed, and its accuracy settled: the one place the parent
    builds and settles a record (a child's record comes settled)."""
    record = records.config_record(config.model, config.experiment, options, env_facts)
    records.mark_failed(record, status, error_type, message, phase, log_path, verification_code)
    accuracy_status.settle(record)
    return record


def failure_record(config, options: RunOptions, result: launcher.ChildResult, log_path: str, env_facts: dict) -> dict:
    rel_log = safe_paths.relative(log_path, options.output_dirname)

    def failed(status, error_type, message, phase=result.last_phase):
        return parent_record(config, options, env_facts, status, error_type, message, phase, rel_log)
    if result.timed_out:
        record = failed(RecordStatus.TIMEOUT, "Timeout",
                        f"timed out after {options.subprocess_timeout:g} s in phase {result.last_phase}"
                        f"{hung_in(result.hung_in)}{lock_waits.describe(result.lock_waits)}")
        if result.lock_waits:  # another process kept it waiting: the timeout may be that one's
            record["error"]["lock_waits"] = result.lock_waits
        return record
    if result.out_of_memory:
        limit = options.subprocess_memory_limit / 2**30
        return failed(RecordStatus.OOM, "MemoryLimitExceeded",
                      f"resident memory of the process tree passed the limit of {limit:.2f} GiB "
                      f"(reached {result.peak_tree_rss / 2**30:.2f} GiB)")
    if result.start_error:
        return failed(RecordStatus.CRASH, "NotStarted", result.start_error, "setup")
    if result.lost:  # the executor lost the child with its host (a Ray worker or node died)
        return failed(RecordStatus.CRASH, "ExecutorLost", result.lost)
    signal_name = result.signal_name()
    if signal_name:
        why = {"SIGKILL": " (killed from outside, possibly by the kernel's out-of-memory killer)"}.get(signal_name, "")
        return failed(RecordStatus.CRASH, signal_name, f"killed by {signal_name}{why} in phase {result.last_phase}")
    tail = launcher.log_tail(log_path)
    message = f"exited with status {result.returncode} without handing back a record"
    if tail and result.returncode:
        message += f"; last output: {tail}"
    return failed(RecordStatus.CRASH, "NoRecord", message)


def child_record(config, options: RunOptions, result: launcher.ChildResult, log_path: str, env_facts: dict,
                 executor_facts: Optional[dict] = None) -> dict:
    """The record of a config whose child ended (or was lost): its own (built and settled by the child), or a
    failure record (built and settled by parent_record); the sweep's facts added to either."""
    if result.record is None:
        record = failure_record(config, options, result, log_path, env_facts)
        record["artifacts"].update(xla_dump_env.env_artifacts(options, config.model, config.experiment))  # XLA dumps
    else:
        record = Record.adopt(result.record, result.undeclared_by)  # the sweep's facts set on it are checked
        if record.get("error"):
            record["error"]["log"] = safe_paths.relative(log_path, options.output_dirname)
        if result.returncode:
            log.warning("%s: exited with status %s after handing back its record", config.label(), result.returncode)
    # The sweep's facts; the cores are the child's own reading when it handed one back, else the launcher's.
    own_cores = (record.get("environment") or {}).get("cpu_affinity") if result.record is not None else None
    record = noise.annotate(record, env_facts.get("noise"), None if own_cores else result.cpu_affinity)
    record["run_seconds"] = round(result.seconds, 3)
    record["round"] = config.round  # --rounds (0-based): every record the sweep writes has it
    if executor_facts is not None:
        record["environment"]["executor"] = executor_facts
    record["environment"]["launch"] = result.launch  # fork (from a fork server) or spawn (a fresh interpreter)
    reason = result.launch_reason or (warm_start.LAUNCH_REASON if result.warm_start is not None
                                      and options.launch == "fork" else None)
    if reason:  # a config that could have been forked, spawned: why
        record["environment"]["launch_reason"] = reason
    if result.warm_start is not None:  # a warm start's pair: both children's first runs
        record["warm_start"] = result.warm_start
    return with_rerun(with_precision_reason(record, config), config, options)


def with_precision_reason(record: dict, config) -> dict:
    """The plan's reason for the config's precision (the child was handed the precision it resolved to, so
    it can't know the reason itself)."""
    if getattr(config, "precision_reason", None):
        record["precision_reason"] = config.precision_reason
    return record


def with_rerun(record: dict, config, options: RunOptions) -> dict:
    """The record's `rerun`: the command that reruns this config alone, as asked for, in a directory of its own."""
    record["rerun"] = rerun_command.rerun_text(options, config.model, config.experiment)
    return record


def skip_record(config, options: RunOptions, reason: str, env_facts: dict) -> dict:
    record = parent_record(config, options, env_facts, RecordStatus.SKIP, "Unsupported", reason, "setup",
                           verification_code=VerificationCode.VERIFIER_SKIPPED)
    return with_rerun(with_precision_reason(record, config), config, options)


def skipped_record(config, options: RunOptions, reason: str, env_facts: dict, executor_facts: dict) -> dict:
    """A skip record written by the parent: no child ran (run_seconds is null)."""
    record = skip_record(config, options, reason, env_facts)
    record["run_seconds"] = None
    record["round"] = config.round
    record["environment"] = dict(record["environment"], executor=executor_facts, launch=None)  # no child
    return record
