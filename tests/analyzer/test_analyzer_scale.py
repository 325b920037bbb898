"""The vectorised report against a record-by-record computation with benchmarks.results.stats, on synthetic records
of the benchmark's shapes (ours and upstream's, failures, skips, XLA and not), cut in many ranges and batches."""

import csv
import json

import numpy as np
import pytest

from benchmarks.analyzer import pipeline
from benchmarks.results import stats
from scripts.bench import analyzer as bench_analyzer

pytestmark = pytest.mark.usefixtures("analyzer_reader")  # each test with each reader


def load_generator():
    return bench_analyzer.generate


def expected_row(record: dict) -> dict:
    """What one row must hold, computed from the record alone with the shared statistics."""
    metrics = record["metrics"]
    row = {}
    for name, value in metrics.items():
        values = stats.samples(value) if name != "error" else None
        if values is None:
            continue
        skip = 0 if stats.has_warmup(record) else 1  # upstream result_analyzer.py: the first sample left out
        summary = stats.summary(values, values[min(skip, len(values) - 1):])
        for statistic, number in summary.items():
            row[f"{statistic}_{name}"] = number
    total = stats.samples(metrics.get("total_time"))
    compile_time = stats.compile_time(record, total)
    experiment = record["experiment"]
    row["xla_compile_time"] = compile_time if experiment["xla"] else None
    row["dynamo_compile_time"] = compile_time if experiment["dynamo"] else None
    return row


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple:
    """1500 synthetic records, and what each one's row must hold: the same for either reader, so computed once
    for both (the record-by-record computation is most of this file's time)."""
    path = tmp_path_factory.mktemp("scale") / "results.jsonl"
    load_generator()(path, 1500, seed=7)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return path, records, [expected_row(record) for record in records]


def test_every_statistic_of_every_row_is_the_shared_definitions(tmp_path, generated):
    path, records, expected = generated
    pipeline.analyze(pipeline.Options(inputs=[str(path)], output=str(tmp_path / "r.csv"), jobs=2,
                                    chunk_bytes=400_000))
    with open(tmp_path / "r.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(records) == 1500
    checked = 0
    for record, row, expected_cells in zip(records, rows, expected):
        assert row["model_name"] == record["model"]["model_name"]
        for column, number in expected_cells.items():
            cell = row[column]  # the fixed median_total_time and median_per_iter_time included
            if number is None:
                assert cell == "", (column, cell)
            else:  # exactly: the CSV text is the shortest that reads back as the same float
                assert float(cell) == number, (record["model"], column, cell, number)
                checked += 1
    assert checked > 60_000
    statuses = {row["status"] for row in rows}
    assert statuses == {"ok", "error", "crash", "timeout", "oom", "skip"}
    assert np.isclose(sum(float(r["median_total_time"]) for r in rows if r["median_total_time"]),
                      sum(float(np.median(rec["metrics"]["total_time"])) for rec in records
                          if "total_time" in rec["metrics"]), rtol=1e-12)
