"""--database: a long-lived CSV the rows are appended to, matched to its header by column name."""

import csv
import os

import pytest

from helpers import ROOT

from benchmarks.analyzer import columns, pipeline, report_files

pytestmark = pytest.mark.usefixtures("analyzer_reader")  # each test with each reader

FIXTURES = ROOT / "tests" / "fixtures" / "analyzer"


def lines_of(name: str, *numbers) -> str:
    lines = (FIXTURES / f"{name}.jsonl").read_text().splitlines()
    return "".join(lines[n - 1] + "\n" for n in numbers)


def read(path) -> tuple:
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], [{k: v for k, v in zip(rows[0], row) if v != ""} for row in rows[1:]]


def report_and_append(tmp_path, name: str, text: str, database) -> list:
    """Analyze `text` with --database; return its own report's rows (non-empty cells)."""
    path = tmp_path / f"{name}.jsonl"
    path.write_text(text)
    output = tmp_path / f"{name}.csv"
    pipeline.analyze(pipeline.Options(inputs=[str(path)], output=str(output), database=str(database),
                                    fallback_timestamp=1.0))
    return read(output)[1]


def test_two_runs_with_different_metrics_keep_every_value_under_its_header(tmp_path):
    database = tmp_path / "db" / "database.csv"
    database.parent.mkdir()
    # Run 1: eager and a failure, no XLA metrics. Run 2: XLA and dynamo counters: new columns.
    first = report_and_append(tmp_path, "first", lines_of("ours", 1, 4) + lines_of("upstream", 6), database)
    header_1, _ = read(database)
    second = report_and_append(tmp_path, "second", lines_of("ours", 2) + lines_of("upstream", 1, 2), database)
    header_2, rows = read(database)
    assert set(header_1) < set(header_2)
    assert header_2 == columns.order_columns(header_2)  # rewritten once, in the documented order
    assert rows == first + second  # every value of both runs, under its own name
    assert rows[0]["std_peak_rss_bytes"] and "min_trace_total_time" not in rows[0]
    assert rows[3]["xla_compile_time"] == "7.375" and rows[4]["dynamo_counters.stats.calls_captured"] == "2.0"
    # Run 3 has only columns the database has, in another order of metrics: appended, no rewrite.
    stat_before = database.stat()
    third = report_and_append(tmp_path, "third", lines_of("ours", 5), database)
    header_3, rows = read(database)
    assert header_3 == header_2 and rows == first + second + third
    assert database.stat().st_mode == stat_before.st_mode
    assert sorted(p.name for p in database.parent.iterdir()) == ["database.csv", "database.csv.lock"]


def test_a_database_written_by_upstreams_analyzer_gets_our_rows_by_name(tmp_path):
    database = tmp_path / "database.csv"
    upstream_header = list(columns.UPSTREAM_COLUMNS) + ["min_total_time", "max_total_time", "mean_total_time",
                                                        "std_total_time", "median_trace_per_iter_time"]
    old_row = {"timestamp": "1699680738.72", "suite_name": "torchbench", "model_name": "old", "accelerator": "cuda",
               "error_message": "RuntimeError: boom, with a comma", "median_total_time": "0.5",
               "min_total_time": "0.25", "median_trace_per_iter_time": "-1"}
    with open(database, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(upstream_header)
        writer.writerow([old_row.get(name, "") for name in upstream_header])
    new = report_and_append(tmp_path, "new", lines_of("ours", 1), database)
    header, rows = read(database)
    assert rows == [old_row] + new
    assert header[:20] == list(columns.UPSTREAM_COLUMNS) and "status" in header


def test_a_file_that_is_not_a_database_is_left_alone(tmp_path):
    database = tmp_path / "results.jsonl"
    text = lines_of("ours", 1)
    database.write_text(text)
    with pytest.raises(report_files.AnalyzeError, match="not a metric database"):
        report_and_append(tmp_path, "run", text, database)
    assert database.read_text() == text


def test_an_empty_database_file_is_a_new_database(tmp_path):
    database = tmp_path / "database.csv"
    database.write_text("")
    rows = report_and_append(tmp_path, "run", lines_of("ours", 1, 2), database)
    assert read(database)[1] == rows
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
