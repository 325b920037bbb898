"""compare.py --expected FILE RESULTS by the harness's graph-break rule (check_graph_breaks.py, pytorch#191357;
benchmarks/compare/expected.py): graph_breaks and fallbacks_to_eager must match exactly, a fall failing too until
the file is updated; calls_captured fails only on a drop of more than 5 %; a count the file has no column for is not
checked. Hand-written records against crafted files, one per branch of the rule (fast); then real records of the
faults suite's graph_break and falls_back_to_eager models under aot_eager, whose counts dynamo gave (integration)."""

import csv
import io
import json

import pytest

from helpers import RUN1, apply_update, call_tool, hand_record, read_jsonl, run_runner, run_tool

FULL = "model,config,accuracy,graph_breaks,fallbacks_to_eager,calls_captured"
CONFIG = "a,cpu inductor eval bs2,pass"


def results(path, graph_breaks=2, fallbacks_to_eager=1, calls_captured=100):
    """Model a's eager and Inductor records, the Inductor one with these counts."""
    found = [hand_record("a", None, RUN1, 0.01, 0.02, 8e6),
             hand_record("a", "inductor", RUN1, 0.005, 2.0, 4e6, graph_breaks=graph_breaks,
                         fallbacks_to_eager=fallbacks_to_eager, calls_captured=calls_captured)]
    path.write_text("".join(json.dumps(r) + "\n" for r in found))
    return path


def expected_file(path, header=FULL, line=f"{CONFIG},2,1,100"):
    """A crafted file: the header, eager's line and the Inductor config's (both in the header's columns)."""
    blanks = "," * (header.count(",") - 2)
    path.write_text(f"{header}\na,cpu eager eval bs2,pass{blanks}\n{line}\n")
    return path


def check(tmp_path, name, expected, **counts):
    return call_tool("compare.py", results(tmp_path / f"{name}.jsonl", **counts), "--expected", expected)


def test_write_expected_writes_every_count_and_the_same_results_pass(tmp_path):
    written = tmp_path / "written.csv"
    run = results(tmp_path / "r.jsonl")
    assert call_tool("compare.py", run, "--write-expected", written).returncode == 0
    assert written.read_text().splitlines() == [FULL, "a,cpu eager eval bs2,pass,,,", f"{CONFIG},2,1,100"]
    result = call_tool("compare.py", run, "--expected", written)
    assert result.returncode == 0 and "2 config(s) as expected" in result.stdout


@pytest.mark.parametrize("name, counts, said", [
    ("more_breaks", dict(graph_breaks=3), "graph breaks 2 -> 3"),
    ("fewer_breaks", dict(graph_breaks=1), "graph breaks 2 -> 1 (fewer: an improvement, fails until the file says so)"),
    ("more_fallbacks", dict(fallbacks_to_eager=2), "fallbacks to eager 1 -> 2"),
    ("fewer_fallbacks", dict(fallbacks_to_eager=0),
     "fallbacks to eager 1 -> 0 (fewer: an improvement, fails until the file says so)"),
    ("lost_fallbacks", dict(fallbacks_to_eager=None), "fallbacks to eager 1 -> none"),  # a record without the key
    ("captured_drop", dict(calls_captured=94), "calls captured 100 -> 94 (6% fewer: more than 5%)"),
])
def test_each_failing_branch_names_its_count_and_its_update_lines_make_it_pass(tmp_path, name, counts, said):
    expected = expected_file(tmp_path / "expected.csv")
    failed = check(tmp_path, name, expected, **counts)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert f"a cpu inductor eval bs2: {said}\n" in failed.stdout
    assert f"-{CONFIG},2,1,100\n" in failed.stdout
    apply_update(expected, failed.stdout)
    again = check(tmp_path, name, expected, **counts)
    assert again.returncode == 0, again.stdout


@pytest.mark.parametrize("name, calls", [("same", 100), ("drop_of_5_percent", 95), ("rise", 180)])
def test_calls_captured_passes_a_rise_or_a_drop_of_at_most_5_percent(tmp_path, name, calls):
    result = check(tmp_path, name, expected_file(tmp_path / "expected.csv"), calls_captured=calls)
    assert result.returncode == 0 and "2 config(s) as expected" in result.stdout, result.stdout


def test_every_change_of_a_config_is_named_on_its_one_line(tmp_path):
    failed = check(tmp_path, "all", expected_file(tmp_path / "expected.csv"), graph_breaks=0, fallbacks_to_eager=3,
                   calls_captured=10)
    assert failed.returncode == 1
    assert ("a cpu inductor eval bs2: graph breaks 2 -> 0 (fewer: an improvement, fails until the file says so), "
            "fallbacks to eager 1 -> 3, calls captured 100 -> 10 (90% fewer: more than 5%)") in failed.stdout
    assert f"+{CONFIG},0,3,10\n" in failed.stdout


def test_a_count_the_file_has_no_column_for_is_not_checked(tmp_path):
    """A file of the older header (graph breaks alone) holds only graph breaks; its update lines keep its columns."""
    legacy = expected_file(tmp_path / "legacy.csv", "model,config,accuracy,graph_breaks", f"{CONFIG},2")
    unchecked = check(tmp_path, "unchecked", legacy, fallbacks_to_eager=5, calls_captured=1)
    assert unchecked.returncode == 0 and "2 config(s) as expected" in unchecked.stdout, unchecked.stdout
    failed = check(tmp_path, "breaks", legacy, graph_breaks=4, fallbacks_to_eager=5)
    assert failed.returncode == 1 and "a cpu inductor eval bs2: graph breaks 2 -> 4\n" in failed.stdout
    assert "fallbacks" not in failed.stdout and f"+{CONFIG},4\n" in failed.stdout
    apply_update(legacy, failed.stdout)
    assert check(tmp_path, "breaks", legacy, graph_breaks=4, fallbacks_to_eager=5).returncode == 0
    # Columns in another order, calls_captured alone: only its rule applies.
    captured = expected_file(tmp_path / "captured.csv", "model,config,accuracy,calls_captured", f"{CONFIG},100")
    assert check(tmp_path, "captured_ok", captured, graph_breaks=9, fallbacks_to_eager=9).returncode == 0
    assert check(tmp_path, "captured_drop", captured, calls_captured=50).returncode == 1


def test_a_bad_header_or_count_is_one_line_and_exit_2(tmp_path):
    run = results(tmp_path / "r.jsonl")
    cases = {"unknown": ("model,config,accuracy,graph_breaks,speed", "a,cpu eager eval bs2,pass,,\n", "speed"),
             "twice": ("model,config,accuracy,graph_breaks,graph_breaks", "a,cpu eager eval bs2,pass,,\n", "once each"),
             "text": (FULL, f"{CONFIG},two,1,100\n", "line 2: graph_breaks is 'two', not a count"),
             "negative": (FULL, f"{CONFIG},2,-1,100\n", "line 2: fallbacks_to_eager is '-1'")}
    for name, (header, line, said) in cases.items():
        bad = tmp_path / f"{name}.csv"
        bad.write_text(f"{header}\n{line}")
        result = call_tool("compare.py", run, "--expected", bad)
        assert result.returncode == 2, (name, result.stdout + result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and said in result.stderr, (name, result.stderr)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert call_tool("compare.py", run, "--expected", empty).returncode == 2


# ---------------------------------------------------------------- real records


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """faults graph_break (a data-dependent branch: a graph break, no fallback) and falls_back_to_eager (a graph
    break dynamo can't resume from: a frame run by Python) under aot_eager."""
    out = tmp_path_factory.mktemp("expected_sweep")
    run_runner("--suite-name=faults", "-k", "^(graph_break|falls_back_to_eager)$", "--accelerator=cpu", "--xla=None",
               "--dynamo=aot_eager", "--test=eval", "--repeat=1", "--warmup=1", f"--output-dirname={out}", check_rc=0)
    found = {r["model"]["model_name"]: r for r in read_jsonl(out / "results.jsonl")}
    assert [r["status"] for r in found.values()] == ["ok", "ok"], [r.get("error") for r in found.values()]
    return out / "results.jsonl", found


@pytest.mark.integration
def test_records_count_the_fallbacks_to_eager_and_the_analyzer_shows_them(sweep, tmp_path):
    results_file, found = sweep
    falls, breaks = found["falls_back_to_eager"]["dynamo_stats"], found["graph_break"]["dynamo_stats"]
    # the helper's frame, given up on: a break inlining it and one in its own frame, which Python then runs
    assert (falls["fallbacks_to_eager"], falls["graph_breaks"]) == (1, 2)
    assert breaks["fallbacks_to_eager"] == 0 and breaks["graph_breaks"] == 1
    assert falls["calls_captured"] > 0 and breaks["calls_captured"] > 0
    report = tmp_path / "report.csv"
    run_tool("result_analyzer.py", results_file, "-o", report, check_rc=0)
    rows = {row["model_name"]: row for row in csv.DictReader(io.StringIO(report.read_text()))}
    assert (rows["falls_back_to_eager"]["fallbacks_to_eager"], rows["graph_break"]["fallbacks_to_eager"]) == ("1", "0")
    assert rows["falls_back_to_eager"]["calls_captured"] == str(falls["calls_captured"])


def plant(found: dict, target, model: str, **changes):
    """A copy of the sweep's records with `changes` added to one model's dynamo_stats counts."""
    lines = []
    for name, record in found.items():
        record = json.loads(json.dumps(record))
        if name == model:
            for key, change in changes.items():
                record["dynamo_stats"][key] = change(record["dynamo_stats"][key])
        lines.append(json.dumps(record) + "\n")
    target.write_text("".join(lines))
    return target


@pytest.mark.integration
def test_the_harness_rule_on_real_records(sweep, tmp_path):
    results_file, found = sweep
    expected = tmp_path / "expected.csv"
    run_tool("compare.py", results_file, "--write-expected", expected, check_rc=0)
    calls = found["falls_back_to_eager"]["dynamo_stats"]["calls_captured"]
    assert expected.read_text().splitlines()[0] == FULL
    assert any(line.startswith("falls_back_to_eager,cpu aot_eager eval bs4,") and line.endswith(f",2,1,{calls}")
               for line in expected.read_text().splitlines()), expected.read_text()
    run_tool("compare.py", results_file, "--expected", expected, check_rc=0)
    failing = {"fallback_won": dict(fallbacks_to_eager=lambda n: n - 1),  # a win fails too
               "fallback_added": dict(fallbacks_to_eager=lambda n: n + 1),
               "captured_halved": dict(calls_captured=lambda n: n // 2)}
    for name, changes in failing.items():
        planted = plant(found, tmp_path / f"{name}.jsonl", "falls_back_to_eager", **changes)
        failed = run_tool("compare.py", planted, "--expected", expected, check_rc=1)
        assert "falls_back_to_eager cpu aot_eager eval bs4: " in failed.stdout and "graph_break " not in failed.stdout
        updated = tmp_path / f"{name}.csv"
        updated.write_text(expected.read_text())
        apply_update(updated, failed.stdout)
        run_tool("compare.py", planted, "--expected", updated, check_rc=0)
    more = plant(found, tmp_path / "more.jsonl", "falls_back_to_eager", calls_captured=lambda n: n + 1)
    run_tool("compare.py", more, "--expected", expected, check_rc=0)  # more captured: no failure
