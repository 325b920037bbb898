"""compare.py's statistics: a bootstrap over processes of the ratio of medians, with its interval.

Each side of a config is a list of processes (records: one per --rounds round or per run of the runner),
each a 1-D array of samples; its estimate is the median of all its samples. A resample draws the processes
with replacement and keeps each one's samples, so the spread of the resampled medians holds the variation
between processes (memory layout, thread placement, caches) and, through each process's own samples, the
variation within one. Drawing the samples again within each process (the two-stage bootstrap) would count
that second part twice: measured, its 95% intervals held the truth 99-100% of the time. A side of one
process has nothing else to show, so there the samples are drawn (benchmarks/compare/__init__.py).

With few processes a bootstrap is too narrow: its variance is (n-1)/n of the truth, and a normal quantile
stands where a Student t one belongs. Each side's log-draws are widened by sqrt(n/(n-1)) around its
estimate, and the ratio's by t(df)/z with Welch's degrees of freedom over the processes, so a 95% interval
covers the true ratio about 95% of the time with 3-10 processes (scripts/bench/compare.py measures it).

Everything is vectorised over configs, resamples and samples, and seeded: the same inputs give the same
output.
"""

from __future__ import annotations

import dataclasses
import math
import statistics as _stdlib_statistics
from typing import Optional

import numpy as np

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
# Elements per chunk of the resample array (about 64 MB of float64), whatever the number of samples.
_CHUNK_ELEMENTS = 8_000_000


def student_t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom (df >= 1; inf: the normal's).

    The Cornish-Fisher expansion of Abramowitz & Stegun 26.7.5 (error below 1e-3 for df >= 3); df of 1 and 2
    have closed forms. numpy has no t distribution, and scipy is not a dependency for this one number."""
    z = _stdlib_statistics.NormalDist().inv_cdf(p)
    if not math.isfinite(df) or df > 1e6:
        return z
    if df <= 1:
        return math.tan(math.pi * (p - 0.5))
    if df <= 2:
        a = 4 * p * (1 - p)
        return (2 * p - 1) * math.sqrt(2 / a)
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4


def pad(processes: list) -> tuple:
    """(P, M) float array of the processes' samples, +inf past each one's end, and (P,) sample counts."""
    counts = np.array([len(p) for p in processes], dtype=np.int64)
    padded = np.full((len(processes), int(counts.max())), np.inf)
    for row, samples in enumerate(processes):
        padded[row, :len(samples)] = samples
    return padded, counts


def pooled_median(processes: list) -> float:
    return float(np.median(np.concatenate(processes)))


def _medians_of_rows(values: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Median of the first totals[i] values of each row of `values` (the rest +inf)."""
    if totals.min() == totals.max():  # the usual case: every process has as many samples
        total = int(totals.flat[0])
        low, high = (total - 1) // 2, total // 2
        part = np.partition(values, sorted({low, high}), axis=-1)
        return (part[..., low] + part[..., high]) / 2
    ordered = np.sort(values, axis=-1)
    low = ((totals - 1) // 2)[..., None]
    high = (totals // 2)[..., None]
    return ((np.take_along_axis(ordered, low, -1) + np.take_along_axis(ordered, high, -1)) / 2)[..., 0]


def bootstrap_medians(padded: np.ndarray, counts: np.ndarray, resamples: int, rng: np.random.Generator,
                      within: bool = False) -> np.ndarray:
    """(C, resamples) medians of resamples of C configs' sides of one shape.

    padded: (C, P, M) samples, +inf past each process's count; counts: (C, P). A resample draws P processes
    with replacement and keeps each one's samples; with `within`, it then draws as many samples from each
    as it has, with replacement (what a side of one process needs: there is no other variation to see)."""
    n_configs, n_processes, width = padded.shape
    out = np.empty((n_configs, resamples))
    step = max(1, _CHUNK_ELEMENTS // max(1, n_configs * n_processes * width))
    config_index = np.arange(n_configs)[:, None, None]
    for start in range(0, resamples, step):
        size = min(step, resamples - start)
        chosen = rng.integers(0, n_processes, size=(n_configs, size, n_processes))
        chosen_counts = np.take_along_axis(counts[:, None, :], chosen, axis=2)  # (C, B, P)
        if within:
            picks = (rng.random((n_configs, size, n_processes, width)) * chosen_counts[..., None]).astype(np.int64)
            values = padded[config_index[..., None], chosen[..., None], picks]
            values[np.arange(width) >= chosen_counts[..., None]] = np.inf
        else:  # each chosen process's samples as they are (+inf padding included)
            values = padded[config_index, chosen]
        out[:, start:start + size] = _medians_of_rows(values.reshape(n_configs, size, n_processes * width),
                                                      chosen_counts.sum(axis=2))
    return out


@dataclasses.dataclass
class SideDraws:
    """One side of one config: its pooled median, process count, and widened log-medians of the resamples."""

    median: float
    n_processes: int
    n_samples: int
    log_draws: np.ndarray


def side_draws(sides: list, resamples: int, rng: np.random.Generator) -> list:
    """SideDraws for each side (a list of processes, each an array of positive samples); sides of the same
    shape are resampled together."""
    results = [None] * len(sides)
    groups = {}
    for index, processes in enumerate(sides):
        groups.setdefault((len(processes), max(len(p) for p in processes)), []).append(index)
    for (n_processes, width), members in groups.items():
        padded, counts = zip(*(pad(sides[i]) for i in members))
        draws = bootstrap_medians(np.stack(padded), np.stack(counts), resamples, rng, within=n_processes == 1)
        for row, index in enumerate(members):
            median = pooled_median(sides[index])
            centre = math.log(median)
            logs = np.log(draws[row])
            if n_processes > 1:  # the bootstrap's variance over n clusters is (n-1)/n of the truth
                logs = centre + math.sqrt(n_processes / (n_processes - 1)) * (logs - centre)
            results[index] = SideDraws(median, n_processes, int(sum(len(p) for p in sides[index])), logs)
    return results


def welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom, counting processes; inf when a side has one process."""
    if n_a < 2 or n_b < 2:
        return math.inf
    denominator = var_a ** 2 / (n_a - 1) + var_b ** 2 / (n_b - 1)
    return (var_a + var_b) ** 2 / denominator if denominator > 0 else math.inf


@dataclasses.dataclass
class Ratio:
    """treatment / control of one config, its interval, and the log-draws the geomean combines."""

    value: float
    ci: tuple
    log_draws: np.ndarray  # widened for the variance only (no t factor): what a sum over many configs needs


def ratio(control: SideDraws, treatment: SideDraws, confidence: float) -> Ratio:
    centre = math.log(treatment.median) - math.log(control.median)
    draws = treatment.log_draws - control.log_draws
    df = welch_df(float(control.log_draws.var()), control.n_processes, float(treatment.log_draws.var()),
                  treatment.n_processes)
    upper_p = 1 - (1 - confidence) / 2
    widen = student_t_quantile(upper_p, df) / student_t_quantile(upper_p, math.inf)
    low, high = np.quantile(centre + widen * (draws - centre), [1 - upper_p, upper_p])
    return Ratio(math.exp(centre), (math.exp(low), math.exp(high)), draws)


def geomean(ratios: list, confidence: float) -> Optional[Ratio]:
    """The geometric mean of the configs' ratios, with the interval of the joint resamples (config i's b-th
    resample with config j's b-th: the configs are independent measurements)."""
    if not ratios:
        return None
    centre = float(np.mean([math.log(r.value) for r in ratios]))
    draws = np.mean(np.stack([r.log_draws for r in ratios]), axis=0)
    upper_p = 1 - (1 - confidence) / 2
    low, high = np.quantile(draws, [1 - upper_p, upper_p])
    return Ratio(math.exp(centre), (math.exp(low), math.exp(high)), draws)
