"""--precision, a matrix axis (experiment key `precision`): the names, the key in old and new records and in the
resume fingerprint, the suites' defaults (torchbench: upstream PyTorch/XLA's rule and the force lists), the
support rule, labels and selection; the child's cast, autocast and grad scaler on a real model; one real sweep
under bf16, fp16 and amp on eager, Inductor and PyTorch/XLA, with --verify and --randomize-input, read back by
the analyzer."""

import csv

import pytest

from helpers import XLA, call_runner, read_jsonl, run_runner, run_tool

from benchmarks.config import experiment_config
from benchmarks.features import precision
from benchmarks.results import records, selection
from benchmarks.results.measurement import Measurement
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities
from benchmarks.runner.plan import Config
from benchmarks.suites import load_suite, torchbench_precision

CPU = Capabilities(dynamo_backends=("inductor", "openxla"), torch_xla_error=None, xla_devices=("CPU", "TPU"))
MLP = {"suite_name": "dummy", "model_name": "mlp"}


def exp(**kw):
    base = dict(accelerator="cpu", xla=None, dynamo=None, test="eval")
    base.update(kw)
    return experiment_config.ExperimentConfig(**base)


def test_names_dtypes_and_the_unset_default():
    assert list(precision.PRECISIONS) == ["fp32", "bf16", "fp16", "amp", "amp_bf16", "amp_fp16"]
    assert precision.parse("BF16") == "bf16" and precision.parse(None) is None and precision.parse("none") is None
    with pytest.raises(precision.PrecisionError, match="known: fp32, bf16, fp16, amp, amp_bf16, amp_fp16"):
        precision.parse("fp8")
    assert precision.cast_dtype("fp16") == "float16" and precision.cast_dtype("amp") is None
    assert precision.autocast_dtype("amp", "cuda") == "float16"
    assert precision.autocast_dtype("amp", "cpu") == precision.autocast_dtype("amp", "tpu") == "bfloat16"
    assert precision.autocast_dtype("bf16", "cpu") is None and precision.autocast_dtype("amp_fp16", "cpu") == "float16"
    # The grad scaler: float16 autocast training only (amp on CUDA, amp_fp16 anywhere).
    assert precision.needs_grad_scaler("amp", "cuda", "train") and precision.needs_grad_scaler("amp_fp16", "cpu", "train")
    assert not precision.needs_grad_scaler("amp", "cpu", "train") and not precision.needs_grad_scaler("amp", "cuda", "eval")
    assert not precision.needs_grad_scaler("fp16", "cuda", "train")


def test_unknown_precision_is_one_line_and_exit_2():
    result = call_runner("--suite-name=dummy", "--precision=bf16", "--precision=fp8", "--dry-run", check_rc=2)
    assert result.stderr.count("\n") == 1 and "unknown precision 'fp8'" in result.stderr
    result = call_runner("--model-config=" + '{"suite_name": "dummy", "model_name": "mlp"}',
                        '--experiment-config={"accelerator": "cpu", "xla": null, "dynamo": null, "test": "eval", '
                        '"precision": "half"}', check_rc=2)
    assert "unknown precision 'half'" in result.stderr and "Traceback" not in result.stderr


def test_the_key_follows_quantization_and_old_records_are_fp32_runs():
    data = exp(precision="bf16").to_dict()
    assert list(data)[len(experiment_config.EXPERIMENT_KEYS):][:2] == ["quantization", "precision"]
    assert experiment_config.ExperimentConfig.from_dict(data).precision == "bf16"
    old = {k: v for k, v in exp().to_dict().items() if k != "precision"}
    assert experiment_config.ExperimentConfig.from_dict(old).precision is None
    assert "bf16" in exp(precision="bf16").slug() and exp(precision="fp32").slug() == exp().slug()


def test_fingerprint_at_fp32_is_exactly_the_old_one():
    before = Config(MLP, exp(xla="PJRT")).fingerprint
    assert '"precision"' not in before
    assert Config(MLP, exp(xla="PJRT", precision="fp32")).fingerprint == before
    old_record = {"model": MLP, "experiment": {k: v for k, v in exp(xla="PJRT").to_dict().items()
                                               if k not in ("quantization", "precision")}}
    assert records.record_fingerprint(old_record) == before
    assert '"precision": "bf16"' in Config(MLP, exp(xla="PJRT", precision="bf16")).fingerprint


def test_suite_defaults_fp32_and_torchbench_follows_upstream_pytorch_xla():
    assert load_suite("dummy").precision_for(MLP, exp()) == "fp32"
    assert load_suite("dummy").precision_for(MLP, exp(precision="amp")) == "amp"
    torchbench = load_suite("torchbench")
    model = {"suite_name": "torchbench", "model_name": "resnet50"}
    assert torchbench.precision_for(model, exp()) == "bf16"
    # Upstream never autocasts on the CPU: training there is float32; on CUDA and TPU it is amp.
    assert torchbench.precision_for(model, exp(test="train")) == "fp32"
    assert torchbench.precision_for(model, exp(test="train", accelerator="cuda")) == "amp"
    assert torchbench.precision_for(model, exp(test="train", accelerator="tpu")) == "amp"
    assert torchbench.precision_for(model, exp(accelerator="cuda")) == "bf16"
    assert torchbench.precision_for(model, exp(precision="fp32")) == "fp32"
    resolve = torchbench_precision.resolve
    for accelerator in ("cpu", "cuda", "tpu"):
        assert resolve("vision_maskrcnn", "eval", None, accelerator) == "fp16"
        assert resolve("vision_maskrcnn", "eval", "bf16", accelerator) == "fp16"
        assert resolve("Super_SloMo", "eval", "amp_bf16", accelerator) == "amp_bf16"
        assert resolve("timm_efficientdet", "eval", "bf16", accelerator) == "fp32"
        assert resolve("timm_efficientdet", "eval", None, accelerator) == "fp32"
        assert resolve("timm_efficientdet", "train", None, accelerator) == "fp32"
    # The force-amp models: autocast on CUDA and TPU; on the CPU the cast upstream does in its place.
    assert resolve("Super_SloMo", "eval", None, "cuda") == "amp" and resolve("Super_SloMo", "eval", "fp16", "tpu") == "amp"
    assert resolve("Super_SloMo", "eval", None, "cpu") == "bf16" and resolve("Super_SloMo", "eval", "fp16", "cpu") == "fp16"
    assert resolve("Super_SloMo", "train", None, "cpu") == "fp32" and resolve("Super_SloMo", "train", None, "tpu") == "amp"
    for accelerator in ("cpu", "cuda", "tpu"):  # the plan's and child's agree
        for name in ("resnet50", "vision_maskrcnn", "Super_SloMo", "timm_efficientdet"):
            for test in ("eval", "train"):
                for requested in (None,) + tuple(precision.PRECISIONS):
                    once = resolve(name, test, requested, accelerator)
                    assert resolve(name, test, once, accelerator) == once


def test_expansion_and_the_support_rule():
    configs = matrix.expand({"accelerator": ["cpu", "tpu"], "xla": ["PJRT"], "dynamo": [None], "test": ["eval"],
                             "precision": [None, "bf16", "fp16", "amp_fp16"]})
    assert len(configs) == 8
    kept, dropped = matrix.split(configs, CPU)
    assert {(c.accelerator, c.precision) for c in kept} == {
        ("cpu", None), ("cpu", "bf16"), ("cpu", "fp16"), ("cpu", "amp_fp16"), ("tpu", None), ("tpu", "bf16")}
    reasons = {c.precision: why for c, why in dropped}
    assert reasons["fp16"] == "precision fp16: TPUs compute in bfloat16, not float16 (use bf16 or amp_bf16)"
    assert "precision amp_fp16: TPUs" in reasons["amp_fp16"]


def test_dry_run_shows_each_value_in_its_command():
    result = call_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                        "--test=eval", "--precision=fp32", "--precision=amp", "--dry-run", check_rc=0)
    assert '"precision": "fp32", ' in result.stdout and '"precision": "amp", ' in result.stdout
    default = call_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                         "--test=eval", "--dry-run", check_rc=0)
    assert '"precision": "fp32", ' in default.stdout  # the dummy suite's default, named in the record


def test_labels_and_selection_treat_a_record_without_the_key_as_fp32():
    def record(**kw):
        return {"model": MLP, "experiment": exp(dynamo="inductor", **kw).to_dict(), "metrics": {"per_iter_time": [1.0]}}

    old = record()
    del old["experiment"]["precision"]
    views = [Measurement(r) for r in (old, record(precision="fp32"), record(precision="bf16"))]
    assert [m.backend for m in views] == ["inductor", "inductor", "inductor[bf16]"]
    pick = selection.Selection(axes={"precision": ["fp32"]}).select(views)
    assert pick == views[:2]
    assert selection.Selection(axes={"precision": ["bf16"]}).select(views) == views[2:]


def test_the_childs_cast_autocast_and_grad_scaler_on_a_real_model():
    import torch

    from benchmarks.child import measured_loop
    from benchmarks.features.precision import child as precision_child
    from benchmarks.suites import BenchmarkModel

    def model():
        torch.manual_seed(0)
        module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        return BenchmarkModel(module, (torch.randn(4, 8), torch.arange(4)), 4, {"mask": torch.ones(4, dtype=torch.bool)})

    bm = model()
    precision_child.model_cast(bm, exp(precision="fp16"))
    assert {p.dtype for p in bm.module.parameters()} == {torch.float16}
    assert [t.dtype for t in bm.example_inputs] == [torch.float16, torch.int64]  # indices kept
    assert bm.example_kwargs["mask"].dtype == torch.bool

    bm = model()
    eval_amp = exp(precision="amp_bf16")
    precision_child.model_cast(bm, eval_amp)
    assert {p.dtype for p in bm.module.parameters()} == {torch.float32}  # autocast leaves the weights alone
    step = measured_loop.make_step(bm, eval_amp, bm.module, bm.example_inputs[:1], {})
    assert step().dtype == torch.bfloat16

    bm = model()
    train = exp(precision="amp_fp16", test="train")
    step = measured_loop.make_step(bm, train, bm.module, bm.example_inputs[:1], {})
    before = [p.detach().clone() for p in bm.module.parameters()]
    loss = step()
    assert loss.dtype == torch.float32 and step.grad_scaler is not None
    assert step.grad_scaler.get_scale() == 65536.0  # the default initial scale: the step scaled its loss
    assert any(not torch.equal(a, b) for a, b in zip(before, bm.module.parameters()))  # and the optimizer stepped
    assert measured_loop.make_step(model(), exp(precision="amp_bf16", test="train"), model().module,
                                   (torch.randn(4, 8),), {}).grad_scaler is None


# ---------------------------------------------------------------- a real sweep


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """dummy mlp on the CPU: eager and Inductor under bf16 and amp_fp16 (eval and train), PyTorch/XLA lazy under
    fp16 and amp (eval and train); all verified against eager at the same precision, random inputs per iteration."""
    out = tmp_path_factory.mktemp("precision")
    common = ["--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--test=eval", "--test=train", "--repeat=2",
              "--warmup=1", "--verify", "--randomize-input", f"--output-dirname={out}"]
    run_runner("--xla=None", "--dynamo=None", "--dynamo=inductor", "--precision=bf16", "--precision=amp_fp16",
               *common, check_rc=0)
    run_runner("--xla=PJRT", "--dynamo=None", "--precision=fp16", "--precision=amp", *common, check_rc=0)
    return out, read_jsonl(out / "results.jsonl")


@pytest.mark.integration
def test_every_precision_runs_verifies_and_says_so(sweep):
    _, found = sweep
    got = {(r["experiment"]["xla"], r["experiment"]["dynamo"], r["experiment"]["test"], r["experiment"]["precision"]):
           r for r in found}
    assert len(got) == (12 if XLA else 8), sorted(got, key=str)  # XLA's 4 dropped where torch-xla can't run
    for key, record in got.items():
        assert record["status"] == "ok", (key, record.get("error"))
        assert record["verification_code"] == "PASS", (key, record.get("verification_message"))
        # Judged against fp64 too (docs/accuracy.md): a healthy model passes in every precision.
        assert record["accuracy"] == "pass" and record["accuracy_reference"] == "fp64", (key, record["accuracy_message"])


@pytest.mark.integration
def test_resume_runs_nothing_again_and_the_analyzer_has_the_column(sweep, tmp_path):
    out, found = sweep
    xla = ["--xla=PJRT", "--dynamo=None", "--precision=fp16", "--precision=amp"]
    native = ["--xla=None", "--dynamo=None", "--dynamo=inductor", "--precision=bf16", "--precision=amp_fp16"]
    again = run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--test=eval", "--test=train",
                       *(xla if XLA else native), "--repeat=2", "--warmup=1", "--verify", "--randomize-input",
                       f"--output-dirname={out}", check_rc=0)
    assert "0 ok" in again.stderr + again.stdout and len(read_jsonl(out / "results.jsonl")) == len(found)
    csv_path = tmp_path / "rows.csv"
    run_tool("result_analyzer.py", str(out / "results.jsonl"), f"--output={csv_path}", check_rc=0)
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted({row["experiment_precision"] for row in rows}) == (["amp", "amp_fp16", "bf16", "fp16"] if XLA
                                                                     else ["amp_fp16", "bf16"])
