"""Which changes the site calls real: history's own change points (detection.py: E-divisive means with its
permutation test, at `history detect`'s alpha, permutations, fewest runs a side and smallest change) over the
newest `window` runs of a series, a summary line's number or a config's per-iteration time.

A change between the baseline and the newest run is significant when a change point falls between them
(after the baseline, at or before the newest run); its p-value is the change point's. The window bounds the
cost (a year of nightly runs is 365 points; the test is quadratic in them) and each result is cached by the
series' values, so a site rebuilt without new runs tests nothing again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import Optional

import numpy as np

from benchmarks.history import changes, detection

DEFAULT_WINDOW = 60


@dataclasses.dataclass(frozen=True)
class Shift:
    before: int  # grid row of the last run before the change
    after: int  # grid row of the first run after it
    p_value: float
    ratio: float  # the median after / before (log series), or after - before (others)

    def as_list(self) -> list:
        return [self.before, self.after, self.p_value, self.ratio]


class Detector:
    """Change points of series, cached by their values (the cache is a dict kept in the site's state)."""

    def __init__(self, settings: changes.Settings, window: int, cache: Optional[dict] = None):
        self.settings, self.window = settings, window
        self.cache = {} if cache is None else cache
        self.tested = 0  # series actually tested (not found in the cache)
        self.used: set = set()

    def shifts(self, values: np.ndarray, log: bool) -> list:
        """The changes of a (runs,) series (nan: no value in that run), oldest first."""
        rows = np.flatnonzero(np.isfinite(values))[-self.window:]
        series = values[rows]
        if log:
            if np.any(series <= 0):
                log = False
            else:
                series = np.log(series)
        if len(series) < 2 * self.settings.min_size:
            return []
        s = self.settings
        key = hashlib.sha256(repr((s.alpha, s.permutations, s.min_size, s.min_change, s.seed, log)).encode()
                             + rows.tobytes() + series.tobytes()).hexdigest()[:32]
        self.used.add(key)
        cached = self.cache.get(key)
        present = set(rows.tolist())  # a cached change names two of these runs: the state file is only data
        if cached is None or any(item[0] not in present or item[1] not in present for item in cached):
            self.tested += 1
            found = detection.change_points(series, s.alpha, s.permutations, s.min_size, s.seed,
                                            s.min_change if log else 0.0)
            bounds = [0] + [c.index for c in found] + [len(series)]
            out = []
            for number, point in enumerate(found, start=1):
                left = series[bounds[number - 1]:point.index]
                right = series[point.index:bounds[number + 1]]
                step = float(np.median(right) - np.median(left))
                out.append([int(rows[point.index - 1]), int(rows[point.index]), point.p_value,
                            math.exp(step) if log else step])
            self.cache[key] = out
        return [Shift(*item) for item in self.cache[key]]


def untested(values: np.ndarray, settings: changes.Settings, window: int) -> Optional[str]:
    """"not tested: N runs, M needed" for a series too short for the test to find any change (detection.can_decide)
    in its newest `window` runs, else None: where no test could run, the site never says "no change"."""
    runs = min(int(np.count_nonzero(np.isfinite(values))), window)
    if detection.can_decide(runs, settings.alpha, settings.min_size):
        return None
    return changes.not_tested_text(runs, settings.alpha, settings.min_size)


def between(shifts: list, baseline: int, newest: int) -> Optional[Shift]:
    """The change (smallest p) whose first run after falls in (baseline, newest], or None."""
    found = [s for s in shifts if baseline < s.after <= newest]
    return min(found, key=lambda s: s.p_value) if found else None
