"""The metric words every tool reads a record by (`time`, `compile`, `memory`), each defined once here, over
the record's Measurement: aggregate.py's and compare.py's `--metric`, history's columns and the dashboard's
figures say the same thing by the same word (docs/command-line.md, "Names that mean one thing").

time     the steady-state time per iteration of each timed run (seconds); which leading samples of an
         upstream record (no warm-up of its own) hold warm-up is the caller's policy: each tool keeps its
         upstream counterpart's
compile  the first run's time, compilation included (seconds): our first warm-up run, upstream's first timed
         run. A time a user waits, so a ratio of two is meaningful; "first run minus a steady run" is often
         near zero or negative on the CPU (the analyzer's `compile_time` column keeps upstream's for its CSV)
memory   the peak memory of each timed run (bytes): the device's (`peak_memory_bytes`, of the record's
         `memory_kind`), else, for older records, the host's resident set (`peak_rss_bytes`)

Beside them, metrics any tool reads by their own name (a generate run's figures, child/generation.py;
docs/generation.md), each declared once with its unit and direction in results/metric_catalog.py: for most, less is
better (a time); for a rate (decode tokens per second, TFLOP/s) more is. compare.py judges a rate by its inverse, so
that above 1 is worse for every metric.
"""

from __future__ import annotations

from typing import Optional

from benchmarks.results import measurement, metric_catalog
from benchmarks.results.measurement import Measurement

TIME, COMPILE, MEMORY = "time", "compile", "memory"
WORDS = (TIME, COMPILE, MEMORY)


def named_samples(m: Measurement, metric: str, policy: measurement.WarmupPolicy) -> tuple:
    """(a metric's steady-state samples by its own name, each a time: a rate's inverted, so that less is better for
    every metric; None), or (None, why the record has none). Only positive finite samples count."""
    import numpy as np

    if m.raw(metric) is None:
        return None, m.why_none(metric)
    values = m.samples(metric, policy)
    if values is None:
        return None, f"all {len(m.raw(metric))} samples of {metric} skipped"
    values = values[np.isfinite(values) & (values > 0)]
    if not len(values):
        return None, f"no positive finite sample of {metric}"
    return (1.0 / values if metric_catalog.higher_is_better(metric) else values), None


def generation_figures(m: Measurement) -> Optional[dict]:
    """{metric: its median over the timed runs} of a generate run's figures the record has (seconds, or tokens per
    second: metric_catalog says which way is better), or None for a record with none (not run by generate)."""
    figures = {name: m.median(name) for name in metric_catalog.generation_metrics()}
    figures = {name: value for name, value in figures.items() if value is not None}
    return figures or None


def time_samples(m: Measurement, policy: measurement.WarmupPolicy) -> tuple:
    """(the steady-state per-iteration times, None), or (None, why the record has none)."""
    raw = m.per_iteration_raw()
    if raw is None:
        return None, m.why_none(measurement.TOTAL_TIME)  # neither it nor per_iter_time: the timed runs' key

    steady = m.per_iter_time(policy)
    if steady is None:
        return None, f"all {len(raw)} sample{'s' if len(raw) != 1 else ''} skipped"
    return steady, None


def compile_seconds(m: Measurement) -> tuple:
    """(the first run's time, compilation included, None), or (None, why the record has none)."""
    value = m.first_run_time()
    return (None, f"no {measurement.WARMUP_TIME} or {measurement.TOTAL_TIME}") if value is None else (value, None)


def memory_samples(m: Measurement) -> tuple:
    """(each timed run's peak memory in bytes, None), or (None, why the record has none); memory_kind says
    what they count."""
    values = m.peak_memory_samples()
    if values is None:
        return None, f"no {measurement.DEVICE_PEAK_MEMORY} or {measurement.HOST_PEAK_RSS} (peak memory)"
    return values, None


def memory_kind(m: Measurement) -> str:
    """What memory_samples count: the record's `memory_kind`, or `peak_rss_bytes` where it has no device peak
    (older records). Two figures of different kinds are not comparable."""
    if m.raw(measurement.DEVICE_PEAK_MEMORY) is None:
        return measurement.HOST_PEAK_RSS
    return str(m.record.get("memory_kind") or measurement.DEVICE_PEAK_MEMORY)

