"""What compare.py measures in one record (one process): its samples of the chosen metric. `time`,
`compile` and `memory` are the metric words of benchmarks/results/metric_words.py, which defines them for every
tool (compare skips upstream records' first sample for `time`, as result_analyzer.py does); besides them:

paired   the backend's time relative to eager's in the same pair of alternating runs (--speedup=paired records:
         backend / eager per pair, the inverse of the pair's speedup), so above 1 the speedup over eager fell; it
         cancels what changed the machine between the two sides, which slows eager as much
NAME     any other metric of the records, by name, steady state as for time; a rate (more is better:
         metric_words.HIGHER_IS_BETTER, e.g. decode_tokens_per_second) by its inverse, so that above 1 is worse as
         for every other metric, shown as time per unit
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from benchmarks.results import measurement, metric_words
from benchmarks.results.measurement import Measurement

KINDS = ("time", "compile", "memory", "paired")
# A rate's unit, shown inverted (metric_words.HIGHER_IS_BETTER).
RATE_UNITS = {"decode_tokens_per_second": "token", "tflops": "TFLOP"}
# A rate whose inverse reads better in a unit of its own (results/roofline_figures.py): the fraction of attainable by
# the time taken over the time the roofline allows; achieved FLOP/s by milliseconds per GFLOP.
RATE_INVERSES = {"fraction_of_attainable": ("x the roofline's time", 1.0), "achieved_flops_per_second":
                 ("ms per GFLOP", 1e12)}
UNITS = {"time": ("ms", 1e3), "compile": ("s", 1.0), "memory": ("MiB", 1 / 2**20), "paired": ("x eager", 1.0)}


def unit(metric: str) -> tuple:
    """(unit text, factor from the record's unit) for showing a metric's medians."""
    if metric in UNITS:
        return UNITS[metric]
    if metric in RATE_INVERSES:
        return RATE_INVERSES[metric]
    if metric_words.higher_is_better(metric):  # compared by its inverse: time per unit of the rate
        return ("ms per " + RATE_UNITS.get(metric, "unit"), 1e3)
    if metric.endswith("bytes"):
        return UNITS["memory"]
    return ("ms", 1e3) if metric.endswith("time") or metric.endswith("_s") else ("", 1.0)


def metric_samples(m: Measurement, metric: str, skip: Optional[int] = None) -> tuple:
    """(1-D array of the record's positive finite samples of `metric`, None) or (None, why it has none)."""
    policy = measurement.FIRST_SAMPLE if skip is None else measurement.skip_exactly(skip)
    if metric == metric_words.COMPILE:
        first, why = metric_words.compile_seconds(m)
        values = None if first is None else np.array([first])
    elif metric == "paired":
        ratios = m.paired_ratios()
        values, why = (None, "no paired_speedup (run with --speedup=paired)") if ratios is None else (1.0 / ratios, None)
    elif metric == metric_words.MEMORY:
        values, why = metric_words.memory_samples(m)
    elif metric == metric_words.TIME:
        values, why = metric_words.time_samples(m, policy)
    else:  # by name; a rate by its inverse
        return metric_words.named_samples(m, metric, policy)
    if values is None:
        return None, why
    values = values[np.isfinite(values) & (values > 0)]
    if not len(values):
        return None, "no positive finite sample"
    return values, None
