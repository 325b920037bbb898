"""A default precision a TorchBench model can't run is never its default: the rule (torchbench_precision), the
plan's precision and reason, and a real sweep on a checkout made here (the fixture package plus a model named
as TorchBench's quantization-aware one, which fails in bfloat16 as the real one does): the default runs fp32
with `precision_reason` in its record, an explicit bf16 is a skip record saying why, a config run by hand
with no precision gets the reason from the child."""

import json
import shutil

import pytest

from helpers import ROOT, call_runner, read_jsonl, run_runner
from test_torchbench import COMMON

from benchmarks.config import experiment_config
from benchmarks.features import precision
from benchmarks.suites import load_suite, torchbench_precision

QAT = "resnet50_quantized_qat"
QAT_MODEL = '''import torch
from torch import nn

from ...util.model import BenchmarkModel


class Net(nn.Module):
    """As TorchBench's QAT models: a quantize step that takes float32 only."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x):
        return self.linear(torch.quantize_per_tensor(x, 0.1, 0, torch.quint8).dequantize())


class Model(BenchmarkModel):
    DEFAULT_EVAL_BSIZE = 2

    def __init__(self, test, device, batch_size=None, extra_args=[]):
        super().__init__(test=test, device=device, batch_size=batch_size, extra_args=extra_args)
        self.model = Net().to(device)
        self.example_inputs = (torch.randn(self.batch_size, 8, device=device),)

    def get_module(self):
        return self.model, self.example_inputs
'''


def exp(test="eval", accelerator="cpu", **kw):
    return experiment_config.ExperimentConfig(accelerator, None, None, test, **kw)


def test_a_default_the_model_cant_run_falls_back_to_fp32_with_the_reason():
    rule = torchbench_precision.resolve_with_reason
    for name in ("mobilenet_v2_quantized_qat", QAT):
        for accelerator in ("cpu", "cuda", "tpu"):
            got, why = rule(name, "eval", None, accelerator)
            assert got == "fp32" and f"the default precision bf16 (upstream PyTorch/XLA's) can't run {name}" in why
            assert "Quantize only works on Float Tensor" in why and why.endswith("fp32 instead")
            assert rule(name, "eval", "bf16", accelerator) == ("bf16", None)  # asked for: no fallback
            assert rule(name, "eval", "fp32", accelerator) == ("fp32", None)
        assert rule(name, "train", None, "cpu") == ("fp32", None)  # upstream's CPU training default is fp32 already
        assert f"{name} can't run fp16" in torchbench_precision.unsupported_request(name, "fp16")
        assert torchbench_precision.unsupported_request(name, "fp32") is None
        assert torchbench_precision.unsupported_request(name, "amp") is None
    assert rule("resnet50", "eval", None, "cpu") == ("bf16", None)
    assert torchbench_precision.unsupported_request("resnet50", "bf16") is None
    # The other per-model precisions say why too.
    assert "only_fp32" in rule("timm_efficientdet", "eval", None, "cpu")[1]
    assert rule("timm_efficientdet", "eval", "fp32", "cpu") == ("fp32", None)
    assert "force_fp16_for_bf16_models" in rule("vision_maskrcnn", "eval", "bf16", "cpu")[1]
    assert "force_amp_for_fp16_bf16_models" in rule("Super_SloMo", "eval", "fp16", "cuda")[1]
    for name in ("mobilenet_v2_quantized_qat", "timm_efficientdet", "vision_maskrcnn", "resnet50"):
        for requested in (None,) + tuple(precision.PRECISIONS):  # the child's resolution of the plan's is the same
            once = torchbench_precision.resolve(name, "eval", requested, "cpu")
            assert torchbench_precision.resolve(name, "eval", once, "cpu") == once


def test_the_suite_gives_the_reason_only_where_the_precision_differs():
    suite, other = load_suite("torchbench"), load_suite("dummy")
    qat = {"suite_name": "torchbench", "model_name": QAT}
    assert suite.precision_for(qat, exp()) == "fp32" and "can't run" in suite.precision_reason(qat, exp())
    assert suite.precision_reason({"suite_name": "torchbench", "model_name": "resnet50"}, exp()) is None
    assert other.precision_reason({"suite_name": "dummy", "model_name": "mlp"}, exp()) is None


def test_one_resolution_gives_the_experiment_and_the_reason_and_resolves_to_itself():
    """Suite.resolve, the one resolution the plan and a config by hand share: the precision and its reason, the
    training step; the resolved config resolves to itself, with no reason (its child is given it resolved)."""
    suite = load_suite("torchbench")
    qat = {"suite_name": "torchbench", "model_name": QAT}
    resolved, why = suite.resolve(qat, exp())
    assert resolved.precision == "fp32" and "can't run" in why and resolved.train_step is None
    assert suite.resolve(qat, resolved) == (resolved, None)
    train, _ = suite.resolve(qat, exp(test="train"))
    assert train.train_step == suite.default_train_step and suite.resolve(qat, train) == (train, None)
    dummy = load_suite("dummy")
    assert dummy.resolve({"suite_name": "dummy", "model_name": "mlp"}, exp()) == (exp(precision="fp32"), None)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    root = tmp_path_factory.mktemp("tb_checkout")
    shutil.copytree(ROOT / "tests" / "fixtures" / "torchbench", root, dirs_exist_ok=True)
    folder = root / "torchbenchmark" / "models" / QAT
    folder.mkdir()
    (folder / "__init__.py").write_text(QAT_MODEL)
    return root


def sweep_args(checkout, out):
    return [f"--torchbench-dir={checkout}", "--suite-name=torchbench", "--accelerator=cpu", "--xla=None",
            "--dynamo=None", "--test=eval", "--repeat=1", "--warmup=0", f"--output-dirname={out}"]


def test_torchbench_plans_upstreams_default_per_model_and_the_request_otherwise():
    result = call_runner(*COMMON, "-k", "^tiny_convnet$", "--xla=None", "--dynamo=None", "--test=eval", "--test=train",
                        "--dry-run", check_rc=0)
    assert '"test": "eval", "batch_size": null, "enable_functionalization": false, "quantization": null, ' \
           '"precision": "bf16", ' in result.stdout
    assert '"test": "train", "batch_size": null, "enable_functionalization": false, "quantization": null, ' \
           '"precision": "fp32", ' in result.stdout  # no autocast on the CPU upstream
    asked = call_runner(*COMMON, "-k", "^tiny_convnet$", "--xla=None", "--dynamo=None", "--test=eval",
                       "--precision=fp32", "--precision=fp32", "--dry-run", check_rc=0)
    assert asked.stdout.count('"precision": "fp32", ') == 1 and "bf16" not in asked.stdout


@pytest.mark.integration
def test_the_default_runs_fp32_with_its_reason_and_an_explicit_bf16_is_a_skip_saying_why(checkout, tmp_path):
    args = sweep_args(checkout, tmp_path)
    planned = run_runner(*args, "-k", f"^{QAT}$", "--dry-run", check_rc=0)
    assert '"precision": "fp32"' in planned.stdout and '"precision": "bf16"' not in planned.stdout
    run_runner(*args, "-k", f"^({QAT}|tiny_convnet)$", "--precision=default", "--precision=bf16", check_rc=0)
    got = {(r["model"]["model_name"], r["experiment"]["precision"]): r for r in read_jsonl(tmp_path / "results.jsonl")}
    assert set(got) == {(QAT, "fp32"), (QAT, "bf16"), ("tiny_convnet", "bf16")}  # tiny_convnet: one config
    fallback = got[(QAT, "fp32")]
    assert fallback["status"] == "ok", fallback.get("error")
    assert "the default precision bf16 (upstream PyTorch/XLA's) can't run" in fallback["precision_reason"]
    asked = got[(QAT, "bf16")]
    assert asked["status"] == "skip" and "precision_reason" not in asked
    assert f"{QAT} can't run bf16" in asked["error"]["message"] and "--precision=fp32" in asked["error"]["message"]
    assert got[("tiny_convnet", "bf16")]["status"] == "ok" and "precision_reason" not in got[("tiny_convnet", "bf16")]


@pytest.mark.integration
def test_a_config_run_by_hand_without_a_precision_gets_the_reason_from_the_child(checkout, tmp_path):
    experiment = exp().to_dict()
    experiment["precision"] = None
    run_runner(f"--torchbench-dir={checkout}", "--suite-name=torchbench", "--repeat=1", "--warmup=0",
               "--model-config=" + json.dumps({"suite_name": "torchbench", "model_name": QAT}),
               "--experiment-config=" + json.dumps(experiment), f"--output-dirname={tmp_path}", check_rc=0)
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "ok" and record["experiment"]["precision"] == "fp32"
    assert "can't run" in record["precision_reason"]
