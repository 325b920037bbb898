"""What compare.py measures in one record (one process): its samples of the chosen metric.

time     per-iteration time of each timed run: `per_iter_time`, else `total_time` / iterations_per_run;
         our records keep warm-up apart, upstream's first sample holds compilation and is skipped
         (benchmarks/common/stats.py, as result_analyzer.py does)
compile  the first run's time, compilation included: our first warm-up run, upstream's first sample
         (a time a user waits; "first run minus a steady run" is often near zero or negative on CPU)
memory   peak resident memory of each timed run (`peak_rss_bytes`)
NAME     any other metric of the records, by name, steady state as for time
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from benchmarks.common import stats

KINDS = ("time", "compile", "memory")
UNITS = {"time": ("ms", 1e3), "compile": ("s", 1.0), "memory": ("MiB", 1 / 2**20)}
# Upstream records: the first sample holds compilation (result_analyzer.py skips one as well).
SKIP_WITHOUT_WARMUP = 1


def unit(metric: str) -> tuple:
    """(unit text, factor from the record's unit) for showing a metric's medians."""
    if metric in UNITS:
        return UNITS[metric]
    if metric.endswith("bytes"):
        return UNITS["memory"]
    return ("ms", 1e3) if metric.endswith("time") or metric.endswith("_s") else ("", 1.0)


def record_samples(record: dict, metric: str, skip: Optional[int] = None) -> tuple:
    """(1-D array of positive finite samples, None) or (None, why the record has none)."""
    metrics = record.get("metrics")
    metrics = metrics if isinstance(metrics, dict) else {}
    if metric == "compile":
        warmup = stats.samples(metrics.get("warmup_time"))
        total = stats.samples(metrics.get("total_time"))
        values = warmup[:1] if warmup is not None else (total[:1] if total is not None else None)
        if values is None:
            return None, "no warmup_time or total_time"
    elif metric == "memory":
        values = stats.samples(metrics.get("peak_rss_bytes"))
        if values is None:
            return None, "no peak_rss_bytes (peak memory)"
    else:
        name = "per_iter_time" if metric == "time" else metric
        values = stats.samples(metrics.get(name))
        if values is None and metric == "time":
            values = stats.samples(metrics.get("total_time"))
            iterations = record.get("iterations_per_run")
            if values is not None and isinstance(iterations, int) and not isinstance(iterations, bool) \
                    and iterations > 1:
                values = values / iterations
        if values is None:
            return None, f"no {name} samples"
        values = stats.steady_state_or_none(values, record, skip, SKIP_WITHOUT_WARMUP)
        if values is None:
            return None, "every sample skipped (upstream records: the first holds compilation)"
    values = values[np.isfinite(values) & (values > 0)]
    if not len(values):
        return None, "no positive finite sample"
    return values, None
