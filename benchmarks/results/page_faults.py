"""Page faults in the timed runs: when a config's are heavy enough to say so in its record (`warnings`) and its
log. Pure Python; the child counts them (child/measured_loop.measure: metrics.minor_faults_per_iter).

A minor fault costs roughly 0.5-1 us here (the trap and a zeroed 4 KiB page), and an allocator that returns
memory to the system (munmap, a trimmed heap) pays it again on every iteration: issue #30's compiled model ran
3.5x slower for it. Heavy means both: at least FAULTS_PER_ITER faults per iteration (a whole MiB of pages
first touched again each time, not a few stray ones) and at least FAULTS_PER_MS per millisecond of the iteration
(at about 1 us each, 5% of the time or more spent faulting; a loaded machine stretches the time and lowers this
rate), in every timed run: the fewest faults of any run against the median time. One timed run (--repeat=1) is
never enough to say so: a page touched for the first time after warm-up looks the same once.
"""

from __future__ import annotations

import statistics
from typing import Optional

FAULTS_PER_ITER = 256
FAULTS_PER_MS = 50


def heavy_faults_warning(faults_per_iter: list, seconds_per_iter: list) -> Optional[str]:
    """One line when the timed runs fault heavily (module docstring), else None."""
    if not faults_per_iter or not seconds_per_iter or len(faults_per_iter) < 2:
        return None
    faults = min(faults_per_iter)
    milliseconds = statistics.median(seconds_per_iter) * 1e3
    if faults < FAULTS_PER_ITER or milliseconds <= 0 or faults / milliseconds < FAULTS_PER_MS:
        return None
    return (f"page faults: {faults:.0f} minor faults or more per iteration ({faults / milliseconds:.0f} per ms) in the timed "
            f"runs: the allocator gives memory back to the system and takes it again every iteration; the time "
            f"depends on the allocator (--allocator)")
