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
