"""The dashboard and the CI gates on a real sweep: real children (the dummy mlp, eager, Inductor and torch's
accuracy-error test backend, --verify) whose dashboard has a row per backend with its figures, and whose
expected-results file catches a planted pass -> fail_accuracy and an added graph break."""

import csv
import io
import json

import pytest

from helpers import apply_update, read_jsonl, run_runner, run_tool

WRONG = "relu_accuracy_error_TESTING_ONLY"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("dashboard_sweep")
    # The accuracy-error backend's config runs and fails verification: its record's verdict fails, so the
    # sweep exits 1 (every record written all the same).
    run_runner("--accelerator=cpu", "--repeat=2", "--warmup=1", "--verify", "--xla=None", "--dynamo=None",
               "--dynamo=inductor", f"--dynamo={WRONG}", "--test=eval", "-k", "^mlp$", f"--output-dirname={out}",
               check_rc=1)
    return out / "results.jsonl"


@pytest.mark.integration
def test_the_dashboard_of_a_real_sweep_has_a_row_per_backend(sweep):
    result = run_tool("aggregate.py", sweep, "--report=dashboard", "--format=csv", check_rc=0)
    rows = {r["Backend"]: r for r in csv.DictReader(io.StringIO(result.stdout[2:]))}
    assert set(rows) == {"Eager", "Inductor", WRONG}
    eager, inductor, wrong = rows["Eager"], rows["Inductor"], rows[WRONG]
    assert (eager["Passed"], eager["Total"], inductor["Passed"], inductor["Total"]) == ("1", "1", "1", "1")
    assert float(inductor["GeomeanSpeedup"]) > 0
    assert float(inductor["CompileLatency(s)"]) > 0  # Inductor's first run compiles; eager's does not
    assert float(inductor["CompressionRatio"]) > 0 and float(inductor["PeakMemory(MiB)"]) > 0
    # The failing backend counts in its denominator, is listed by status, and has no figures.
    assert (wrong["Passed"], wrong["Total"], wrong["NotPassed"]) == ("0", "1", "fail_accuracy: mlp")
    assert wrong["GeomeanSpeedup"] == wrong["CompileLatency(s)"] == ""
    table = run_tool("aggregate.py", sweep, "--report=dashboard", "--format=tab", check_rc=0)
    assert "fail_accuracy: mlp" in table.stdout


def plant(source, target, **changes) -> None:
    """A copy of the sweep whose Inductor record has `changes` (a new accuracy, more graph breaks)."""
    found = read_jsonl(source)
    for record in found:
        if record["experiment"]["dynamo"] == "inductor":
            if "accuracy" in changes:
                record["accuracy"] = changes["accuracy"]
            if "graph_breaks" in changes:
                record["dynamo_stats"]["graph_breaks"] += changes["graph_breaks"]
    target.write_text("".join(json.dumps(r) + "\n" for r in found))


@pytest.mark.integration
def test_the_expected_results_gate_on_a_real_sweep(sweep, tmp_path):
    expected = tmp_path / "expected.csv"
    run_tool("compare.py", sweep, "--write-expected", expected, check_rc=0)
    lines = expected.read_text().splitlines()
    # graph breaks, fallbacks to eager, calls captured; none for eager
    assert any(line.startswith(f"mlp,cpu {WRONG} eval bs16,fail_accuracy,0,0,") for line in lines), lines
    assert "mlp,cpu eager eval bs16,pass,,," in lines
    assert "3 config(s) as expected" in run_tool("compare.py", sweep, "--expected", expected, check_rc=0).stdout
    for name, change, said in (("accuracy", {"accuracy": "fail_accuracy"}, "accuracy pass -> fail_accuracy"),
                               ("breaks", {"graph_breaks": 1}, "graph breaks 0 -> 1")):
        planted = tmp_path / f"{name}.jsonl"
        plant(sweep, planted, **change)
        failed = run_tool("compare.py", planted, "--expected", expected, check_rc=1)
        assert f"mlp cpu inductor eval bs16: {said}" in failed.stdout
        gate = "accuracy" if name == "accuracy" else "graph-breaks"
        run_tool("compare.py", sweep, planted, "--fail-on", gate, check_rc=1)
        updated = tmp_path / f"{name}.csv"
        updated.write_text(expected.read_text())
        apply_update(updated, failed.stdout)
        run_tool("compare.py", planted, "--expected", updated, check_rc=0)
