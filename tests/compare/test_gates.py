"""compare.py's gates (accuracy pass -> anything else, graph breaks and recompiles up, compression ratio and
compile latency past a relative limit, chosen by --fail-on) and --expected FILE RESULTS (a committed CSV of
model, config, accuracy, dynamo's counts): failing on a planted change, passing when unchanged, and its printed
update lines making it pass. Hand-written records; the real sweep is in tests/end_to_end/test_dashboard_sweep.py,
the harness's rule for each count in tests/compare/test_expected.py."""

import json

from helpers import RUN1, RUN2, apply_update, call_tool, hand_record

def run_compare(*args):
    return call_tool("compare.py", *args)


def side(path, timestamp, **inductor):
    """eager and inductor records of models a and b; `inductor` overrides model a's inductor record's fields."""
    found = []
    for model in ("a", "b"):
        found.append(hand_record(model, None, timestamp, 0.010, 0.02, 8e6))
        fields = dict(per_iter=0.005, first_run=2.0, peak=4e6, accuracy="pass", graph_breaks=0, recompiles=0)
        if model == "a":
            fields.update(inductor)
        found.append(hand_record(model, "inductor", timestamp, **fields))
    path.write_text("".join(json.dumps(r) + "\n" for r in found))
    return path


def gates_of(result) -> dict:
    rows = json.loads(result.stdout)["rows"]
    return {(r["model_name"], r["experiment"]["dynamo"]): r["gates"] for r in rows}


def test_each_gate_is_found_and_fail_on_selects_which_fail(tmp_path):
    control = side(tmp_path / "control.jsonl", RUN1)
    cases = {"accuracy": dict(accuracy="fail_accuracy"), "graph-breaks": dict(graph_breaks=2),
             "recompiles": dict(recompiles=1),
             "compression": dict(peak=6e6),  # 8/4 = 2.0 -> 8/6 = 1.33: past 10%
             "compile-latency": dict(first_run=2.5)}  # 1.98 s -> 2.48 s: past 10%
    for gate, change in cases.items():
        treatment = side(tmp_path / f"{gate}.jsonl", RUN2, **change)
        result = run_compare(control, treatment, "--format=json", "--fail-on", "none")
        assert result.returncode == 0, result.stderr
        found = gates_of(result)
        assert found[("a", "inductor")] == [gate], (gate, found)
        assert found[("b", "inductor")] == [] and found[("a", None)] == []
        failing = run_compare(control, treatment, "--fail-on", gate)
        assert failing.returncode == 1, failing.stdout + failing.stderr
        assert f"+{gate}" in failing.stdout  # the table names the gate beside the verdict
        # Another gate chosen: this change does not fail it.
        other = "recompiles" if gate != "recompiles" else "graph-breaks"
        assert run_compare(control, treatment, "--fail-on", other).returncode == 0


def test_limits_are_relative_and_settable(tmp_path):
    control = side(tmp_path / "control.jsonl", RUN1)
    small = side(tmp_path / "small.jsonl", RUN2, peak=4.2e6, first_run=2.1)  # -4.8% compression, +5% latency
    result = run_compare(control, small, "--format=json", "--fail-on", "compression,compile-latency")
    assert result.returncode == 0 and gates_of(result)[("a", "inductor")] == []
    strict = run_compare(control, small, "--format=json", "--fail-on", "compression,compile-latency",
                         "--compression-limit=2%", "--compile-latency-limit", "0.02")
    assert strict.returncode == 1 and gates_of(strict)[("a", "inductor")] == ["compression", "compile-latency"]


def test_an_unknown_gate_is_one_line_and_exit_2(tmp_path):
    control = side(tmp_path / "control.jsonl", RUN1)
    result = run_compare(control, control, "--fail-on", "accuracy,speed")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and "speed" in result.stderr


def test_expected_file_fails_on_planted_changes_and_its_update_lines_make_it_pass(tmp_path):
    expected = tmp_path / "expected.csv"
    baseline = side(tmp_path / "base.jsonl", RUN1)
    written = run_compare(baseline, "--write-expected", expected)
    assert written.returncode == 0, written.stderr
    assert expected.read_text().splitlines()[:3] == [
        "model,config,accuracy,graph_breaks,fallbacks_to_eager,calls_captured", "a,cpu eager eval bs2,pass,,,",
        "a,cpu inductor eval bs2,pass,0,,"]  # these records have no fallbacks_to_eager or calls_captured
    unchanged = run_compare(baseline, "--expected", expected)
    assert unchanged.returncode == 0 and "4 config(s) as expected" in unchanged.stdout
    for name, change, said in (("accuracy", dict(accuracy="fail_accuracy"), "accuracy pass -> fail_accuracy"),
                               ("breaks", dict(graph_breaks=1), "graph breaks 0 -> 1")):
        planted = side(tmp_path / f"{name}.jsonl", RUN2, **change)
        failed = run_compare(planted, "--expected", expected)
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert f"a cpu inductor eval bs2: {said}" in failed.stdout
        updated = tmp_path / f"{name}.csv"
        updated.write_text(expected.read_text())
        apply_update(updated, failed.stdout)
        again = run_compare(planted, "--expected", updated)
        assert again.returncode == 0, again.stdout


def test_expected_file_bad_input_is_one_line_and_exit_2(tmp_path):
    results = side(tmp_path / "r.jsonl", RUN1)
    bad = tmp_path / "bad.csv"
    bad.write_text("name,status\n")
    for args in (("--expected", tmp_path / "missing.csv"), ("--expected", bad),
                 ("--expected", bad, "--write-expected", tmp_path / "x.csv")):
        result = run_compare(results, *args)
        assert result.returncode == 2, result.stdout + result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert "--write-expected" in run_compare(results, "--expected", tmp_path / "missing.csv").stderr
