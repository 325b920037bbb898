"""Resume and order: what the results file already holds of a sweep's plan (by fingerprint), the entries still to run
round by round, the longest first; --no-resume's backup of the earlier file. Pure Python, as the plan."""

from __future__ import annotations

import dataclasses
import logging
import os
import statistics
import time
from typing import Optional

from benchmarks.results import records

log = logging.getLogger("benchmarks.runner.resume")


@dataclasses.dataclass
class Earlier:
    """What the results file already holds: fingerprints not to run again, and each config's last run time."""

    done: set
    records: int
    run_seconds: dict  # a config's fingerprint (its first round's) -> the child's wall time in its latest record


def load_earlier(path: str, retry_failed: bool) -> Earlier:
    if not os.path.exists(path):
        return Earlier(set(), 0, {})
    latest, seconds = {}, {}
    count = 0
    # One record at a time (a results file may hold millions; only these three facts are kept of each).
    fingerprint_of = records.RecordFingerprints()
    for record in records.stream_records(path):
        key = fingerprint_of(record)
        if key is None:
            continue
        latest[key] = records.record_status(record)
        count += 1
        run_seconds = record.get("run_seconds")
        if isinstance(run_seconds, (int, float)) and run_seconds > 0:
            first = key if not records.record_round(record) else records.record_fingerprint(dict(record, round=0))
            seconds[first] = float(run_seconds)
    if retry_failed:
        done = {k for k, status in latest.items() if status not in records.FAILED_STATUSES}
    else:
        done = set(latest)
    return Earlier(done, count, seconds)


def in_model_order(plan: Plan) -> list:
    """The plan's configs and its skips as (config, skip reason) pairs, model by model (the outer loop, as
    upstream), each model's in plan order."""
    planned = [(c, None) for c in plan.configs] + [(c, reason) for c, reason in plan.skipped]
    position = {id(model): index for index, model in enumerate(plan.models)}  # configs hold these very dicts
    planned.sort(key=lambda item: position[id(item[0].model)])
    return planned


def plan_rounds(plan: list, rounds: int, done: set) -> list:
    """The (config, skip reason) entries still to run: every config of `plan` once per round, round by round
    (all configs once, then all again: slow drift of the machine spreads over every config), each round its
    own fingerprint, so a resumed sweep runs only the rounds it lacks. A skip is written once (round 0)."""
    entries = ((config if not index else dataclasses.replace(config, round=index), reason)
               for index in range(rounds) for config, reason in plan if not (reason and index))
    return [(entry, reason) for entry, reason in entries if entry.fingerprint not in done]


def longest_first(todo: list, run_seconds: dict) -> list:
    """`todo` ((Config, skip reason) pairs) with the configs whose earlier runs took longest first, within each
    round (rounds stay interleaved), so that the sweep's tail is short; a config never run before counts as
    the median of those that were. Without any earlier run time, plan order is kept (the sort is stable)."""
    seconds = lambda config: run_seconds.get(config.first_round.fingerprint)  # noqa: E731
    known = [s for s in (seconds(c) for c, _ in todo) if s is not None]
    if not known:
        return list(todo)
    typical = statistics.median(known)
    return sorted(todo, key=lambda item: (item[0].round, -(seconds(item[0]) or typical)))


def left_to_run(plan, results_path: str, options, timed) -> list:
    """The plan's (config, skip reason) entries that `results_path` does not hold yet, longest first (--no-resume:
    the earlier file backed up first, all of them). `timed(step)`: as runner/sweep.run_locked's."""
    if options.no_resume:
        backup = back_up(results_path)
        if backup:
            log.info("--no-resume: the earlier results were kept as %s", backup)
    with timed("resume"):
        earlier = load_earlier(results_path, options.retry_failed)
        left = plan_rounds(in_model_order(plan), options.rounds, earlier.done)
    for experiment, reason in plan.dropped:
        log.info("dropped %s: %s", experiment.describe(), reason)
    with timed("longest-first"):
        return longest_first(left, earlier.run_seconds)


def back_up(path: str) -> Optional[str]:
    if not os.path.exists(path):
        return None
    backup = f"{path}.bak-{time.strftime('%Y%m%d-%H%M%S')}"
    suffix = 1
    while os.path.exists(backup):
        backup = f"{path}.bak-{time.strftime('%Y%m%d-%H%M%S')}-{suffix}"
        suffix += 1
    os.rename(path, backup)
    return backup
