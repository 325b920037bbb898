"""`history detect`'s changes: change points of each config's series, their size with an interval, and
the configs that moved together.

Each run's value is its per-iteration median (log scale, so a change is a ratio); detection.py finds the
change points. A change's size is compare.py's ratio of pooled medians, bootstrapped over the processes
(records) of the runs on either side, up to WINDOW runs and never past a neighbouring change: it holds
the within-run samples and the between-run spread. Changes in different configs whose first run after
falls within `group_runs` runs of each other (in the history's run order) are one group; a group that
moves many models points at the platform, not a model.
"""

from __future__ import annotations

import dataclasses
import math

from benchmarks.history import detection
from benchmarks.results.change_words import Word

WINDOW = 10
# A group moving at least this share of the models measured around it (and two or more) is platform-wide.
PLATFORM_SHARE = 0.5


@dataclasses.dataclass
class Change:
    series: object  # series.Series
    before: object  # the last Point before the change
    after: object  # the first Point after it
    ratio: float  # after / before, per-iteration time
    ci: tuple
    p_value: float
    group: int = 0

    @property
    def direction(self) -> str:
        if self.ci[0] > 1:
            return Word.SLOWER
        if self.ci[1] < 1:
            return Word.FASTER
        return Word.UNSURE


@dataclasses.dataclass
class Group:
    number: int
    changes: list
    platform: bool

    @property
    def models(self) -> set:
        return {c.series.labels["model"] for c in self.changes}


def minimum_text(alpha: float, min_size: int) -> str:
    """The one minimum every output of history states, explained (detection.runs_needed): a change needs this many
    runs in its series; --min-runs only keeps a change that far from either end."""
    return (f"a change needs {detection.runs_needed(alpha, min_size)} runs or more: with fewer, the permutation test "
            f"can't reach p <= {alpha:g}, however large the step (and none is placed within --min-runs {min_size} "
            "runs of either end)")


def not_tested_text(runs: int, alpha: float, min_size: int) -> str:
    """What is said of a series with too few runs for the test (never "no change": no test ran)."""
    return f"not tested: {runs} runs, {detection.runs_needed(alpha, min_size)} needed"


@dataclasses.dataclass
class Shortage:
    """The series too short for any change to be significant at alpha (detection.can_decide), and the runs a
    series needs: what detect says instead of silently finding nothing."""

    alpha: float
    min_size: int
    series: list

    @property
    def runs_needed(self) -> int:
        return detection.runs_needed(self.alpha, self.min_size)

    def not_tested(self, one) -> str:
        return not_tested_text(len(one.measured()), self.alpha, self.min_size)

    def smallest_p(self, one) -> float:
        """The smallest p-value a change in this series could have."""
        return detection.smallest_p(len(one.measured()), self.min_size)


@dataclasses.dataclass(frozen=True)
class Settings:
    alpha: float = detection.DEFAULT_ALPHA
    permutations: int = detection.DEFAULT_PERMUTATIONS
    min_size: int = detection.DEFAULT_MIN_SIZE
    min_change: float = detection.DEFAULT_MIN_CHANGE
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    group_runs: int = 1


def _size(before: list, after: list, settings: Settings) -> tuple:
    """(ratio, interval) of the pooled median of `after`'s processes over `before`'s (compare.py's bootstrap)."""
    import numpy as np

    from benchmarks.compare import bootstrap

    sides = [[np.asarray(p, dtype=np.float64) for point in points for p in point.processes] for points in (before, after)]
    control, treatment = bootstrap.side_draws(sides, settings.resamples, np.random.default_rng(settings.seed))
    found = bootstrap.ratio(control, treatment, settings.confidence)
    return found.value, found.ci


def too_short(one, settings: Settings) -> bool:
    """Whether a series has too few measured runs for any change to reach settings.alpha (detection.py: a
    permutation test of few runs can't give a small p-value, whatever the size of the step)."""
    measured = len(one.measured())  # a config that never ran has no timing to decide on: not "short"
    return measured > 0 and not detection.can_decide(measured, settings.alpha, settings.min_size)


def series_changes(one, settings: Settings) -> list:
    """The changes of one Series (each with its size)."""
    measured = one.measured()
    if len(measured) < 2 * settings.min_size:
        return []
    values = [math.log(point.median) for point in measured]
    found = detection.change_points(values, settings.alpha, settings.permutations, settings.min_size, settings.seed,
                                     settings.min_change)
    bounds = [0] + [c.index for c in found] + [len(measured)]
    out = []
    for number, point in enumerate(found, start=1):
        start = max(bounds[number - 1], point.index - WINDOW)
        end = min(bounds[number + 1], point.index + WINDOW)
        ratio, ci = _size(measured[start:point.index], measured[point.index:end], settings)
        out.append(Change(one, measured[point.index - 1], measured[point.index], ratio, ci, point.p_value))
    return out


def group(changes: list, run_order: dict, all_series: list, settings: Settings) -> list:
    """Number the changes' groups (Change.group) and return the Groups, largest first.

    run_order: run id -> its place in the history (0 = oldest)."""
    ordered = sorted(changes, key=lambda c: run_order[c.after.run_id])
    groups: list = []
    for change in ordered:
        place = run_order[change.after.run_id]
        if groups and place - run_order[groups[-1][-1].after.run_id] <= settings.group_runs:
            groups[-1].append(change)
        else:
            groups.append([change])
    out = []
    for members in groups:
        places = [run_order[c.after.run_id] for c in members]
        low, high = min(places) - 1, max(places)
        # Models with a measurement on both sides of the group's runs: the ones that could have moved.
        around = {s.labels["model"] for s in all_series
                  if any(run_order[p.run_id] <= low for p in s.measured())
                  and any(run_order[p.run_id] >= high for p in s.measured())}
        models = {c.series.labels["model"] for c in members}
        platform = len(models) >= 2 and len(models) >= PLATFORM_SHARE * max(1, len(around))
        out.append(Group(0, members, platform))
    out.sort(key=lambda g: (-len(g.changes), run_order[g.changes[0].after.run_id]))
    for number, found in enumerate(out, start=1):
        found.number = number
        for change in found.changes:
            change.group = number
    return out
