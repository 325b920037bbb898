"""aggregate.py pools the records of one config in one run (its --rounds rounds, a resumed sweep's records):
their samples together, as separate processes of the same measurement. Fast: synthetic files."""

import json

import numpy as np

from helpers import call_tool


def record(samples, round_=0, status="ok", dynamo=None, timestamp=100.0):
    metrics = {"warmup_time": [0.5], "total_time": samples, "per_iter_time": samples}
    out = {"model": {"suite_name": "dummy", "model_name": "mlp"},
           "experiment": {"accelerator": "cpu", "accelerator_model": "CPU", "xla": None, "xla_flags": None,
                          "dynamo": dynamo, "torch_xla2": None, "test": "eval", "batch_size": 8,
                          "enable_functionalization": False},
           "repeat": len(samples), "iterations_per_run": 1, "metrics": metrics, "timestamp": timestamp,
           "verification_code": "VERIFIER_SKIPPED", "status": status, "warmup": 1, "round": round_}
    if status != "ok":
        out["metrics"] = {"error": "RuntimeError: boom"}
        out["error"] = {"type": "RuntimeError", "message": "boom", "phase": "run"}
    return out


def inductor_speedups(tmp_path, found: list, *args) -> list:
    """The speedup report's Inductor-over-eager speedup of each run."""
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in found))
    result = call_tool("aggregate.py", path, "--accelerator=cpu", "--report=speedup", "--format=csv",
                      "--backends", "eager", "inductor", *args, check_rc=0)
    return [float(line.split(",")[3]) for line in result.stdout.splitlines() if not line.startswith("#")]


def test_the_rounds_of_a_config_are_pooled(tmp_path):
    eager = [record([0.010, 0.011, 0.012], 0), record([0.020, 0.021, 0.022], 1), record([0.030, 0.031], 2)]
    inductor = [record([0.005] * 3, r, dynamo="inductor") for r in range(3)]
    pooled = np.median([0.010, 0.011, 0.012, 0.020, 0.021, 0.022, 0.030, 0.031])
    # The pooled eager median over inductor's (the last record alone would give 0.0305 / 0.005 = 6.1).
    assert inductor_speedups(tmp_path, eager + inductor) == [round(pooled / 0.005, 8)]


def test_a_failed_round_does_not_hide_the_others(tmp_path):
    eager = [record([0.010] * 3, 0), record([0.010] * 3, 1, status="crash")]
    inductor = [record([0.005] * 3, 0, dynamo="inductor"), record([0.005] * 3, 1, dynamo="inductor")]
    assert inductor_speedups(tmp_path, eager + inductor) == [2.0]


def test_other_runs_are_not_pooled(tmp_path):
    eager = [record([0.010] * 3, timestamp=100.0), record([0.020] * 3, timestamp=200.0)]
    inductor = [record([0.005] * 3, dynamo="inductor", timestamp=100.0),
                record([0.005] * 3, dynamo="inductor", timestamp=200.0)]
    # Each run on its own: eager of the newest run alone is the latest baseline.
    assert inductor_speedups(tmp_path, eager + inductor, "--baseline=latest") == [4.0, 4.0]
