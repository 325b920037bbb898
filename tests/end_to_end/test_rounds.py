"""--rounds R: each config R times, each in a fresh child, interleaved; resume counts rounds; the analyzer
keeps one row per record with its round; aggregate pools the rounds. Then a real A/B on this machine:
compare.py on two sweeps of the dummy models at two settings, each with --rounds."""

import csv
import json

import pytest

from helpers import read_jsonl, run_runner, run_tool

pytestmark = pytest.mark.integration

SWEEP = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "-k", "^(mlp|cnn)$", "--repeat=5",
         "--warmup=1"]


@pytest.fixture(scope="module")
def control(tmp_path_factory):
    """Two rounds, then resumed with --rounds 3: one more round each."""
    out = tmp_path_factory.mktemp("control")
    first = run_runner(*SWEEP, "--rounds=2", f"--output-dirname={out}", check_rc=0)
    after_two = read_jsonl(out / "results.jsonl")
    # Resumed as the sweep says (its own timestamp): the third round belongs to the same run.
    again = run_runner(*SWEEP, "--rounds=3", f"--output-dirname={out}", f"--timestamp={after_two[0]['timestamp']}",
                       check_rc=0)
    return out, first, after_two, again, read_jsonl(out / "results.jsonl")


@pytest.fixture(scope="module")
def treatment(tmp_path_factory):
    """The same configs with 4 iterations per timed run: another setting, the same configs."""
    out = tmp_path_factory.mktemp("treatment")
    run_runner(*SWEEP, "--rounds=2", "--iterations-per-run=4", f"--output-dirname={out}", check_rc=0)
    return out, read_jsonl(out / "results.jsonl")


def test_rounds_interleave_each_in_its_own_child_and_record(control):
    out, first, after_two, _, _ = control
    assert [(r["model"]["model_name"], r["round"]) for r in after_two] == [("mlp", 0), ("cnn", 0), ("mlp", 1),
                                                                          ("cnn", 1)]
    assert all(r["status"] == "ok" for r in after_two)
    assert len({r["timestamp"] for r in after_two}) == 1  # one sweep
    # Each round is its own child: its own log (and its own process id in it).
    logs = sorted(p.name for p in (out / "logs" / "mlp").iterdir())
    assert logs == ["cpu-eager-eval.log", "cpu-eager-eval.round1.log", "cpu-eager-eval.round2.log"]
    assert "round 1" in first.stderr


def test_resume_counts_rounds(control):
    _, _, after_two, again, final = control
    added = final[len(after_two):]
    # The third round only; its configs ordered longest first by their earlier run times (run_seconds).
    assert sorted((r["model"]["model_name"], r["round"]) for r in added) == [("cnn", 2), ("mlp", 2)]
    assert "4 already" in again.stderr or "4 already" in again.stdout
    assert len({r["timestamp"] for r in final}) == 1
    rerun = run_runner(*SWEEP, "--rounds=3", f"--output-dirname={control[0]}", check_rc=0)
    assert len(read_jsonl(control[0] / "results.jsonl")) == 6, rerun.stderr  # nothing left to run


def test_the_analyzer_keeps_a_row_per_round(control, tmp_path):
    out = control[0]
    run_tool("result_analyzer.py", out / "results.jsonl", f"--output-dirname={tmp_path}", check_rc=0)
    with open(tmp_path / "metric_report.csv") as handle:
        rows = list(csv.DictReader(handle))
    # One row per record in file order; within the resumed round the longest config went first (run_seconds).
    assert [row["round"] for row in rows] == ["0", "0", "1", "1", "2", "2"]
    assert all({row["model_name"] for row in rows if row["round"] == r} == {"mlp", "cnn"} for r in "012")


def test_aggregate_pools_the_rounds(control):
    out, _, _, _, final = control
    result = run_tool("aggregate.py", out / "results.jsonl", "--accelerator=cpu", "--report=latest", "--format=csv",
                      "--log-level=info", check_rc=0)
    assert "4 record(s) pooled" in result.stderr


def test_a_real_ab_comparison(control, treatment, tmp_path):
    control_dir, treatment_dir = control[0], treatment[0]
    result = run_tool("compare.py", control_dir, treatment_dir, "--format=json", "--fail-on=none", check_rc=0)
    report = json.loads(result.stdout)
    assert sorted(row["model_name"] for row in report["rows"]) == ["cnn", "mlp"]
    for row in report["rows"]:
        assert row["control"]["n_processes"] == 3 and row["treatment"]["n_processes"] == 2
        assert row["control"]["n_samples"] == 15 and row["treatment"]["n_samples"] == 10
        assert row["ci"][0] <= row["time_ratio"] <= row["ci"][1]
        assert row["verdict"] in ("slower", "faster", "same", "unsure")
    assert report["geomean"]["n_configs"] == 2
    table = run_tool("compare.py", control_dir, treatment_dir, f"--plot={tmp_path / 'ab.svg'}")
    assert table.returncode in (0, 1) and "geomean ratio" in table.stdout
    assert (tmp_path / "ab.svg").read_text().lstrip().startswith("<?xml")
