"""--compile-cache=warm-start (runner/warm_start.py): a config's two children in turn on one compile cache, the
second a fresh process on what the first left; one record with both first runs; its failures, its resume, and what
aggregate's dashboard and compare.py show of it."""

import csv
import io
import os
import signal
import subprocess
import tempfile

import pytest

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing import scratch_dirs
from benchmarks.runner import launcher, result_records, warm_start
from benchmarks.runner.plan import Config
from helpers import PYTHON, ROOT, call_runner, call_tool, processes_mentioning, read_jsonl, run_runner, wait_for

INDUCTOR = ExperimentConfig("cpu", None, "inductor", "eval", compile_cache="warm-start")


def child_record(status="ok", first_run=10.0, phases=None):
    record = {"status": status, "metrics": {"warmup_time": [first_run, 0.1], "per_iter_time": [0.01]}}
    if phases:
        record["dynamo_stats"] = {"compile_seconds_by_phase": phases}
    return record


# ---------------------------------------------------------------- the record's key (fast)


def test_the_summary_holds_both_first_runs_the_saving_and_the_cold_childs_phases():
    phases = {"inductor_compile": 8.0, "entire_frame_compile": 9.5}
    found = warm_start.summary(child_record(first_run=12.0, phases=phases), child_record(first_run=4.5), 20.04, 9.0)
    assert found == {"cold_first_run_seconds": 12.0, "warm_first_run_seconds": 4.5, "saving_seconds": 7.5,
                     "cold_compile_seconds_by_phase": phases, "cold_run_seconds": 20.04, "warm_run_seconds": 9.0}


@pytest.mark.parametrize("warm", [None, child_record("error")])
def test_a_warm_child_that_did_not_end_ok_is_the_failed_half(warm):
    found = warm_start.summary(child_record(first_run=12.0), warm, 20.0, 1.0)
    assert found["failed_half"] == "warm" and found["cold_first_run_seconds"] == 12.0
    assert "saving_seconds" not in found


def test_only_a_dynamo_config_with_the_warm_start_cache_is_a_pair():
    assert warm_start.is_pair(INDUCTOR)
    assert not warm_start.is_pair(INDUCTOR.with_(compile_cache="warm"))
    assert not warm_start.is_pair(INDUCTOR.with_(dynamo=None, compile_cache=None))


def test_the_parent_writes_the_pairs_key_and_says_why_both_children_were_spawned(tmp_path):
    config = Config({"suite_name": "dummy", "model_name": "cnn"}, INDUCTOR)
    pair = {"failed_half": "cold", "cold_run_seconds": 3.0}
    for launch, reason in [("fork", warm_start.LAUNCH_REASON), ("spawn", None)]:
        options = RunOptions(output_dirname=str(tmp_path), launch=launch)
        result = launcher.ChildResult(record=None, returncode=-9, warm_start=pair)
        record = result_records.child_record(config, options, result, str(tmp_path / "x.log"), {})
        assert record["warm_start"] == pair and record["status"] == "crash"
        assert record["environment"]["launch"] == "spawn"
        assert record["environment"].get("launch_reason") == reason  # a fork sweep would have forked it


def test_a_config_by_hand_is_refused_unless_it_is_one_named_half(tmp_path):
    # A warm start is two processes, which a sweep starts: one line, exit 2, nothing written.
    config = ['--model-config={"model_name": "cnn", "suite_name": "dummy"}',
              '--experiment-config={"accelerator": "cpu", "xla": null, "dynamo": "inductor", "test": "eval", '
              '"compile_cache": "warm-start"}', f"--output-dirname={tmp_path}"]
    result = call_runner(*config, check_rc=2)
    assert "compile_cache warm-start runs a config in two processes" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "results.jsonl").exists()


# ---------------------------------------------------------------- real pairs


def compile_cache_dirs() -> set:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("ptbench-compile-cache-")}


@pytest.mark.integration
def test_a_warm_start_compiles_faster_than_a_cold_one_and_the_reports_show_both(tmp_path):
    before = compile_cache_dirs()
    common = ["--suite-name=dummy", "-k", "^cnn$", "--accelerator=cpu", "--xla=None", "--dynamo=inductor",
              "--dynamo=None", "--test=eval", "--repeat=2", "--warmup=1", f"--output-dirname={tmp_path}"]
    run_runner(*common, "--compile-cache=cold", "--compile-cache=warm-start", check_rc=0)
    found = {r["experiment"]["compile_cache"]: r for r in read_jsonl(tmp_path / "results.jsonl")}
    assert sorted(found, key=str) == sorted([None, "cold", "warm-start"], key=str)
    record = found["warm-start"]
    pair = record["warm_start"]
    assert record["status"] == "ok" and "failed_half" not in pair
    # Inductor's compile of the CNN costs seconds here; from the cache the cold child left, much of it is gone.
    assert pair["warm_first_run_seconds"] < pair["cold_first_run_seconds"]
    assert pair["saving_seconds"] > 1.0
    assert pair["cold_compile_seconds_by_phase"]["inductor_compile"] > 0
    assert record["metrics"]["warmup_time"][0] == pair["warm_first_run_seconds"]  # the record is the warm child's
    assert len(record["metrics"]["per_iter_time"]) == 2
    assert record["run_seconds"] >= pair["cold_run_seconds"] + pair["warm_run_seconds"] - 0.01
    assert record["environment"]["launch"] == "spawn" and record["environment"]["launch_reason"]
    log = (tmp_path / "logs" / "cnn" / "cpu-inductor-eval-compile_cache-warm-start.log").read_text()
    assert log.index("[warm start] the cold child") < log.index("[warm start] the warm child")
    assert log.count("\n$ ") + log.startswith("$ ") == 2  # each child's command line
    left = (compile_cache_dirs() - before) & {os.path.basename(p) for p in scratch_dirs.stale()}
    assert not left  # the pair's cache directory went with the pair

    # aggregate's dashboard: the warm-start line's cold and warm compile and the saving, as the record says
    result = call_tool("aggregate.py", str(tmp_path), "--report=dashboard", "--format=csv", check_rc=0)
    rows = {r["compile_cache"]: r for r in csv.DictReader(io.StringIO(result.stdout[2:]))}
    line = rows["warm-start"]
    assert float(line["ColdCompile(s)"]) == pytest.approx(pair["cold_first_run_seconds"], abs=0.01)
    assert float(line["WarmCompile(s)"]) == pytest.approx(pair["warm_first_run_seconds"], abs=0.01)
    assert float(line["CompileSaving(s)"]) == pytest.approx(pair["saving_seconds"], abs=0.01)
    assert rows["cold"]["ColdCompile(s)"] == ""

    # compare: the cold config against the warm start's, by the first run (the metric word `compile`)
    result = call_tool("compare.py", str(tmp_path), "--pair", "compile_cache=cold:warm-start", "--metric=compile",
                       "--format=csv")
    assert result.returncode in (0, 1), result.stderr
    (row,) = [r for r in csv.DictReader(io.StringIO(result.stdout)) if r["model_name"] == "cnn"]
    assert float(row["control_median"]) == pytest.approx(found["cold"]["metrics"]["warmup_time"][0], rel=1e-3)
    assert float(row["treatment_median"]) == pytest.approx(pair["warm_first_run_seconds"], rel=1e-3)

    resumed = run_runner(*common, "--compile-cache=cold", "--compile-cache=warm-start", check_rc=0)
    assert "nothing to run" in resumed.stderr and len(read_jsonl(tmp_path / "results.jsonl")) == 3


FAULTS = ["--suite-name=faults", "--accelerator=cpu", "--xla=None", "--test=eval", "--repeat=1", "--warmup=1",
          "--subprocess-timeout=15", "--compile-cache=warm-start"]


@pytest.mark.integration
def test_a_cold_child_that_fails_is_the_record_and_no_warm_child_runs(tmp_path):
    run_runner(*FAULTS, "--dynamo=aot_eager", "-k", "^hang$|^raise_on_load$", f"--output-dirname={tmp_path}",
               check_rc=1)
    records = {r["model"]["model_name"]: r for r in read_jsonl(tmp_path / "results.jsonl")}
    assert records["hang"]["status"] == "timeout" and records["raise_on_load"]["status"] == "error"
    for name, record in records.items():
        assert record["warm_start"]["failed_half"] == "cold", name
        log = (tmp_path / record["error"]["log"]).read_text()
        assert "the cold child" in log and "the warm child" not in log
    assert processes_mentioning(str(tmp_path)) == []


@pytest.mark.integration
def test_a_sweep_killed_between_the_children_has_no_record_and_resume_runs_both_again(tmp_path):
    args = ["--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=aot_eager",
            "--test=eval", "--repeat=1", "--warmup=1", "--compile-cache=warm-start", f"--output-dirname={tmp_path}"]
    before = compile_cache_dirs()
    parent = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *args], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = tmp_path / "logs" / "mlp" / "cpu-aot_eager-eval-compile_cache-warm-start.log"
    wait_for(lambda: log.exists() and "the warm child" in log.read_text(), 240, "the warm child's start")
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    # the orphaned child notices and takes its group down
    wait_for(lambda: not processes_mentioning(str(tmp_path)), 10, "the children's end")
    assert not (tmp_path / "results.jsonl").exists() or read_jsonl(tmp_path / "results.jsonl") == []
    stale = {os.path.basename(p) for p in scratch_dirs.stale()}
    left = (compile_cache_dirs() - before) & stale  # the killed parent's, collected by the next sweep
    run_runner(*args, check_rc=0)
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "ok" and "failed_half" not in record["warm_start"]
    assert log.read_text().count("[warm start] the cold child") == 2  # both children ran again
    assert not (left & compile_cache_dirs())
