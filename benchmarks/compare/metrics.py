"""What compare.py measures in one record (one process): its samples of the chosen metric. `time`,
`compile` and `memory` are the metric words of benchmarks/results/metric_words.py, which defines them for every
tool (compare skips upstream records' first sample for `time`, as result_analyzer.py does); besides them:

paired   the backend's time relative to eager's in the same pair of alternating runs (--speedup=paired records:
         backend / eager per pair, the inverse of the pair's speedup), so above 1 the speedup over eager fell; it
         cancels what changed the machine between the two sides, which slows eager as much
NAME     any other metric of the records, by name, steady state as for time; a rate (more is better, as its
         declaration in results/metric_catalog.py says, e.g. decode_tokens_per_second) by its inverse, so that above
         1 is worse as for every other metric, shown as time per unit (the declaration's `per`, or its `inverse`)
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from benchmarks.results import measurement, metric_catalog, metric_words
from benchmarks.results.measurement import Measurement

KINDS = ("time", "compile", "memory", "paired")
UNITS = {"time": ("ms", 1e3), "compile": ("s", 1.0), "memory": ("MiB", 1 / 2**20), "paired": ("x eager", 1.0)}


def unit(metric: str) -> tuple:
    """(unit text, factor from the record's unit) for showing a metric's medians: a metric word's, else its
    declaration's (results/metric_catalog.py): a rate by its inverse, a time in ms, bytes in MiB."""
    if metric in UNITS:
        return UNITS[metric]
    declared = metric_catalog.get(metric)
    if declared is None:
        return ("", 1.0)
    if declared.higher_is_better:  # compared by its inverse: time per unit of the rate
        return declared.inverse or ("ms per " + (declared.per or "unit"), 1e3)
    if declared.kind == metric_catalog.BYTES:
        return UNITS["memory"]
    return ("ms", 1e3) if declared.unit == "s" else ("", 1.0)


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
