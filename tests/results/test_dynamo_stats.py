"""dynamo_stats' graph-break reasons and compile seconds by phase (results/dynamo_stats.py, features/compile_options/child.py):
the rule that keeps the list short and the analyzer's cell (fast), then a real sweep of faults/graph_break under
aot_eager (eval, train, and eval from a warm cache) and the analyzer's columns of its records."""

import csv
import os

import pytest

from benchmarks.results import dynamo_stats
from helpers import read_jsonl, run_runner, run_tool

# torch 2.9's message of a graph break (exc.format_graph_break_message), as counters["graph_break"] keys it.
PRINT_BREAK = ("Failed to trace builtin operator\n"
               "  Explanation: Dynamo does not know how to trace builtin operator `print` with argument types ['str']\n"
               "  Hint: Avoid calling builtin `print` with argument types ['str'].\n\n"
               "  Developer debug context: builtin print [<class 'ConstantVariable'>] False\n\n"
               " For more details about this graph break, please visit: https://example.org/gb0059.html")


# ---------------------------------------------------------------- the rule (no torch)


def test_a_message_is_its_first_line_and_its_explanation():
    assert dynamo_stats.split_message(PRINT_BREAK) == (
        "Failed to trace builtin operator",
        "Dynamo does not know how to trace builtin operator `print` with argument types ['str']")
    assert dynamo_stats.split_message("generic_jump TensorVariable()") == ("generic_jump TensorVariable()", None)
    long = "headline\n  Explanation: " + "x" * 1000
    assert len(dynamo_stats.split_message(long)[1]) == dynamo_stats.EXPLANATION_LIMIT


def test_reasons_are_grouped_by_reason_and_place_most_frequent_first_and_capped():
    breaks = [("a", "m.py:1"), (PRINT_BREAK, "m.py:2"), (PRINT_BREAK, "m.py:2"), ("a", "m.py:9"), ("a", "m.py:1")]
    listed, omitted = dynamo_stats.summarize_reasons(breaks)
    assert [(e["reason"], e["where"], e["count"]) for e in listed] == [
        ("a", "m.py:1", 2), ("Failed to trace builtin operator", "m.py:2", 2), ("a", "m.py:9", 1)]  # ties: first seen
    assert omitted == 0 and listed[1]["explanation"].startswith("Dynamo does not know")
    many = [(f"reason {i}", None) for i in range(dynamo_stats.MAX_REASONS + 5)]
    listed, omitted = dynamo_stats.summarize_reasons(many)
    assert len(listed) == dynamo_stats.MAX_REASONS and omitted == 5


def test_seconds_keep_only_finite_non_negative_numbers():
    assert dynamo_stats.seconds_by_key({"a": 1.23456789, "b": float("nan"), "c": -1.0, "d": True, "e": 2}) == {
        "a": 1.234568, "e": 2.0}


def test_a_torch_without_the_lists_costs_their_keys_never_the_record(monkeypatch, caplog):
    """dynamo's reasons list and timers are internals: another torch may lack them (here: deleted). Each costs its
    keys, named with why in what becomes the record's `absent` (tests/child/test_torch_internals.py: in a real
    child)."""
    import torch._dynamo.utils

    from benchmarks.child import torch_internals
    from benchmarks.features.compile_options import child as compile_options_child

    monkeypatch.setattr(torch_internals, "ABSENT", {})
    monkeypatch.delattr(torch._dynamo.utils, "graph_break_reasons")
    monkeypatch.delattr(torch._dynamo.utils, "calculate_time_spent")
    found = compile_options_child.dynamo_stats()
    assert set(found) == {"calls_captured", "graphs", "graph_breaks", "unique_graph_breaks", "fallbacks_to_eager",
                          "recompiles", "compile_seconds_by_function"}
    absent = torch_internals.absent()
    assert set(absent) == {"graph_break_reasons", "compile_seconds_by_phase"}
    assert "torch._dynamo.utils.graph_break_reasons could not be read (ImportError" in absent["graph_break_reasons"]
    assert "graph_break_reasons absent: " in caplog.text and "compile_seconds_by_phase absent: " in caplog.text


# ---------------------------------------------------------------- a real sweep


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """faults graph_break under aot_eager: eval and train, and eval again from a warm compile cache."""
    out = tmp_path_factory.mktemp("dynamo_stats")
    common = ["--suite-name=faults", "-k", "^graph_break$", "--accelerator=cpu", "--xla=None", "--dynamo=aot_eager",
              "--repeat=2", "--warmup=1", f"--output-dirname={out}"]
    run_runner(*common, "--test=eval", "--test=train", check_rc=0)
    run_runner(*common, "--test=eval", "--compile-cache=warm", check_rc=0)
    found = read_jsonl(out / "results.jsonl")
    assert [r["status"] for r in found] == ["ok"] * 3, [r.get("error") for r in found]
    return out, found


@pytest.mark.integration
def test_every_record_says_why_and_where_the_graph_broke(sweep):
    _, found = sweep
    for record in found:
        stats = record["dynamo_stats"]
        assert stats["graph_breaks"] == 1 and stats["graph_break_reasons_omitted"] == 0
        counted = next(e for e in stats["graph_break_reasons"] if e["reason"] == "Data-dependent branching")
        # The user's frame: the model's `if y.sum() > 0` line; once, even after a warm cache's untimed fill.
        path, line = counted["where"].rsplit(":", 1)
        assert os.path.basename(path) == "faults_models.py" and counted["count"] == 1
        with open(path) as source:
            assert "if y.sum() > 0" in source.read().splitlines()[int(line) - 1]
        assert "data-dependent branching" in counted["explanation"]


@pytest.mark.integration
def test_every_record_has_its_compile_seconds_by_phase(sweep):
    _, found = sweep
    for record in found:
        phases = record["dynamo_stats"]["compile_seconds_by_phase"]
        assert 0 < phases["backend_compile"] <= phases["entire_frame_compile"] <= phases["total_wall_time"]
        assert "inductor_compile" not in phases  # aot_eager: no Inductor
        functions = record["dynamo_stats"]["compile_seconds_by_function"]
        assert functions["_compile.compile_inner"] == phases["entire_frame_compile"]
        # The first warm-up run holds the compile: it took at least what dynamo timed.
        assert record["metrics"]["warmup_time"][0] >= phases["entire_frame_compile"]
    train = next(r for r in found if r["experiment"]["test"] == "train")
    phases = train["dynamo_stats"]["compile_seconds_by_phase"]
    assert phases["entire_backward_compile"] > 0
    assert phases["total_wall_time"] == pytest.approx(phases["entire_frame_compile"] + phases["entire_backward_compile"],
                                                      abs=2e-6)


@pytest.mark.integration
def test_the_analyzer_shows_them_in_its_columns(sweep, tmp_path):
    out, found = sweep
    run_tool("result_analyzer.py", f"--output-dirname={out}", "-o", str(tmp_path / "report.csv"), check_rc=0)
    with open(tmp_path / "report.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(found)
    for row, record in zip(rows, found):
        assert "Data-dependent branching @ faults_models.py:" in row["graph_break_reasons"]
        phases = record["dynamo_stats"]["compile_seconds_by_phase"]
        assert float(row["compile_s_total"]) == phases["total_wall_time"]
        assert float(row["compile_s_backend"]) == phases["backend_compile"]
        # no Inductor here: those phase columns are empty in every row, so the report leaves them out
        assert row.get("compile_s_inductor", "") == row.get("compile_s_code_gen", "") == ""
