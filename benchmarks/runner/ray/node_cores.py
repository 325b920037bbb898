"""Cores of one node held by one Ray task of a sweep (--cores-per-job under --executor=ray; docs/parallel.md).

Ray counts CPUs but pins nothing, so each task takes its N cores itself: one lock file per core in a
directory of this machine named after the sweep, locked with flock. The kernel drops a flock when its
holder's file is closed or the holder dies, so cores come free when the child ends, even when the task's
worker is killed, and two tasks of one sweep never share a core however many run at once on the node
(nodes that share a machine, as a simulated cluster's do, share its cores too). Tasks of other sweeps
don't count: they hold their own directory.
"""

from __future__ import annotations

import fcntl
import os
import time
from typing import Optional

from benchmarks.plumbing import scratch_dirs
from benchmarks.plumbing.safe_paths import open_no_follow

WAIT_SECONDS = 0.2  # how often a task looks again for free cores


def lock_dir(sweep_id: str) -> str:
    return scratch_dirs.sweep_dir("cores", sweep_id)  # removed at the sweep's end (ray.task.tidy_node)


class HeldCores:
    """N cores of this machine, held until `release` (or this process's death)."""

    def __init__(self, cores: list, handles: list):
        self.cores = cores
        self._handles = handles

    def release(self) -> None:
        for handle in self._handles:
            handle.close()  # closing drops the flock
        self._handles = []


def _try_take(directory: str, core: int):
    # not through a link (docs/architecture.md, "Paths stay under the output directory"): LinkRefused instead
    fd = open_no_follow(os.path.join(directory, f"core-{core}.lock"), os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    handle = os.fdopen(fd, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return handle
    except OSError:
        handle.close()
        return None


def take(sweep_id: str, count: int, usable: list, deadline: Optional[float] = None) -> Optional[HeldCores]:
    """`count` of the `usable` cores that no other task of the sweep holds, waiting until they are free
    (None when `count` is more than `usable` has, or the deadline passes)."""
    if count > len(usable):
        return None
    directory = lock_dir(sweep_id)
    os.makedirs(directory, exist_ok=True)
    while True:
        handles, cores = [], []
        for core in sorted(usable):
            handle = _try_take(directory, core)
            if handle is not None:
                handles.append(handle)
                cores.append(core)
                if len(cores) == count:
                    return HeldCores(cores, handles)
        HeldCores(cores, handles).release()  # not enough: hold none while waiting (no deadlock between tasks)
        if deadline is not None and time.monotonic() > deadline:
            return None
        time.sleep(WAIT_SECONDS)
