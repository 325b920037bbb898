"""scripts/bench/dashboard.py's table (fast): each config against its eager baseline as results/against_eager.py
rules it (eager at the same precision; compile mode and dynamic shapes aside), and dynamo's statistics through
Measurement.dynamo_stat."""

import json

from benchmarks.config import experiment_config
from scripts.bench import dashboard as bench_dashboard


def record(ms, dynamo="inductor", status="ok", breaks=None, **axes):
    axes = dict({"precision": "fp32", "compile_mode": "default" if dynamo else None}, **axes)
    experiment = experiment_config.ExperimentConfig("cpu", None, dynamo, "eval", batch_size=8, **axes)
    out = {"model": {"suite_name": "dummy", "model_name": "mlp"}, "experiment": experiment.to_dict(), "status": status,
           "requested_batch_size": None, "warmup": 1, "iterations_per_run": 1,
           "metrics": {"per_iter_time": [ms / 1e3] * 3, "total_time": [ms / 1e3] * 3, "warmup_time": [0.5]}}
    if dynamo:
        out["dynamo_stats"] = {"graphs": 1 + (breaks or 0), "graph_breaks": breaks or 0, "recompiles": 0}
    if status != "ok":
        out["metrics"] = {"error": "it broke"}
    return out


def test_each_config_is_compared_with_eager_at_its_precision_whatever_its_compile_mode_and_shapes(tmp_path):
    results = tmp_path / "results.jsonl"
    found = [record(2.0, dynamo=None), record(4.0, dynamo=None, precision="bf16"), record(1.0, breaks=2),
             record(1.0, precision="bf16"), record(0.5, dynamic="batch"),
             record(2.0, precision="bf16", compile_mode="max-autotune-no-cudagraphs"),
             record(0, status="crash", dynamic="batch", precision="bf16")]
    results.write_text("".join(json.dumps(r) + "\n" for r in found))
    lines = bench_dashboard.table(str(results)).splitlines()
    assert lines[0].split() == ["model", "test", "backend", "ms/iter", "speedup", "compile", "s", "graphs", "breaks",
                                "recompiles"]
    rows = {line.split()[2]: line.split()[3:] for line in lines[1:]}
    assert rows["eager"][:2] == ["2.000", "1.00x"] and rows["eager[bf16]"][:2] == ["4.000", "1.00x"]
    assert rows["inductor"] == ["1.000", "2.00x", "0.5", "3", "2", "0"]  # compile s: first run - median
    assert rows["inductor[bf16]"][:2] == ["1.000", "4.00x"]  # against eager[bf16], never eager fp32
    assert rows["inductor[batch]"][:2] == ["0.500", "4.00x"]  # eager runs static: still its baseline
    assert rows["inductor[max-autotune-no-cudagraphs,bf16]"][:2] == ["2.000", "2.00x"]
    assert rows["inductor[batch,bf16]"] == ["crash"]


def test_a_torn_last_line_is_skipped(tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps(record(2.0, dynamo=None)) + "\n" + json.dumps(record(1.0))[:40])
    lines = bench_dashboard.table(str(results)).splitlines()
    assert [line.split()[2:5] for line in lines[1:]] == [["eager", "2.000", "1.00x"]]
