"""The GPU tier (`make test-gpu`; marker `gpu`): real sweeps on a CUDA device, skipped with the reason on a machine
without one (tests/conftest.py). It covers the default launch (fork) and spawn; eager, Inductor and CUDA graphs;
fp32, amp and bf16; training under float16 autocast (its grad scaler); --verify; peak memory against a plain
script's max_memory_allocated; --pure-wall-time; --profile-cuda-cpu; --jobs on one GPU; NVML's facts; and the
faults only a GPU has (out of memory, a device-side assert, an illegal address), each one record, the GPU fine
for the next config. `make gpu-check` (scripts/gpu/check.py) runs this tier on a lent GPU machine and reports.

Each test keeps its models tiny (the dummy and faults suites) and its compiles few: the tier fits a few minutes
of one GPU."""

import json
import statistics
import subprocess

import pytest

from helpers import PYTHON, ROOT, by_model, read_jsonl, run_runner

pytestmark = [pytest.mark.gpu, pytest.mark.integration]

GPU = ["--accelerator=cuda", "--xla=None"]
QUICK = ["--repeat=3", "--warmup=2"]


def not_ok(records: list) -> list:
    """(model, backend, test, precision, status, accuracy, error message) of each record not ok and passing."""
    return [(r["model"]["model_name"], r["experiment"]["dynamo"], r["experiment"]["test"],
             r["experiment"].get("precision"), r["status"], r.get("accuracy"), (r.get("error") or {}).get("message"))
            for r in records if r["status"] != "ok" or r.get("accuracy") not in ("pass", "not_checked")]


@pytest.fixture(scope="module")
def default_sweep(tmp_path_factory):
    """The first thing a user runs on a GPU: a compiling sweep, eval and train, checked, with the default launch."""
    out = tmp_path_factory.mktemp("default-launch")
    result = run_runner("--suite-name=dummy", *GPU, "--dynamo=None", "--dynamo=inductor", "--test=eval",
                        "--test=train", "--verify", *QUICK, f"--output-dirname={out}", timeout=1200)
    return result, read_jsonl(out / "results.jsonl")


def test_the_default_launch_runs_every_cuda_config_of_a_compiling_sweep(default_sweep):
    result, records = default_sweep
    assert result.returncode == 0, result.stderr[-4000:]
    assert len(records) == 12 and not_ok(records) == []
    assert {r["accuracy"] for r in records} == {"pass"}
    assert {r["environment"]["launch"] for r in records} == {"fork"}  # its fork server's forks may use CUDA
    assert not [r["environment"]["launch_reason"] for r in records if "launch_reason" in r["environment"]]


def test_every_record_has_nvml_facts_and_its_timed_runs_telemetry(default_sweep):
    _, records = default_sweep
    for record in records:
        telemetry = record["gpu_telemetry"]
        assert "absent" not in telemetry, telemetry
        assert telemetry["name"] and telemetry["max_sm_clock_mhz"] > 0 and telemetry["timed_runs"] == 3
        assert record["environment"]["gpu_names"] and record["memory_kind"] == "cuda_allocated"
        clocks = record["metrics"]["gpu_sm_clock_mhz"]
        assert len(clocks) == 3 and all(0 < clock <= telemetry["max_sm_clock_mhz"] * 1.05 for clock in clocks)
        if "gpu_power_watts" in record["metrics"]:
            assert all(watts > 0 for watts in record["metrics"]["gpu_power_watts"])
        if "energy" not in telemetry["unsupported"]:  # a figure for each run the counter moved in, else said why
            joules = record["metrics"].get("gpu_energy_joules", [])
            assert all(energy > 0 for energy in joules)
            assert len(joules) == 3 or telemetry["energy"].startswith("energy: "), telemetry
            limit = telemetry.get("power_limit_watts", float("inf"))
            assert all(0 < watts <= limit for watts in record["metrics"].get("gpu_mean_watts", []))
        warned = any(line.startswith("gpu: throttled") for line in record.get("warnings", []))
        assert warned == (telemetry["throttled_runs"] > 0)


def test_spawned_children_give_what_forked_ones_give(default_sweep, tmp_path):
    _, forked = default_sweep
    run_runner("--suite-name=dummy", "-k", "^mlp$", *GPU, "--dynamo=None", "--dynamo=inductor", "--test=eval",
               "--verify", *QUICK, "--launch=spawn", f"--output-dirname={tmp_path}", check_rc=0, timeout=600)
    spawned = read_jsonl(tmp_path / "results.jsonl")
    assert [r["environment"]["launch"] for r in spawned] == ["spawn", "spawn"] and not_ok(spawned) == []
    key = lambda r: (r["experiment"]["dynamo"], r["accuracy"], r["verification_code"])
    assert sorted(map(key, spawned)) == sorted(key(r) for r in forked
                                               if r["model"]["model_name"] == "mlp" and r["experiment"]["test"] == "eval")


def test_cuda_graphs_and_each_precision_run_and_pass(tmp_path):
    run_runner("--suite-name=dummy", "-k", "^mlp$", *GPU, "--dynamo=None", "--dynamo=inductor",
               "--compile-mode=reduce-overhead", "--precision=fp32", "--precision=amp", "--precision=bf16",
               "--test=eval", "--verify", *QUICK, f"--output-dirname={tmp_path}", check_rc=0, timeout=900)
    records = read_jsonl(tmp_path / "results.jsonl")
    assert len(records) == 6 and not_ok(records) == []
    assert sorted((r["experiment"]["dynamo"] or "eager", r["experiment"]["precision"]) for r in records) == sorted(
        (backend, precision) for backend in ("eager", "inductor") for precision in ("fp32", "amp", "bf16"))
    assert {r["experiment"].get("compile_mode") for r in records if r["experiment"]["dynamo"]} == {"reduce-overhead"}


def test_training_under_float16_autocast_scales_its_loss_and_passes(tmp_path):
    run_runner("--suite-name=dummy", "-k", "^(mlp|cnn)$", *GPU, "--dynamo=None", "--dynamo=inductor",
               "--precision=amp_fp16", "--test=train", "--verify", *QUICK, f"--output-dirname={tmp_path}",
               check_rc=0, timeout=900)
    records = read_jsonl(tmp_path / "results.jsonl")
    assert len(records) == 4 and not_ok(records) == []
    assert {r["experiment"]["precision"] for r in records} == {"amp_fp16"}


PLAIN_PEAK = """
import sys, torch
from benchmarks.suites import dummy_models
module, inputs = dummy_models.build(sys.argv[1], int(sys.argv[2]), "cuda")
module.eval()
with torch.no_grad():
    for _ in range(2):
        module(*inputs)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    module(*inputs)
    torch.cuda.synchronize()
print(torch.cuda.max_memory_allocated())
"""


def test_peak_memory_is_what_a_plain_script_reads_from_max_memory_allocated(tmp_path):
    run_runner("--suite-name=dummy", "-k", "^cnn$", *GPU, "--dynamo=None", "--test=eval", "--batch-size=64", *QUICK,
               f"--output-dirname={tmp_path}", check_rc=0, timeout=600)
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    ours = statistics.median(record["metrics"]["peak_memory_bytes"])
    plain = int(subprocess.run([PYTHON, "-c", PLAIN_PEAK, "cnn", "64"], capture_output=True, text=True, check=True,
                               cwd=ROOT).stdout.split()[-1])
    assert record["memory_kind"] == "cuda_allocated"
    assert abs(ours - plain) <= 0.01 * plain + 2**20, (ours, plain)


def test_pure_wall_time_and_the_cuda_profiler_time_the_device(tmp_path):
    args = ["--suite-name=dummy", "-k", "^mlp$", *GPU, "--dynamo=None", "--test=eval", *QUICK]
    run_runner(*args, f"--output-dirname={tmp_path / 'wall'}", check_rc=0, timeout=600)
    run_runner(*args, "--pure-wall-time", f"--output-dirname={tmp_path / 'pure'}", check_rc=0, timeout=600)
    run_runner(*args, "--profile-cuda-cpu", f"--output-dirname={tmp_path / 'profiled'}", check_rc=0, timeout=600)
    (wall,), (pure,), (profiled,) = (read_jsonl(tmp_path / name / "results.jsonl")
                                     for name in ("wall", "pure", "profiled"))
    median = lambda r: statistics.median(r["metrics"]["per_iter_time"])
    assert 0 < median(pure) <= median(wall) * 1.5, (median(pure), median(wall))  # the device's time, no launch
    assert all(seconds > 0 for seconds in profiled["metrics"]["total_cuda_time_s"])
    assert len(profiled["metrics"]["total_cpu_time_s"]) == 3


def test_parallel_jobs_on_one_gpu_take_it_in_turn(tmp_path):
    run_runner("--suite-name=dummy", "-k", "^(mlp|cnn)$", *GPU, "--dynamo=None", "--test=eval", *QUICK, "--jobs=2",
               f"--output-dirname={tmp_path}", check_rc=0, timeout=600)
    records = read_jsonl(tmp_path / "results.jsonl")
    assert not_ok(records) == [] and len(records) == 2
    executors = [r["environment"]["executor"] for r in records]
    assert all(len(e["gpus"]) == 1 for e in executors) and len({tuple(e["gpus"]) for e in executors}) == 1
    assert all(e["running_beside_at_start"] == 0 for e in executors)  # one GPU, one CUDA job at a time


def test_gpu_faults_cost_one_record_each_and_the_next_config_on_the_gpu_is_ok(tmp_path):
    result = run_runner("--suite-name=faults", "-k",
                        "^(cuda_out_of_memory|cuda_device_assert|cuda_illegal_address|elementwise_chain)$", *GPU,
                        "--dynamo=None", "--test=eval", "--repeat=1", "--warmup=1", "--verify", "--rounds=2",
                        f"--output-dirname={tmp_path}", timeout=900)
    assert result.returncode == 1, result.stderr[-3000:]  # failed configs: bad news, and the sweep went on
    records = read_jsonl(tmp_path / "results.jsonl")
    assert len(records) == 8
    for round_ in (0, 1):  # the second round's working config runs after the first round's faults
        named = by_model([r for r in records if r["round"] == round_])
        assert named["elementwise_chain"]["status"] == "ok" and named["elementwise_chain"]["accuracy"] == "pass"
        assert named["cuda_out_of_memory"]["status"] == "oom"
        assert "out of memory" in named["cuda_out_of_memory"]["error"]["message"].lower()
        for name, words in [("cuda_device_assert", "device-side assert"), ("cuda_illegal_address", "illegal memory")]:
            record = named[name]
            assert record["status"] == "error" and words in record["error"]["message"], json.dumps(record)[:2000]
            assert any("CUDA context is lost" in line for line in record.get("warnings", []))
            assert not record["accuracy"].startswith("eager_")  # eager never failed: the context was gone
    assert {r["environment"]["launch"] for r in records} == {"fork"}
