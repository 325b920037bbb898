"""--compile-cache=warm-start (the dynamo harness's --warm-start-latency): a config's two children, one after the
other, on one compile cache directory of their own. The cold one compiles into it empty; the warm one, a fresh
process with the same command and environment, compiles from what the cold one left on disk (Inductor's FX graph
and AOTAutograd caches, the compiled kernels, Triton's), as a user's second run does. The record is the warm
child's, with both first runs in its `warm_start` (benchmarks/features/compile_options/__init__.py).

Both halves are spawned, never forked from a fork server: a user's second run is a new interpreter, and a spawned
one has read nothing before this pair's cache variables (a server's preloads import Inductor and Triton under the
server's environment). Both run in one job, on its cores, one after the other, so a pair never shares its cache with
another config, under --jobs or on a Ray node (the directory is the node's). The parent writes one record when the
pair has ended: a sweep stopped between the halves has no record of the config, and resume runs both again.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from typing import Callable, Optional

from benchmarks import features
from benchmarks.config.compile_cache_dirs import CACHE_VARIABLES, WARM_START_HALVES, cache_environment
from benchmarks.config.process_env import WARM_START_VARIABLE
from benchmarks.plumbing import disk_writes, scratch_dirs
from benchmarks.results import dynamo_stats, metric_words
from benchmarks.results.measurement import Measurement
from benchmarks.results.records import RecordStatus

COLD, WARM = WARM_START_HALVES
# A record's environment.launch_reason where the sweep would have forked the config (--launch=fork).
LAUNCH_REASON = ("compile_cache warm-start: both children spawned, each a fresh interpreter that reads its cache "
                 "directories from its own environment, as a user's first and second runs are")

# --dry-run's line under a warm start's command: it runs twice.
DRY_RUN_NOTE = (f"warm start: run twice on one new cache directory ({' and '.join(CACHE_VARIABLES)}), "
                f"{WARM_START_VARIABLE}=cold with --repeat=1, then {WARM_START_VARIABLE}=warm")


def is_pair(experiment) -> bool:
    """The config runs as a warm start's two children (a declaration's `runs_twice`: compile_options')."""
    return any(runs_twice(experiment) for runs_twice in features.declared("runs_twice"))


def run_pair(request, run_one: Callable):
    """The pair's result (launcher.ChildResult): the cold child's where it did not end with an ok record (the warm
    one is not run), else the warm child's; either way with `warm_start` (what the record's key says) and the
    seconds of both. `run_one(request)` runs one child (launcher's spawn). The cache directory is removed at the end,
    whatever happened (a killed parent's is collected by the next sweep: scratch_dirs)."""
    root = scratch_dirs.owned_dir("compile-cache")
    try:
        env = {**request.env, **cache_environment(root)}
        cold = run_one(_half(request, env, COLD))
        if not _ended_ok(cold):
            failed = {"failed_half": COLD, "cold_run_seconds": round(cold.seconds, 3)}
            return dataclasses.replace(cold, warm_start=failed)
        warm = run_one(_half(request, env, WARM))
        return dataclasses.replace(warm, seconds=cold.seconds + warm.seconds,
                                   warm_start=summary(cold.record, warm.record, cold.seconds, warm.seconds))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _half(request, env: dict, half: str):
    """One child of the pair: the config's own command (the cold one times a single repeat, as the harness's first
    run does: only its first run is kept), its half named in the environment, a line in the config's log first."""
    what = "an empty compile cache" if half == COLD else "the compile cache the cold child filled"
    try:
        os.makedirs(os.path.dirname(request.log_path), exist_ok=True)
    except OSError as exc:
        raise disk_writes.WriteFailed.of(request.log_path, exc) from None
    disk_writes.append_bytes(request.log_path, f"[warm start] the {half} child, on {what}\n".encode())
    argv = request.argv + (["--repeat=1"] if half == COLD else [])
    return dataclasses.replace(request, argv=argv, env={**env, WARM_START_VARIABLE: half}, warm_start=False)


def _ended_ok(result) -> bool:
    return (result.record is not None and result.record.get("status") == RecordStatus.OK
            and not result.write_failed)


def first_run(record: Optional[dict]) -> Optional[float]:
    """A child's first run, compilation included (the metric word `compile`)."""
    return metric_words.compile_seconds(Measurement(record))[0] if record is not None else None


def summary(cold: dict, warm: Optional[dict], cold_seconds: float, warm_seconds: float) -> dict:
    """The record's `warm_start`: each child's first run (seconds, compilation included) and the saving, the cold
    child's compile seconds by phase (the warm one's are the record's dynamo_stats) and each child's wall time;
    `failed_half` where the warm child did not end well (the record is its failure)."""
    warm_ok = warm is not None and warm.get("status") == RecordStatus.OK
    out = {"cold_first_run_seconds": first_run(cold), "warm_first_run_seconds": first_run(warm) if warm_ok else None}
    if out["cold_first_run_seconds"] is not None and out["warm_first_run_seconds"] is not None:
        out["saving_seconds"] = out["cold_first_run_seconds"] - out["warm_first_run_seconds"]
    phases = (cold.get("dynamo_stats") or {}).get(dynamo_stats.PHASES)
    if phases:
        out["cold_compile_seconds_by_phase"] = phases
    out.update(cold_run_seconds=round(cold_seconds, 3), warm_run_seconds=round(warm_seconds, 3))
    if not warm_ok:
        out["failed_half"] = WARM
    return out
