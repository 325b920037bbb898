"""Statistics over a record's samples, defined once for result_analyzer.py and aggregate.py.

Our records carry their warm-up apart (`warmup` and `metrics.warmup_time`), so every timed sample
is steady state. Upstream records have no warm-up: their first sample(s) hold compilation, and the
callers say how many to skip (the analyzer 1, as upstream's analyzer; aggregate 3, as upstream's).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np


def has_warmup(record: dict) -> bool:
    """True for records whose timed samples exclude warm-up (ours)."""
    metrics = record.get("metrics")
    return "warmup" in record or (isinstance(metrics, dict) and "warmup_time" in metrics)


def samples(value) -> Optional[np.ndarray]:
    """A metric's samples as float64, or None when it is not a list of numbers (null, dict, text)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        return None
    try:
        try:
            array = np.asarray(value, dtype=np.float64)
        except OverflowError:  # an integer beyond the doubles (Python's json reads 1e400 as inf, 10**400 as int)
            array = np.asarray([to_double(v) if type(v) is int else v for v in value], dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    return array if array.ndim == 1 else None


def to_double(value: int) -> float:
    """An integer as the double float() of its text gives: infinite beyond the largest double."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def summary(values: np.ndarray, steady: np.ndarray) -> dict:
    """min/median/max over every sample; mean/std (population, ddof 0, as upstream's analyzer) over steady."""
    return {
        "min": float(values.min()),
        "median": float(np.median(values)),
        "max": float(values.max()),
        "mean": float(steady.mean()),
        "std": float(steady.std()) if len(steady) > 1 else 0.0,
    }


def estimate(steady: np.ndarray, estimator: str = "median") -> tuple:
    """(value, spread) of steady-state samples: median with its MAD-based std, or mean with sample std."""
    if estimator == "mean":
        std = float(steady.std(ddof=1)) if len(steady) > 1 else 0.0
        return float(steady.mean()), std
    if estimator == "median":
        median = float(np.median(steady))
        # 1.4826 * MAD estimates the std of normal data; robust to the odd slow sample.
        std = float(1.4826 * np.median(np.abs(steady - median))) if len(steady) > 1 else 0.0
        return median, std
    raise ValueError(f"unknown estimator {estimator!r}")


def compile_time(record: dict, total_time: Optional[np.ndarray]) -> Optional[float]:
    """Time the first run spent beyond a steady run (the analyzer's compile_time column): from our warm-up
    when present, else upstream result_analyzer.py's max - median."""
    if total_time is None or not len(total_time):
        return None
    warmup = samples((record.get("metrics") or {}).get("warmup_time"))
    if warmup is not None:
        return float(warmup[0] - np.median(total_time))
    return float(total_time.max() - np.median(total_time))


# The order of summary()'s keys, and of the analyzer's min_/median_/max_/mean_/std_ columns.
STATISTICS = ("min", "median", "max", "mean", "std")


def summary_rows(values: np.ndarray, skip=0) -> dict:
    """summary() of every row of a 2-D array (one record per row, all with the same number of samples).

    `skip`, for all rows or one per row (0 for our records; for upstream records the caller's warm-up policy):
    mean/std leave out the first `skip` samples but always keep the last one. The same numbers as
    summary(row, row[min(skip, len(row) - 1):]) row by row (Measurement.summary), at numpy speed.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or not values.shape[1]:
        raise ValueError("summary_rows needs a 2-D array with at least one sample per row")
    length = values.shape[1]
    # Sorting short rows is several times faster than np.median's partition; NaN sorts last, and like
    # np.min/np.median/np.max, a row with a NaN gets NaN.
    ordered = np.sort(values, axis=1)
    maximum = ordered[:, -1]
    has_nan = np.isnan(maximum)
    minimum = np.where(has_nan, np.nan, ordered[:, 0])
    median = np.where(has_nan, np.nan, (ordered[:, (length - 1) // 2] + ordered[:, length // 2]) / 2)
    skips = np.asarray(skip)
    if skips.ndim == 0 or not len(skips) or skips.min() == skips.max():
        mean, std = _moments(values, int(skips.flat[0]) if skips.size else 0)
    else:
        mean, std = np.empty(len(values)), np.empty(len(values))
        for value in np.unique(skips).tolist():
            chosen = skips == value
            mean[chosen], std[chosen] = _moments(values[chosen], value)
    return {"min": minimum, "median": median, "max": maximum, "mean": mean, "std": std}


def _moments(values: np.ndarray, skip: int) -> tuple:
    """(mean, std) of each row's steady-state samples: all but the first `skip`, and never none."""
    steady = values[:, min(skip, values.shape[1] - 1):]
    count = steady.shape[1]
    with np.errstate(invalid="ignore"):  # infinite samples: NaN statistics (empty cells), no warning
        mean = steady.sum(axis=1) / count
        if count > 1:  # np.std's own steps (mean, squared deviations, their mean), with the mean computed once
            deviation = steady - mean[:, None]
            np.multiply(deviation, deviation, out=deviation)
            std = np.sqrt(deviation.sum(axis=1) / count)
        else:
            std = np.zeros(len(values))
    return mean, std


def compile_time_rows(total_median: np.ndarray, total_max: np.ndarray, warmup_first: np.ndarray,
                      has_warmup_time: np.ndarray) -> np.ndarray:
    """compile_time() for many records at once, from their total_time median and max.

    Where a record has warm-up samples: its first warm-up run minus the median timed run; elsewhere
    upstream's max - median. NaN where a record has no total_time.
    """
    with np.errstate(invalid="ignore"):  # inf - inf (infinite samples): NaN, an empty cell, no warning
        return np.where(has_warmup_time, warmup_first - total_median, total_max - total_median)


def speedup(base: tuple, new: tuple) -> tuple:
    """base/new time with the error propagated as upstream does: s * sqrt(relerr_a^2 + relerr_b^2)."""
    (base_value, base_std), (new_value, new_std) = base, new
    value = base_value / new_value
    error = value * math.sqrt((base_std / base_value) ** 2 + (new_std / new_value) ** 2)
    return value, error


def geomean(points: list) -> tuple:
    """Geometric mean of (value, std) points and its error g/n*sqrt(sum((std/value)^2)), as upstream."""
    if not points:
        return math.nan, math.nan
    values = np.asarray([p[0] for p in points], dtype=np.float64)
    stds = np.asarray([p[1] for p in points], dtype=np.float64)
    g = float(np.exp(np.log(values).mean()))
    return g, float(g / len(values) * math.sqrt(float(((stds / values) ** 2).sum())))


def percentiles(values, points=(95, 50, 5)) -> list:
    """numpy's linear-interpolation percentiles of `values` (upstream aggregate's histogram)."""
    array = np.asarray(values, dtype=np.float64)
    return [float(np.percentile(array, p)) for p in points]
