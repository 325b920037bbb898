"""The analyzer's per-column statistics are stats.summary (of the steady samples) / compile_time, row by row."""

import numpy as np
import pytest

from benchmarks.results import stats

OURS = {"warmup": 2, "metrics": {}}
UPSTREAM = {"metrics": {}}


@pytest.mark.parametrize("length", [1, 2, 3, 10, 11])
@pytest.mark.parametrize("record", [OURS, UPSTREAM], ids=["ours", "upstream"])
def test_summary_rows_is_summary_of_each_row(length, record):
    rng = np.random.default_rng(length)
    values = rng.lognormal(-5, 2, size=(50, length))
    skip = 0 if stats.has_warmup(record) else 1
    rows = stats.summary_rows(values, skip)
    for i, row in enumerate(values):
        expected = stats.summary(row, row[min(skip, len(row) - 1):])
        got = {name: float(rows[name][i]) for name in stats.STATISTICS}
        assert got == expected, (i, got, expected)  # the same numbers, not just close ones


def test_summary_rows_rejects_what_is_not_a_table():
    for bad in (np.zeros(3), np.zeros((2, 0))):
        with pytest.raises(ValueError):
            stats.summary_rows(bad)


def test_compile_time_rows_is_compile_time_of_each_record():
    total = np.array([[4.0, 1.0, 2.0, 3.0], [0.5, 0.25, 0.75, 1.0]])
    records = [{"metrics": {"warmup_time": [10.0, 3.0]}}, {"metrics": {}}]
    median, maximum = np.median(total, axis=1), total.max(axis=1)
    got = stats.compile_time_rows(median, maximum, np.array([10.0, np.nan]), np.array([True, False]))
    assert got.tolist() == [stats.compile_time(r, t) for r, t in zip(records, total)] == [7.5, 0.375]


def test_summary_rows_treats_nan_as_summary_does():
    values = np.array([[1.0, np.nan, 3.0, 4.0], [np.nan, 1.0, 2.0, 3.0]])
    for skip in (0, 1):
        rows = stats.summary_rows(values, skip)
        for i, row in enumerate(values):
            expected = stats.summary(row, row[skip:])
            got = {name: float(rows[name][i]) for name in stats.STATISTICS}
            assert got == pytest.approx(expected, nan_ok=True)
