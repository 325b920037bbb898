"""What compare.py measures in one record (one process): its samples of the chosen metric, taken through
the record's Measurement (benchmarks/common/measurement.py, which defines each of them).

time     per-iteration time of each timed run, steady state (upstream records: the first sample skipped)
compile  the first run's time, compilation included (Measurement.first_run_time): a ratio needs a time a
         user waits; "first run minus a steady run" is often near zero or negative on CPU
memory   peak memory of each timed run: the device's (`peak_memory_bytes`), else the host's resident set
         (`peak_rss_bytes`, older records); two sides whose figures are of different kinds (`memory_kind`)
         are not comparable
paired   the backend's time relative to eager's in the same pair of alternating runs (--speedup=paired records:
         backend / eager per pair, the inverse of the pair's speedup), so above 1 the speedup over eager fell; it
         cancels what changed the machine between the two sides, which slows eager as much
NAME     any other metric of the records, by name, steady state as for time
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from benchmarks.common import measurement
from benchmarks.common.measurement import Measurement

KINDS = ("time", "compile", "memory", "paired")
UNITS = {"time": ("ms", 1e3), "compile": ("s", 1.0), "memory": ("MiB", 1 / 2**20), "paired": ("x eager", 1.0)}


def unit(metric: str) -> tuple:
    """(unit text, factor from the record's unit) for showing a metric's medians."""
    if metric in UNITS:
        return UNITS[metric]
    if metric.endswith("bytes"):
        return UNITS["memory"]
    return ("ms", 1e3) if metric.endswith("time") or metric.endswith("_s") else ("", 1.0)


def memory_kind(m: Measurement) -> str:
    """What the record's memory samples count (record_samples' choice): its `memory_kind`, or
    `peak_rss_bytes` where it has no device peak (older records)."""
    if m.raw(measurement.DEVICE_PEAK_MEMORY) is None:
        return measurement.PEAK_MEMORY
    return str(m.record.get("memory_kind") or measurement.DEVICE_PEAK_MEMORY)


def record_samples(m: Measurement, metric: str, skip: Optional[int] = None) -> tuple:
    """(1-D array of positive finite samples, None) or (None, why the record has none)."""
    policy = measurement.FIRST_SAMPLE if skip is None else measurement.skip_exactly(skip)
    if metric == "compile":
        first = m.first_run_time()
        if first is None:
            return None, "no warmup_time or total_time"
        values = np.array([first])
    elif metric == "paired":
        ratios = m.paired_ratios()
        if ratios is None:
            return None, "no paired_speedup (run with --speedup=paired)"
        values = 1.0 / ratios
    elif metric == "memory":
        values = m.raw(measurement.DEVICE_PEAK_MEMORY)  # the device's peak; older records: the host's resident set
        values = values if values is not None else m.raw(measurement.PEAK_MEMORY)
        if values is None:
            return None, "no peak_memory_bytes or peak_rss_bytes (peak memory)"
    else:
        name = measurement.PER_ITER_TIME if metric == "time" else metric
        raw = m.per_iteration_raw() if metric == "time" else m.raw(metric)
        if raw is None:
            return None, f"no {name} samples"
        values = m.per_iter_time(policy) if metric == "time" else m.samples(metric, policy)
        if values is None:
            return None, "every sample skipped (upstream records: the first holds compilation)"
    values = values[np.isfinite(values) & (values > 0)]
    if not len(values):
        return None, "no positive finite sample"
    return values, None
