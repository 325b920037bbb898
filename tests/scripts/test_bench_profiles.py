"""scripts/bench/profiles.py's table (fast): per model and backend, the unprofiled sweep's median time per iteration
beside the profiled sweep's (its timed runs) and its profiled runs' own, each as a ratio to the unprofiled one."""

import json

import pytest

from benchmarks.config import experiment_config
from scripts.bench import profiles as bench_profiles


def record(ms, dynamo, profiled_ms=None):
    experiment = experiment_config.ExperimentConfig("cpu", None, dynamo, "eval", batch_size=16)
    metrics = {"per_iter_time": [ms / 1e3] * 3, "total_time": [ms / 1e3] * 3, "warmup_time": [1.0]}
    if profiled_ms is not None:
        metrics["profiled_per_iter_time"] = [profiled_ms / 1e3, 2 * profiled_ms / 1e3, profiled_ms / 1e3]
    return {"model": {"suite_name": "dummy", "model_name": "mlp"}, "experiment": experiment.to_dict(),
            "status": "ok", "warmup": 1, "iterations_per_run": 1, "metrics": metrics}


def test_medians_side_by_side_with_their_ratios(tmp_path):
    unprofiled, profiled = tmp_path / "u.jsonl", tmp_path / "p.jsonl"
    unprofiled.write_text(json.dumps(record(2.0, None)) + "\n" + json.dumps(record(1.0, "inductor")) + "\n")
    profiled.write_text(json.dumps(record(2.1, None, 3.0)) + "\n")  # inductor's profiled config failed: dashes
    rows = [line.split() for line in bench_profiles.table(bench_profiles.medians(str(unprofiled)),
                                                  bench_profiles.medians(str(profiled))).splitlines()[1:]]
    assert rows == [["mlp", "eager", "2.000", "2.100", "1.05x", "3.000", "1.50x"],
                    ["mlp", "inductor", "1.000", "-", "-", "-", "-"]]


def test_the_profiled_sweep_alone_gets_the_profiler_flags():
    options = bench_profiles.parse(["--models", "mlp", "--backends", "eager"])
    assert not set(bench_profiles.PROFILER_FLAGS) & set(bench_profiles.sweep_command("unprofiled", options))
    assert set(bench_profiles.PROFILER_FLAGS) <= set(bench_profiles.sweep_command("profiled", options))


def test_bad_usage_is_one_line_and_exit_2(capsys):
    for argv in (["--backends", "eager,nosuch"], ["--repeat", "2"], ["--models", ","]):
        with pytest.raises(SystemExit) as exit_info:
            bench_profiles.parse(argv)
        assert exit_info.value.code == 2
        assert "error: --" in capsys.readouterr().err.strip().splitlines()[-1]
