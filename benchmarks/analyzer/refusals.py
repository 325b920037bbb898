"""The records the shared validation (benchmarks/results/record_check.py) refuses, found in the analyzer's columnar
reading of a byte range (rows.RangeRows): an outcome's values, and each line's `metrics` (the compiled reader's
numeric arrays, read again as Python reads them where a sample is refused, so both readers give the same reason)."""

from __future__ import annotations

import json
from typing import Optional

import numpy as np

from benchmarks.results import record_check


class UnusableRecord(ValueError):
    """A value the shared validation refuses (benchmarks/results/record_check.py): its record is skipped."""

def outcome_problem(names: tuple, values: list) -> Optional[str]:
    """The shared validation of an outcome's values (`names`: their record keys, row_entries._OUTCOME_FIELDS).
    value for all records alike in its type and error text: only those two are checked here (the samples are the
    statistics' to report, metric by metric)."""
    for name, value in zip(names, values):
        if name == "metrics":
            value = {"error": value.get("error")} if type(value) is dict else value
        refused = record_check.key_problem(name, value)
        if refused:
            return refused
    return None

def unusable_metrics(metrics_values: list, line_ids, compiled_metrics: tuple, line_text=None) -> dict:
    """line -> why the shared validation (record_check.metrics) refuses the line's `metrics`: a sample infinite or
    beyond record_check.MAX_MAGNITUDE (a mean over it overflows), in the compiled reader's arrays or in an object
    the Python reader read (the compiled reader's lines keep there what is not a numeric array)."""
    found = {}
    for index, value in enumerate(metrics_values):
        why = record_check.key_problem("metrics", value) if type(value) is dict else None
        if why:
            for line in np.flatnonzero(line_ids == index).tolist():
                found.setdefault(line, why)
    names, m_line, m_name, m_start, m_count, values = compiled_metrics
    if names and m_line:
        values = np.frombuffer(values, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            bad = np.isinf(values) | (np.abs(values) > record_check.MAX_MAGNITUDE)
        if bad.any():
            # Entries may share their samples (the reader stores equal arrays once), so an entry's samples are its
            # own range, not what lies between its start and the next entry's. Entries are in file order: a line's
            # first bad entry, and its first bad sample, are the ones the Python reader's check names.
            start, count = np.frombuffer(m_start, dtype=np.intp), np.frombuffer(m_count, dtype=np.intp)
            bad_before = np.concatenate(([0], np.cumsum(bad)))
            lines, metric = np.frombuffer(m_line, dtype=np.intp), np.frombuffer(m_name, dtype=np.int64)
            for at in np.flatnonzero(bad_before[start + count] > bad_before[start]).tolist():
                line = int(lines[at])
                if line not in found:
                    found[line] = _line_metrics_problem(line_text, line) or record_check.key_problem(
                        "metrics", {names[int(metric[at])]: [float(values[int(start[at]) + int(np.argmax(
                            bad[start[at]:start[at] + count[at]]))])]})
    return found

def _line_metrics_problem(line_text, line: int) -> Optional[str]:
    """The shared check of a line's `metrics` as the Python reader reads it (a huge integer is an integer there, not
    the compiled reader's inf), so both readers give a refused line the same reason; None where it can't be read."""
    if line_text is None:
        return None
    try:
        record = json.loads(line_text(line))
    except (ValueError, RecursionError):
        return None
    return record_check.key_problem("metrics", record.get("metrics")) if isinstance(record, dict) else None

