"""The metric catalog (results/metric_catalog.py), the one list of metrics: every metric a stored record holds is
declared; the record schema's metrics and docs/record-schema.md are the catalog's; compare's, aggregate's, history's
and the progress line's direction and unit are each metric's declaration; a metric declared in a test alone is read
the right way round by compare and aggregate. No test repeats the list: each checks a property of every metric."""

import dataclasses
import glob
import json
import os

import pytest

from helpers import ROOT

from benchmarks.results import metric_catalog
from benchmarks.results.measurement import Measurement

def stored_records():
    """Every JSON record (a line of a .jsonl, or a .json file) under the tests' fixtures and aggregate's goldens."""
    patterns = [os.path.join(ROOT, "tests", "fixtures", "**", "*.json*"),
                os.path.join(ROOT, "tests", "aggregate", "golden", "**", "*.json*")]
    for path in sorted({p for pattern in patterns for p in glob.glob(pattern, recursive=True)}):
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a torn line, a pretty-printed JSON file: not a record line
                if isinstance(record, dict) and isinstance(record.get("metrics"), dict):
                    yield path, record


def test_every_metric_of_a_stored_record_is_declared():
    seen = {}
    for path, record in stored_records():
        for name in record["metrics"]:
            seen.setdefault(name, os.path.relpath(path, ROOT))
    assert len(seen) >= 15  # the walk found the fixtures
    undeclared = {name: path for name, path in seen.items() if metric_catalog.get(name) is None}
    assert not undeclared, f"declare these in results/metric_catalog.py: {undeclared}"
    assert all(metric_catalog.get(name).in_record for name in seen)


def test_each_declaration_is_whole():
    for name, metric in metric_catalog.CATALOG.items():
        assert metric.name == name and metric.kind in metric_catalog.KINDS and metric.meaning
        if metric.per or metric.inverse:
            assert metric.higher_is_better, name  # only a rate is shown by its inverse
    for name in metric_catalog.speedup_metrics():  # --metric reads a record's samples by the metric's name
        assert metric_catalog.get(name).in_record, name
    assert metric_catalog.short_names() == {"decode": "decode_tokens_per_second", "ttft": "time_to_first_token",
                                           "tpot": "time_per_output_token", "itl": "inter_token_latency_mean"}
    with pytest.raises(ValueError, match="kind 'speed'"):
        metric_catalog.declare(metric_catalog.Metric("bad", "speed", "", "a kind no tool knows"))


def test_the_schemas_metrics_and_their_docs_are_the_catalogs():
    from benchmarks.results import record_schema

    in_record = [m for m in metric_catalog.CATALOG.values() if m.in_record]
    declared = {key.name: key for key in record_schema.METRICS.fields}
    assert list(declared) == [m.name for m in in_record]  # nothing in the schema alone, nothing missing there
    docs = (ROOT / "docs" / "record-schema.md").read_text(encoding="utf-8")
    for metric in in_record:
        key = declared[metric.name]
        assert (key.type, key.writer, key.meaning) == (metric.record_type, metric.writer, metric.meaning)
        assert f"| `metrics.{metric.name}` |" in docs, metric.name
    assert metric_catalog.get("aot_precompile_load_time").writer == "feature:aot_precompile"


def test_the_progress_line_shows_every_metric_the_catalog_marks_for_it():
    from benchmarks.runner import progress

    marked = metric_catalog.progress_metrics()
    assert marked  # microbench's TFLOP/s at least
    record = record_with("per_iter_time", [0.5, 0.5, 0.5])
    for number, name in enumerate(marked, start=2):
        record["metrics"][name] = [float(number)] * 3
    line = progress.done_text(dict(record, status="ok", accuracy=None))
    assert line.startswith("ok, median 500.000 ms/iter")
    for number, name in enumerate(marked, start=2):
        assert f" {number:.3g} {metric_catalog.get(name).unit}" in line, (name, line)


def record_with(name, values):
    return {"model": {"suite_name": "dummy", "model_name": "mlp"}, "status": "ok", "repeat": len(values),
            "iterations_per_run": 1, "warmup": 1,
            "experiment": {"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval", "batch_size": 8},
            "metrics": {"total_time": [0.5] * len(values), "per_iter_time": [0.5] * len(values), "warmup_time": [1.0],
                        name: values}}


def test_compare_history_and_aggregate_read_each_direction_from_its_declaration():
    from benchmarks.aggregate import cli as aggregate_cli
    from benchmarks.compare import metrics as compare_metrics
    from benchmarks.history import cli as history_cli
    from benchmarks.history import formats, series
    from benchmarks.history.site import dashboard_numbers

    numeric = [m for m in metric_catalog.CATALOG.values() if m.in_record and m.kind != metric_catalog.TEXT
               and m.name != "dynamo_counters"]
    for metric in numeric:
        samples, why = compare_metrics.metric_samples(Measurement(record_with(metric.name, [4.0, 4.0, 4.0])),
                                                      metric.name, skip=0)
        assert why is None and list(samples) == [0.25 if metric.higher_is_better else 4.0] * 3, metric.name
        text, _factor = compare_metrics.unit(metric.name)
        assert text.startswith(("ms per", "x the")) == metric.higher_is_better, metric.name
    for figure in formats.GENERATION_COLUMNS:
        declared = metric_catalog.get(figure.metric)
        assert declared.generation and figure.direction == declared.direction
        assert figure.page_title.endswith("(higher is better)") == declared.higher_is_better
    for name in dashboard_numbers.METRICS:  # the dashboard's colours: pass rate up is better, latency down
        assert not metric_catalog.get(name).in_record
    assert [metric_catalog.higher_is_better(name) for name in dashboard_numbers.METRICS] == [True, True, False, True,
                                                                                           False]
    assert aggregate_cli.METRICS[2:] == history_cli.DETECT_METRICS[1:] == metric_catalog.speedup_metrics()
    for name in metric_catalog.speedup_metrics():  # history detect --metric: a rate by its inverse, so that larger is still worse
        point = series.Point(run_id=1, timestamp=0.0, host="", commit="", status="ok", verification="", accuracy=None,
                             processes=[], compile_s=None, peak_memory=None, graph_breaks=None, figures={name: 4.0})
        (seen,) = series.on_figure(series.Series(config_id=1, key="", labels={}, points=[point]), name).points
        assert seen.processes == [[0.25 if metric_catalog.higher_is_better(name) else 4.0]]


@pytest.fixture
def throwaway(monkeypatch):
    """A rate declared in this test alone: widgets per second, more is better, aggregate's --metric takes it."""
    metric = metric_catalog.Metric("widgets_per_second", metric_catalog.RATE, "widgets/s", "widgets made per second",
                                   higher_is_better=True, per="widget", speedup=True)
    monkeypatch.setitem(metric_catalog.CATALOG, metric.name, metric)
    return metric


def test_a_metric_declared_in_a_test_is_read_by_compare_and_aggregate_without_other_edits(throwaway, tmp_path,
                                                                                         monkeypatch):
    from benchmarks.aggregate import reports
    from benchmarks.aggregate.analysis import Options
    from benchmarks.compare import metrics as compare_metrics

    assert compare_metrics.unit(throwaway.name) == ("ms per widget", 1e3)
    samples, _ = compare_metrics.metric_samples(Measurement(record_with(throwaway.name, [2.0, 2.0])), throwaway.name)
    assert list(samples) == [0.5, 0.5]  # compared by its inverse
    path = tmp_path / "results.jsonl"
    eager, compiled = record_with(throwaway.name, [10.0] * 3), record_with(throwaway.name, [40.0] * 3)
    compiled["experiment"] = dict(compiled["experiment"], dynamo="inductor")
    for record in (eager, compiled):
        record["timestamp"] = 1750000000
    path.write_text("".join(json.dumps(record) + "\n" for record in (eager, compiled)))
    options = Options(input_files=[str(path)], accelerator="cpu", metric=throwaway.name, backends=["eager", "inductor"])
    table = reports.build(options)
    assert table.columns[1::2] == ["Speedup(Eager/Oldest Eager)", "Speedup(Inductor/Oldest Eager)"]
    (row,) = table.rows
    assert row[1::2] == [1.0, 4.0]  # 40 widgets/s over eager's 10: 4x faster
    assert "Figure: widgets_per_second, the median of each record's (widgets made per second; records without it " \
           "are left out); a rate, so speedup = backend rate / base rate (more is better)." in table.notes
    # The same samples declared as a cost (less is better): the report turns round with the declaration alone.
    monkeypatch.setitem(metric_catalog.CATALOG, throwaway.name, dataclasses.replace(throwaway, higher_is_better=False,
                                                                                   per=None))
    assert reports.build(options).rows[0][1::2] == [1.0, 0.25]
