"""do_bench on the CPU (samples, statistics, budget, count, sync) and --pure-wall-time: dropped with its
reason for configs without CUDA, and a clear error record when a child is asked anyway."""

import argparse
import statistics
import time

import pytest


from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities

from benchmarks.child import precise_timing
from benchmarks.config import pure_wall_time
from helpers import call_runner, read_jsonl, run_runner

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover - torch is part of the environment
    HAS_CUDA = False


def sleeper(seconds):
    def fn():
        time.sleep(seconds)
        return seconds

    return fn


def test_samples_hold_every_timed_call_and_the_statistic_is_theirs():
    for name, reduce in (("min", min), ("median", statistics.median), ("mean", statistics.fmean)):
        result = precise_timing.do_bench(sleeper(0.002), warmup=0.005, budget=0.03, statistic=name)
        assert result.clock == "perf_counter_ns" and result.statistic == name
        assert len(result.samples) >= 2 and all(s >= 0.002 for s in result.samples)
        assert result.value == pytest.approx(reduce(result.samples))
        assert result.warmup_calls >= 2  # the first call plus at least one warm-up call
        assert result.output == 0.002


def test_time_budget_is_honoured():
    started = time.perf_counter()
    result = precise_timing.do_bench(sleeper(0.005), warmup=0.0, budget=0.05)
    elapsed = time.perf_counter() - started
    # Each call takes >= 5 ms however busy the machine, so a 50 ms budget admits at most 10 calls: the loop stops
    # once it is spent. (How much of it the calls fill depends on the machine's load: not asserted.)
    assert 1 <= len(result.samples) <= 10 and all(sample >= 0.005 for sample in result.samples)
    assert sum(result.samples) <= elapsed  # the samples are timed inside the call


def test_count_limit_stops_before_the_budget_and_min_calls_outlasts_it():
    result = precise_timing.do_bench(sleeper(0.001), warmup=0.0, budget=60.0, max_calls=3)
    assert len(result.samples) == 3  # a 60 s budget of 1 ms calls would give thousands
    result = precise_timing.do_bench(sleeper(0.001), warmup=0.0, budget=1e-9, min_calls=4)
    assert len(result.samples) == 4


def test_sync_is_called_after_every_call():
    calls = {"fn": 0, "sync": 0}

    def fn():
        calls["fn"] += 1

    def sync():
        calls["sync"] += 1

    result = precise_timing.do_bench(fn, sync, warmup=0.002, budget=0.005)
    assert calls["sync"] == calls["fn"] == result.warmup_calls + len(result.samples)


def test_a_real_matmul_on_the_cpu():
    import torch

    a, b = torch.randn(64, 32), torch.randn(32, 16)
    result = precise_timing.do_bench(lambda: torch.matmul(a, b), budget=0.02, statistic="median")
    assert torch.allclose(result.output, a @ b)
    assert all(s > 0 for s in result.samples) and result.value <= max(result.samples)
    flops = 2 * 64 * 32 * 16
    assert precise_timing.tflops(flops, [result.value]) == [pytest.approx(flops / result.value / 1e12)]


@pytest.mark.parametrize("kwargs", [{"statistic": "p90"}, {"budget": 0}, {"warmup": -1}, {"min_calls": 0},
                                    {"min_calls": 3, "max_calls": 2}])
def test_bad_arguments_are_refused(kwargs):
    with pytest.raises(ValueError):
        precise_timing.do_bench(lambda: None, **kwargs)


@pytest.mark.skipif(HAS_CUDA, reason="this machine has CUDA: the CUDA test below runs instead")
def test_cuda_timing_without_cuda_is_a_clear_error():
    with pytest.raises(precise_timing.PureWallTimeUnsupported, match="needs a CUDA device"):
        precise_timing.do_bench(lambda: None, cuda=True)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_cuda_events_time_the_device():  # pragma: no cover - runs on GPU machines only
    a = torch.randn(1024, 1024, device="cuda")
    result = precise_timing.do_bench(lambda: a @ a, torch.cuda.synchronize, cuda=True, budget=0.05)
    assert result.clock == "cuda_event" and len(result.samples) >= 1 and result.value > 0


def test_pure_wall_time_rules_drop_only_configs_without_cuda():
    configs = matrix.expand({"accelerator": ["cpu", "cuda"], "xla": [None], "dynamo": [None, "inductor"], "test": ["eval"]})
    caps = Capabilities(dynamo_backends=("inductor",), cuda_devices=("NVIDIA A100",), torch_xla_error=None)
    assert pure_wall_time.support_rules(argparse.Namespace(pure_wall_time=False)) == []
    rules = matrix.SUPPORT_RULES + pure_wall_time.support_rules(argparse.Namespace(pure_wall_time=True))
    kept, dropped = matrix.split(configs, caps, rules)
    assert [e.accelerator for e in kept] == ["cuda", "cuda"]
    assert [e.accelerator for e, _ in dropped] == ["cpu", "cpu"]
    assert all("CUDA events" in reason and "without --pure-wall-time" in reason for _, reason in dropped)


def test_dry_run_shows_why_pure_wall_time_drops_cpu_configs():
    result = call_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                        "--test=eval", "--pure-wall-time", "--dry-run", check_rc=0)
    dropped = [line for line in result.stdout.splitlines() if line.startswith("dropped:")]
    assert len(dropped) == 1
    assert "--pure-wall-time times with CUDA events, and accelerator cpu has none" in dropped[0]
    assert "# 0 config(s) to run" in result.stdout


@pytest.mark.integration
def test_a_child_asked_for_pure_wall_time_without_cuda_writes_a_clear_error(tmp_path):
    result = run_runner(
        "--suite-name=dummy", "--pure-wall-time", f"--output-dirname={tmp_path}",
        '--model-config={"suite_name": "dummy", "model_name": "mlp"}',
        '--experiment-config={"accelerator": "cpu", "xla": null, "dynamo": null, "test": "eval"}', check_rc=1)
    assert "Traceback" not in result.stderr
    [record] = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "error"
    assert record["error"]["type"] == "PureWallTimeUnsupported" and record["error"]["phase"] == "setup"
    assert "CUDA events" in record["error"]["message"]
    assert record["metrics"]["error"].startswith("PureWallTimeUnsupported: ")
