"""The CUDA setup as one named choice (--cuda-profile=dashboard, features/cuda_profile/__init__.py) and CUDA graphs in every
label: which configs run Inductor with CUDA graphs (from their keys, or the child's word), the profile's plan
(precision per test, CUDA only, flags that contradict it), the child's part (graphs on, each part recorded), and the
end-of-sweep table, aggregate, compare and history telling a graphs run from a no-graphs run. Without a GPU: the
CUDA sweeps themselves are the GPU tier's (tests/end_to_end/test_gpu.py)."""

import csv
import io
import json

import pytest

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.features import cuda_profile
from benchmarks.results import records
from benchmarks.results.measurement import Measurement
from benchmarks.runner import matrix, progress
from helpers import call_runner, call_tool

H100 = "NVIDIA H100 80GB HBM3"


def cuda_record(model="resnet18", dynamo="inductor", ms=1.0, timestamp=1000.0, suite="torchvision", fact=None,
                **experiment):
    exp = {"accelerator": "cuda", "accelerator_model": H100, "xla": None, "xla_flags": None, "dynamo": dynamo,
           "torch_xla2": None, "test": "eval", "batch_size": 32, "enable_functionalization": False,
           "compile_mode": "default" if dynamo else None, "compile_cache": "cold" if dynamo else None}
    exp.update(experiment)
    samples = [ms / 1e3] * 5
    record = {"model": {"suite_name": suite, "model_name": model}, "experiment": exp, "repeat": 5,
              "iterations_per_run": 1, "metrics": {"warmup_time": [1.0], "total_time": samples,
                                                   "per_iter_time": samples},
              "timestamp": timestamp, "verification_code": "VERIFIER_SKIPPED", "schema_version": 1, "status": "ok",
              "error": None, "warmup": 1, "round": 0, "accuracy": "not_checked", "environment": {"hostname": "gpu"}}
    if fact is not None:
        record["cudagraphs"] = fact
    return record


@pytest.mark.parametrize("keys, label", [
    ({}, "inductor"),  # plain inductor on CUDA: torch.compile's default, no graphs (the dashboard's "default" rows)
    ({"compile_mode": "reduce-overhead"}, "inductor[reduce-overhead,cudagraphs]"),
    ({"compile_mode": "max-autotune"}, "inductor[max-autotune,cudagraphs]"),
    ({"compile_mode": "max-autotune-no-cudagraphs", "cuda_profile": "dashboard"},
     "inductor[max-autotune-no-cudagraphs,cuda-dashboard]"),
    ({"inductor_config": "triton.cudagraphs=True"}, "inductor[cudagraphs,triton.cudagraphs=True]"),
    ({"cuda_profile": "dashboard", "precision": "bf16"}, "inductor[cuda-dashboard,cudagraphs,bf16]"),
    ({"cuda_profile": "dashboard", "inductor_config": "triton.cudagraphs=False"},
     "inductor[cuda-dashboard,triton.cudagraphs=False]"),
    ({"dynamo": None, "cuda_profile": "dashboard"}, "eager[cuda-dashboard]"),  # eager has no graphs of Inductor's
    ({"accelerator": "cpu", "compile_mode": "max-autotune"}, "inductor[max-autotune]"),  # no CUDA, no graphs
])
def test_a_configs_label_says_whether_its_cuda_graphs_were_on(keys, label):
    keys = dict(keys)
    assert Measurement(cuda_record(dynamo=keys.pop("dynamo", "inductor"), **keys)).backend == label


def test_the_profile_runs_the_harness_listed_models_without_graphs_and_the_childs_word_wins():
    listed = cuda_record(model="tts_angular", suite="torchbench", cuda_profile="dashboard")
    assert Measurement(listed).backend == "inductor[cuda-dashboard]"
    assert "tts_angular runs without CUDA graphs" in cuda_profile.no_cudagraphs_reason(listed["model"],
                                                                                        listed["experiment"])
    assert Measurement(cuda_record(fact=False, compile_mode="reduce-overhead")).backend == "inductor[reduce-overhead]"
    assert Measurement(cuda_record(fact=True)).backend == "inductor[cudagraphs]"


def test_the_profile_runs_inference_in_bf16_and_training_in_amp_unless_a_precision_is_asked_for():
    configs = matrix.expand({"accelerator": ["cuda"], "xla": [None], "dynamo": [None, "inductor"], "test": ["eval", "train"],
                             "cuda_profile": ["dashboard"]})
    assert {(c.dynamo, c.test, c.precision) for c in configs} == {
        (None, "eval", "bf16"), (None, "train", "amp"), ("inductor", "eval", "bf16"), ("inductor", "train", "amp")}
    asked = matrix.expand({"accelerator": ["cuda"], "xla": [None], "dynamo": ["inductor"], "test": ["eval"],
                           "precision": ["fp32"], "cuda_profile": ["dashboard"]})
    assert [c.precision for c in asked] == ["fp32"]
    # without the profile nothing changes: the same config, the same fingerprint as before the key existed
    plain = matrix.expand({"accelerator": ["cuda"], "xla": [None], "dynamo": ["inductor"], "test": ["eval"]})[0]
    old = {k: v for k, v in plain.to_dict().items() if k != "cuda_profile"}
    fingerprint = lambda exp: records.fingerprint({"suite_name": "dummy", "model_name": "mlp"}, exp, None, False)
    assert fingerprint(plain.to_dict()) == fingerprint(old)
    assert ExperimentConfig.from_dict(dict(old, cuda_profile="dashboard")).cuda_profile == "dashboard"


def test_the_profile_is_for_cuda_configs_and_flags_that_contradict_it_are_one_line():
    result = call_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                         "--test=eval", "--cuda-profile=dashboard", "--dry-run", "--allow-empty", check_rc=0)
    assert "dropped: accelerator=cpu test=eval precision=bf16 cuda_profile=dashboard: --cuda-profile=dashboard is " \
           "PyTorch's CUDA dashboard setup; accelerator cpu has none" in result.stdout
    for flag in ("--disable-tf32", "--matmul-precision=highest"):
        bad = call_runner("--suite-name=dummy", "--accelerator=cuda", "--cuda-profile=dashboard", flag, "--dry-run",
                          check_rc=2)
        assert bad.stderr.strip().splitlines()[-1].endswith(f"{flag} contradicts it: pass one of them")
    bad = call_runner("--suite-name=dummy", "--cuda-profile=nightly", "--dry-run", check_rc=2)
    assert "Traceback" not in bad.stderr and "nightly" in bad.stderr


@pytest.fixture
def inductor_config():
    """Inductor's real settings, triton.cudagraphs off, put back after the test by torch's own patch: monkeypatch
    would put it back by deleting it (it is not in the config object's __dict__), which torch takes as hiding it,
    and the next test to copy the config (tests/features/test_quantization_child.py) fails."""
    import torch._inductor.config as config

    with config.patch({"triton.cudagraphs": False}):
        yield config


def test_the_child_turns_graphs_on_for_the_profile_and_records_each_part(monkeypatch, inductor_config):
    import torch

    from benchmarks.features.cuda_profile import child as cuda_profile_child

    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", True)
    model = {"suite_name": "torchvision", "model_name": "resnet18"}
    profiled = ExperimentConfig("cuda", None, "inductor", "eval", precision="bf16", compile_mode="default",
                                compile_cache="cold", cuda_profile="dashboard")
    plain = profiled.with_(cuda_profile=None)
    timm_model = {"suite_name": "timm", "model_name": "mobilenetv2_100"}
    for unlisted, experiment in ((timm_model, profiled), (model, plain), (model, profiled.with_(accelerator="cpu"))):
        cuda_profile_child.before_build(unlisted, experiment)  # cuDNN as torch leaves it
        assert (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic) == (False, True)
    inductor_config.triton.cudagraphs = False
    assert cuda_profile_child.before_build(model, profiled) == {"cudagraphs": True} and inductor_config.triton.cudagraphs is True
    # TorchBench's TorchVisionModel factory turns cuDNN's autotuner on as it builds resnet18: the dashboard's setup
    assert (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic) == (True, False)
    inductor_config.triton.cudagraphs = False
    listed = {"suite_name": "torchbench", "model_name": "tts_angular"}
    keys = cuda_profile_child.before_build(listed, profiled)
    assert keys["cudagraphs"] is False and "disable_cudagraph" in keys["cudagraphs_reason"]
    assert inductor_config.triton.cudagraphs is False
    assert cuda_profile_child.before_build(model, plain) == {"cudagraphs": False} and inductor_config.triton.cudagraphs is False
    assert cuda_profile_child.before_build(model, plain.with_(accelerator="cpu")) == {}  # not a CUDA Inductor config

    record = {"cudagraphs": True, "diagnostics": {"matmul_precision": {"torch": "high"}}}
    facts = cuda_profile_child.cuda_profile_facts(profiled, record)
    assert facts == {"name": "dashboard", "precision": "bf16", "matmul_precision": "high",
                     "cudnn": {"allow_tf32": torch.backends.cudnn.allow_tf32,
                               "benchmark": torch.backends.cudnn.benchmark,
                               "deterministic": torch.backends.cudnn.deterministic},
                     "compile_cache": "cold", "cudagraphs": True, "differs": []}
    facts = cuda_profile_child.cuda_profile_facts(profiled, dict(record, model=model))
    assert facts["cudnn_reason"].startswith("resnet18 runs with cudnn.benchmark on the dashboard, set by TorchBench")
    by_hand = cuda_profile_child.cuda_profile_facts(profiled.with_(precision="fp32", compile_cache="warm"),
                                  {"diagnostics": {"matmul_precision": {"torch": "highest"}}})
    assert by_hand["differs"] == ["precision fp32 (the dashboard runs eval in bf16)",
                                  "float32 matmul precision highest (the dashboard's TF32: high)",
                                  "compile cache warm (the dashboard compiles cold)"]
    assert cuda_profile_child.cuda_profile_facts(plain, record) is None
    assert cuda_profile.matmul_precision(profiled, None) == "high" and cuda_profile.matmul_precision(plain, None) is None


# ---------------------------------------------------------------- every tool tells graphs from no graphs

def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def sweep(timestamp, graphs_ms):
    """A CUDA sweep of resnet18: eager, plain inductor, and inductor under the dashboard profile (CUDA graphs)."""
    return [cuda_record(dynamo=None, ms=4.0, timestamp=timestamp, compile_mode=None, compile_cache=None),
            cuda_record(ms=2.5, timestamp=timestamp),
            cuda_record(ms=graphs_ms, timestamp=timestamp, cuda_profile="dashboard", precision="bf16"),
            cuda_record(dynamo=None, ms=3.0, timestamp=timestamp, compile_mode=None, compile_cache=None,
                        cuda_profile="dashboard", precision="bf16")]


def test_the_end_of_sweep_table_aggregate_compare_and_history_tell_graph_runs_apart(tmp_path):
    graphs = "inductor[cuda-dashboard,cudagraphs,bf16]"
    table = progress.speedup_table(sweep(1000.0, 1.5))
    assert "inductor ms" in table and "cudagraphs" in table.splitlines()[0]

    base, new = write(tmp_path / "a.jsonl", sweep(1000.0, 1.5)), write(tmp_path / "b.jsonl", sweep(2000.0, 1.5))
    report = call_tool("aggregate.py", str(base), "--accelerator=h100", "--report=latest", "--format=csv",
                       check_rc=0).stdout
    assert "Speedup(Inductor/Oldest Eager)" in report
    assert "Speedup(Inductor[cuda-dashboard,cudagraphs,bf16]/Oldest Eager)" in report

    compared = call_tool("compare.py", str(base), str(new), "--format=csv", check_rc=0).stdout
    labels = [row["config"] for row in csv.DictReader(io.StringIO(compared))]
    assert "resnet18 cuda inductor eval bs32 compile_mode=default compile_cache=cold" in labels
    assert ("resnet18 cuda inductor eval bs32 compile_mode=default compile_cache=cold cuda_profile=dashboard "
            "precision=bf16 cudagraphs=True") in labels
    # the same keys, but one child ran CUDA graphs and the other could not: two configs, never one comparison
    ran, could_not = write(tmp_path / "c.jsonl", [cuda_record(fact=True)]), write(tmp_path / "d.jsonl",
                                                                                 [cuda_record(fact=False)])
    unpaired = call_tool("compare.py", str(ran), str(could_not), check_rc=1)
    assert "no config of" in unpaired.stderr and "matches one of" in unpaired.stderr

    database = tmp_path / "history.db"
    call_tool("history.py", "ingest", str(base), str(new), f"--db={database}", check_rc=0)
    shown = call_tool("history.py", "show", f"--db={database}", check_rc=0).stdout
    assert "torchvision/resnet18 inductor eval bs=32" in shown
    assert "torchvision/resnet18 inductor[cuda-dashboard,cudagraphs,bf16] eval bs=32" in shown
