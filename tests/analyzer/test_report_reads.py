"""What metric_report.csv says of real records (a tiny real sweep's, tests/fixtures/reads/): an LLM row's compile time
is never negative and eager's is empty (it compiles nothing); every row names its backend; a column empty in every
row is left out, upstream's 20 kept."""

import csv
import json

from helpers import ROOT, call_tool

from benchmarks.analyzer.columns import UPSTREAM_COLUMNS
from benchmarks.child import generation
from benchmarks.config.experiment_config import ExperimentConfig

READS = ROOT / "tests" / "fixtures" / "reads"


def report(tmp_path, name: str) -> tuple:
    """(header, rows) of the analyzer's CSV of a fixture."""
    out = tmp_path / "report.csv"
    call_tool("result_analyzer.py", READS / name, f"--output={out}", check_rc=0)
    with open(out, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return list(rows[0]), rows


def test_an_eager_llm_rows_compile_time_is_empty_and_a_compiled_ones_never_negative(tmp_path):
    # the fixture's eager record carries -0.173 s, as the child wrote it before (first call minus the median)
    eager = [json.loads(line) for line in (READS / "llm_generate.jsonl").read_text().splitlines()][0]
    assert eager["experiment"]["dynamo"] is None and eager["metrics"]["compile_time"] == [-0.173]
    _, rows = report(tmp_path, "llm_generate.jsonl")
    by_dynamo = {row["dynamo"]: row for row in rows}
    assert {name: by_dynamo[""][name] for name in ("min_compile_time", "median_compile_time", "max_compile_time")} \
        == {"min_compile_time": "", "median_compile_time": "", "max_compile_time": ""}
    assert float(by_dynamo["inductor"]["median_compile_time"]) > 1  # Inductor's compile of the forward, seconds


def test_the_child_writes_no_compile_time_for_eager_and_none_below_zero():
    eager = ExperimentConfig("cpu", None, None, "eval")
    assert generation.first_call_excess(eager, [0.05], [0.2, 0.2]) == {}
    assert generation.first_call_excess(eager.with_(dynamo="inductor"), [0.05], [0.2, 0.2]) == {"compile_time": [0.0]}
    assert generation.first_call_excess(eager.with_(dynamo="inductor"), [3.2], [0.2, 0.2]) == {
        "compile_time": [3.0]}


def test_every_row_names_its_backend_and_no_column_of_ours_is_empty_in_every_row(tmp_path):
    header, rows = report(tmp_path, "faults_verified.jsonl")
    assert sorted({(row["model_name"], row["backend"]) for row in rows if row["model_name"] == "graph_break"}) == [
        ("graph_break", "aot_eager"), ("graph_break", "eager")]
    assert header.index("backend") == header.index("round") + 1  # before the experiment_<key> columns
    empty = [name for name in header if all(row[name] == "" for row in rows)]
    # upstream's columns stay, with data or not (its readers find them by name and place); no other is empty
    assert empty and set(empty) <= set(UPSTREAM_COLUMNS), empty
    assert header[:20] == list(UPSTREAM_COLUMNS)
    assert "experiment_quantization" not in header and "accuracy_message" in header  # none quantized; 3 messages


def test_a_column_with_a_value_in_one_range_only_is_kept_for_every_row(tmp_path):
    """Ranges are written by workers on their own: a column one range leaves out is realigned, empty, not lost."""
    from benchmarks.analyzer import pipeline

    path = READS / "faults_verified.jsonl"
    for chunk_bytes in (1 << 20, 2000):
        out = tmp_path / f"r{chunk_bytes}.csv"
        pipeline.analyze(pipeline.Options(inputs=[str(path)], output=str(out), jobs=2, chunk_bytes=chunk_bytes))
        with open(out, encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        messages = [row["accuracy_message"] for row in rows]
        assert sum(1 for m in messages if m) == 3 and len(rows) == 14  # the three fail_accuracy configs
