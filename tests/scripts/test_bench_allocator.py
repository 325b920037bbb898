"""scripts/bench/allocator.py's table (fast): one row per model, backend and allocator policy, over the processes
(rounds) of each config: the spread of their medians, their faults, and the speedup against eager under the same
policy (never another's)."""

import json

import pytest

from benchmarks.config import experiment_config
from scripts.bench import allocator as bench_allocator


def record(ms, dynamo, policy, faults, round_=0):
    experiment = experiment_config.ExperimentConfig("cpu", None, dynamo, "eval", batch_size=8, allocator=policy)
    return {"model": {"suite_name": "timm", "model_name": "mobilenetv2_100"}, "experiment": experiment.to_dict(),
            "status": "ok", "round": round_, "warmup": 1, "iterations_per_run": 1,
            "metrics": {"per_iter_time": [ms / 1e3] * 3, "total_time": [ms / 1e3] * 3, "warmup_time": [1.0],
                        "minor_faults_per_iter": [faults] * 3}}


def test_spread_faults_and_speedup_per_policy(tmp_path):
    results = tmp_path / "results.jsonl"
    found = [record(100, None, "system", 9409, 0), record(120, None, "system", 9409, 1),
             record(80, None, "glibc", 0, 0), record(82, None, "glibc", 0, 1),
             record(50, "inductor", "system", 4000, 0), record(200, "inductor", "system", 4000, 1),
             record(40, "inductor", "glibc", 1, 0), record(41, "inductor", "glibc", 1, 1)]
    results.write_text("".join(json.dumps(r) + "\n" for r in found))
    table = bench_allocator.table(bench_allocator.per_process(str(results)))
    rows = {tuple(line.split()[1:3]): line.split() for line in table.splitlines()[1:]}
    assert rows[("eager", "system")][3:6] == ["2", "100.00-120.00", "(median"] and rows[("eager", "system")][7] == "20%"
    assert rows[("inductor", "system")][7:] == ["300%", "4,000", "0.88x"]  # 110 / 125: system's eager, not glibc's
    assert rows[("inductor", "glibc")][7:] == ["2%", "1", "2.00x"]  # 81 / 40.5
    assert rows[("eager", "glibc")][8] == "0" and len(rows[("eager", "glibc")]) == 9  # eager: no speedup


def test_bad_usage_is_one_line_and_exit_2(capsys):
    for argv in (["--models", "mobilenetv2_100"], ["--allocators", "glibc,nosuch"], ["--rounds", "1"]):
        with pytest.raises(SystemExit) as exit_info:
            bench_allocator.parse(argv)
        assert exit_info.value.code == 2
        assert "error: --" in capsys.readouterr().err.strip().splitlines()[-1]
