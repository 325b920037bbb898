"""result_analyzer.py --output-format=oss-benchmark: PyTorch OSS benchmark database rows (as TorchAO's CI
uploads them), whose required keys and types hold, and from which a dashboard-style reader (group by benchmark
name, model and metric) recovers each record's numbers."""

import json
import statistics

import pytest

from helpers import GOLDEN, call_tool

FIXTURES = GOLDEN
OURS = FIXTURES / "ours_cpu.jsonl"
UPSTREAM = FIXTURES / "upstream_v100.jsonl"


def oss_rows(*args) -> tuple:
    result = call_tool("result_analyzer.py", *args, "--output-format=oss-benchmark", "--output=-", check_rc=0)
    return json.loads(result.stdout), result.stderr


def records_of(path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def backend(experiment: dict) -> str:
    from benchmarks.config.experiment_config import backend_name

    return backend_name(experiment.get("xla"), experiment.get("dynamo"))


def test_every_row_has_the_schemas_keys_and_types():
    rows, _ = oss_rows(OURS, "--baseline=eager")
    assert rows
    for row in rows:
        assert set(row) == {"benchmark", "model", "metric", "runners", "dependencies", "schema_version", "timestamp"}
        bench, model, metric = row["benchmark"], row["model"], row["metric"]
        assert isinstance(bench["name"], str) and bench["mode"] in ("inference", "training")
        assert isinstance(bench["dtype"], str) and isinstance(bench["extra_info"], dict)
        assert isinstance(model["name"], str) and model["type"] in ("model", "microbenchmark") and model["backend"]
        assert isinstance(model["origins"], list) and all(isinstance(o, str) for o in model["origins"])
        assert isinstance(metric["name"], str) and isinstance(metric["target_value"], (int, float))
        assert metric["benchmark_values"] and all(isinstance(v, (int, float)) for v in metric["benchmark_values"])
        assert isinstance(row["runners"], list) and row["runners"][0]["name"] == bench["extra_info"]["accelerator"]
        assert isinstance(row["dependencies"], dict)
        assert {"accelerator", "xla", "dynamo", "test", "batch_size", "backend"} <= set(bench["extra_info"])


def test_a_dashboard_reader_recovers_every_records_numbers():
    rows, stderr = oss_rows(OURS, "--baseline=eager")
    # What a dashboard does: one series per (benchmark, model, metric, config).
    series = {}
    for row in rows:
        info = row["benchmark"]["extra_info"]
        key = (row["benchmark"]["name"], row["model"]["name"], row["metric"]["name"], info["backend"], info["test"],
               json.loads(info["batch_size"]), info["accelerator_model"], json.loads(info["timestamp"]))
        assert key not in series, key  # one row per record and metric
        series[key] = row["metric"]["benchmark_values"]
    ok = [r for r in records_of(OURS) if r.get("status") == "ok"]
    failed = len(records_of(OURS)) - len(ok)
    assert f"{failed} record(s) left out" in stderr
    for record in ok:
        exp = record["experiment"]
        key = ("ptbench-matrix dummy", record["model"]["model_name"], "per_iter_time_ms", backend(exp), exp["test"],
               exp["batch_size"], exp["accelerator_model"], record["timestamp"])
        assert series[key] == pytest.approx([v * 1e3 for v in record["metrics"]["per_iter_time"]])
        if backend(exp) != "eager":
            base = [r for r in ok if r["model"] == record["model"] and backend(r["experiment"]) == "eager"
                    and r["experiment"]["test"] == exp["test"] and r["timestamp"] == record["timestamp"]
                    and r["experiment"]["accelerator_model"] == exp["accelerator_model"]]
            speedup = series.get(key[:2] + ("speedup",) + key[3:])
            if base:
                expected = statistics.median(base[0]["metrics"]["per_iter_time"]) / statistics.median(
                    record["metrics"]["per_iter_time"])
                assert speedup == pytest.approx([expected])
            else:
                assert speedup is None  # no baseline in that run: no speedup row, rather than a wrong one
    compile_rows = [k for k in series if k[2] == "compile_time_s"]
    assert len(compile_rows) == len(ok)  # every record of ours has a warm-up


def test_upstream_records_skip_their_compiling_first_sample():
    rows, _ = oss_rows(UPSTREAM)
    upstream = [r for r in records_of(UPSTREAM) if isinstance(r.get("metrics"), dict)
                and isinstance(r["metrics"].get("per_iter_time"), list) and len(r["metrics"]["per_iter_time"]) > 1
                and "error" not in r["metrics"]]
    record = upstream[0]
    match = [r for r in rows if r["model"]["name"] == record["model"]["model_name"]
             and r["metric"]["name"] == "per_iter_time_ms" and json.loads(r["benchmark"]["extra_info"]["timestamp"])
             == record["timestamp"] and r["benchmark"]["extra_info"]["backend"] == backend(record["experiment"])]
    assert match and match[0]["metric"]["benchmark_values"] == pytest.approx(
        [v * 1e3 for v in record["metrics"]["per_iter_time"][1:]])


def test_microbenchmarks_report_tflops_and_the_machine_and_versions(tmp_path):
    record = records_of(OURS)[0]
    record.update(model={"suite_name": "microbench", "model_name": "matmul-float32-64x64x64"},
                  metrics=dict(record["metrics"], tflops=[0.5, 0.6]))
    record["experiment"]["dtype"] = "float32"
    record["environment"] = {"hostname": "box", "cpu_model": "CPU X", "cpu_count": 8, "gpu_names": ["GPU Y"],
                             "torch": "2.9.1", "torch_xla": "2.9.0", "torchvision": "0.24.1", "git_commit": "abc"}
    path = tmp_path / "micro.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    out = tmp_path / "rows.json"
    call_tool("result_analyzer.py", path, "--output-format=oss-benchmark", f"--output={out}", check_rc=0)
    rows = json.loads(out.read_text(encoding="utf-8"))
    tflops = [r for r in rows if r["metric"]["name"] == "tflops"]
    assert len(tflops) == 1 and tflops[0]["metric"]["benchmark_values"] == [0.5, 0.6]
    assert tflops[0]["model"]["type"] == "microbenchmark" and tflops[0]["benchmark"]["dtype"] == "float32"
    assert tflops[0]["runners"][0]["cpu_info"] == "CPU X" and tflops[0]["runners"][0]["gpu_count"] == 1
    assert tflops[0]["dependencies"]["pytorch"] == {"repo": "pytorch/pytorch", "branch": "", "sha": "",
                                                     "version": "2.9.1", "extra_info": {}}
    assert tflops[0]["dependencies"]["ptbench-matrix"]["sha"] == "abc"


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    result = call_tool("result_analyzer.py", tmp_path / "missing.jsonl", "--output-format=oss-benchmark")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
