"""--quantization RECIPE, a matrix axis (experiment key `quantization`): recipe names, the key in old and new
records and in the resume fingerprint, the support rules, the analyzer column and aggregate's backend label;
one sweep of int8wo and int8dq (eager and PyTorch/XLA lazy, with --verify) and the microbench linear layer."""

import csv

import pytest

from helpers import XLA, call_runner, read_jsonl, run_runner, run_tool

from benchmarks.aggregate import inputs
from benchmarks.config import experiment_config
from benchmarks.features import quantization
from benchmarks.results import records
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities
from benchmarks.runner.plan import Config

CPU = Capabilities(dynamo_backends=("inductor", "openxla"), torch_xla_error=None, xla_devices=("CPU",))


def exp(**kw):
    base = dict(accelerator="cpu", xla=None, dynamo=None, test="eval")
    base.update(kw)
    return experiment_config.ExperimentConfig(**base)


def test_recipe_names_are_torchaos_and_none_is_null():
    assert quantization.parse("none") is None and quantization.parse(None) is None
    for recipe in ("int8wo", "int8dq", "float8wo", "float8dq-tensor", "float8dq-row", "int4wo-128", "uintx-4-64"):
        assert quantization.parse(recipe) == recipe
    assert quantization.parse("INT8WO") == "int8wo"
    for bad in ("int3", "int4wo", "int4wo-100", "uintx-8-64", "int8wo-32"):
        with pytest.raises(quantization.RecipeError, match="known: none, int8wo, int8dq"):
            quantization.parse(bad)


def test_unknown_recipe_is_one_line_naming_the_known_ones_and_exit_2():
    result = call_runner("--suite-name=dummy", "--quantization=int8wo", "--quantization=int3", "--dry-run", check_rc=2)
    assert result.stderr.count("\n") == 1 and "unknown quantization recipe 'int3'" in result.stderr
    assert "int8wo, int8dq" in result.stderr and "Traceback" not in result.stderr
    # A hand-written experiment config with an unknown recipe is refused the same way.
    result = call_runner("--model-config={\"suite_name\": \"dummy\", \"model_name\": \"mlp\"}",
                        '--experiment-config={"accelerator": "cpu", "xla": null, "dynamo": null, "test": "eval", '
                        '"quantization": "int3"}', check_rc=2)
    assert "unknown quantization recipe" in result.stderr and "Traceback" not in result.stderr


def test_the_key_follows_upstreams_and_old_records_read_as_null():
    data = exp(quantization="int8wo").to_dict()
    assert list(data)[:len(experiment_config.EXPERIMENT_KEYS) + 1] == list(experiment_config.EXPERIMENT_KEYS) + ["quantization"]
    assert list(data)[len(experiment_config.EXPERIMENT_KEYS):] == list(experiment_config.OWN_KEYS)
    assert experiment_config.ExperimentConfig.from_dict(data).quantization == "int8wo"
    old = {k: v for k, v in exp().to_dict().items() if k != "quantization"}
    assert experiment_config.ExperimentConfig.from_dict(old).quantization is None
    assert experiment_config.ExperimentConfig.from_dict(dict(old, quantization="none")).quantization is None
    assert "q-int8wo" in exp(quantization="int8wo").slug() and "q-" not in exp().slug()


def test_fingerprint_without_quantization_is_exactly_the_old_one():
    # The text the fingerprint had before the key existed: results written then still resume.
    before = ('{"experiment": {"accelerator": "cpu", "batch_size": null, "dynamo": null, "enable_functionalization": '
              'false, "test": "eval", "torch_xla2": null, "xla": "PJRT", "xla_flags": null}, "model": {"model_name": '
              '"mlp", "suite_name": "dummy"}, "verify": false}')
    model = {"suite_name": "dummy", "model_name": "mlp"}
    assert Config(model, exp(xla="PJRT")).fingerprint == before
    old_record = {"model": model, "experiment": {k: v for k, v in exp(xla="PJRT").to_dict().items()
                                                 if k != "quantization"}}
    assert records.record_fingerprint(old_record) == before
    quantized = Config(model, exp(xla="PJRT", quantization="int8wo")).fingerprint
    assert quantized != before and '"quantization": "int8wo"' in quantized


def test_expansion_and_support_rules():
    configs = matrix.expand({"accelerator": ["cpu"], "xla": [None, "PJRT"], "dynamo": [None], "test": ["eval", "train"],
                             "quantization": [None, "int8wo", "int4wo-64", "float8dq-row"]})
    assert len(configs) == 16
    kept, dropped = matrix.split(configs, CPU)
    assert {(c.xla, c.test, c.quantization) for c in kept} == {
        (None, "eval", None), (None, "eval", "int8wo"), (None, "eval", "int4wo-64"),
        ("PJRT", "eval", None), ("PJRT", "eval", "int8wo"), (None, "train", None), ("PJRT", "train", None)}
    reasons = {(c.xla, c.test, c.quantization): why for c, why in dropped}
    assert "for inference" in reasons[(None, "train", "int8wo")]
    assert "compute capability 8.9" in reasons[(None, "eval", "float8dq-row")]
    assert "XLA tensors cannot take" in reasons[("PJRT", "eval", "int4wo-64")]


def test_a_cuda_card_below_a_recipes_compute_capability_is_named_with_what_needs_it():
    """The child's skip (features/quantization/child.py asks torch for the card's capability): float8 dynamic from 8.9 (torchao's
    own check), int4 from 8.0 (torch's int4 kernel); the rest run on any card torch supports."""
    for recipe in ("float8dq-row", "float8dq-tensor"):
        assert quantization.card_reason(recipe, (8, 6)) == (
            f"quantization {recipe}: torchao's float8 dynamic activation kernels (torch._scaled_mm) need compute "
            "capability 8.9 or newer (Ada, Hopper, Blackwell; or an MI300); this card is 8.6")
        assert quantization.card_reason(recipe, (8, 9)) is None and quantization.card_reason(recipe, (9, 0)) is None
    assert "needs compute capability 8.0" in quantization.card_reason("int4wo-32", (7, 5))
    assert quantization.card_reason("int4wo-32", (8, 0)) is None
    for recipe in ("int8wo", "int8dq", "float8wo", "uintx-4-64"):
        assert quantization.card_reason(recipe, (7, 0)) is None


def test_int4_packs_for_torchs_own_kernels_and_bf16_only_kernels_say_so():
    assert quantization.INT4_PACKING == {"cuda": "tile_packed_to_4d", "cpu": "opaque"}
    reason = quantization.weight_dtype_reason("int4wo-128", "cuda", {"float32", "bfloat16"})
    assert reason == ("quantization int4wo-128 on cuda: torch's int4 kernel (the tile_packed_to_4d packing) takes "
                      "bfloat16 weights, and this model's are float32; run it with --precision=bf16 (as TorchAO "
                      "measures its recipes)")
    assert "row-wise float8 scales" in quantization.weight_dtype_reason("float8dq-row", "cuda", {"float16"})
    assert quantization.weight_dtype_reason("float8dq-row", "cuda", {"bfloat16"}) is None
    assert quantization.weight_dtype_reason("int8wo", "cuda", {"float32"}) is None


def test_dry_run_shows_the_drops_with_reasons():
    result = call_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                        "--test=eval", "--quantization=none", "--quantization=float8dq-tensor", "--dry-run", check_rc=0)
    assert "quantization=float8dq-tensor: quantization float8dq-tensor: torchao's float8 dynamic" in result.stdout
    assert '"quantization": null' in result.stdout


def test_aggregate_names_a_quantized_config_as_its_own_backend():
    record = {"model": {"suite_name": "dummy", "model_name": "mlp"}, "timestamp": 1.0,
              "experiment": exp(quantization="int8wo").to_dict(), "metrics": {"per_iter_time": [1.0]}}
    row, _ = inputs.record_row(record)
    assert row.backend == "eager+int8wo" and "quantization" not in row.variant
    record["experiment"] = exp(xla="PJRT", dynamo="openxla", quantization="int8dq").to_dict()
    assert inputs.record_row(record)[0].backend == "openxla+dynamo+int8dq"
    record["experiment"] = {k: v for k, v in exp().to_dict().items() if k != "quantization"}  # an old record
    assert inputs.record_row(record)[0].backend == "eager"
    assert inputs.check_backends(["eager", "eager+int8wo", "openxla+dynamo+int4wo-128"])


# ---------------------------------------------------------------- real sweeps


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    """dummy mlp, eval, eager and PJRT lazy, none / int8wo / int8dq, verified; microbench linear_relu int8wo."""
    out = tmp_path_factory.mktemp("quant")
    common = ["--accelerator=cpu", "--dynamo=None", "--test=eval", "--repeat=1", "--warmup=1", f"--output-dirname={out}"]
    run_runner("--suite-name=dummy", "-k", "^mlp$", "--xla=None", "--xla=PJRT", "--quantization=none",
               "--quantization=int8wo", "--quantization=int8dq", "--verify", *common, check_rc=0)
    run_runner("--suite-name=microbench", "--op=linear_relu", "--shapes=32x64x48", "--xla=None",
               "--quantization=int8wo", *common, check_rc=0)
    return out, read_jsonl(out / "results.jsonl")


@pytest.mark.integration
@pytest.mark.requires_torchao
def test_int8wo_and_int8dq_records_say_so_and_verify(quantized):
    _, found = quantized
    dummy = {(r["experiment"]["xla"], r["experiment"]["quantization"]): r for r in found
             if r["model"]["suite_name"] == "dummy"}
    assert set(dummy) == {(x, q) for x in ((None, "PJRT") if XLA else (None,)) for q in (None, "int8wo", "int8dq")}
    for (xla, recipe), record in dummy.items():
        assert record["status"] == "ok", record.get("error")
        assert record["verification_code"] == "PASS", record
        if recipe:
            info = record["model_info"]["quantization"]
            assert (info["recipe"], info["linear_layers"]) == (recipe, 3)
            # torchao's set_inductor_config, process-wide: the record says what it changed
            assert info["inductor_settings_changed"]["coordinate_descent_tuning"] is True
        else:
            assert "quantization" not in record.get("model_info", {})


@pytest.mark.integration
@pytest.mark.requires_torchao
def test_microbench_quantizes_its_linear_layer(quantized):
    _, found = quantized
    (bench,) = [r for r in found if r["model"]["suite_name"] == "microbench"]
    assert bench["status"] == "ok", bench.get("error")
    assert bench["model"]["model_name"] == "linear_relu-float32-32x64x48"
    assert bench["experiment"]["quantization"] == "int8wo" and bench["model_info"]["quantization"]["linear_layers"] == 1
    assert bench["metrics"]["tflops"]


@pytest.mark.integration
def test_analyzer_column_and_aggregate_comparison(quantized, tmp_path):
    out, _ = quantized
    csv_path = tmp_path / "table.csv"
    run_tool("result_analyzer.py", str(out / "results.jsonl"), f"--output={csv_path}", check_rc=0)
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["experiment_quantization"] for row in rows} == {"", "int8wo", "int8dq"}
    result = run_tool("aggregate.py", str(out / "results.jsonl"), "--report=latest_grouped", "--test=inference",
                      "--filter=^mlp$", "--backends", "eager", "eager+int8wo", "eager+int8dq", "--format=csv",
                      f"--output={tmp_path / 'speedup.csv'}", check_rc=0)
    text = (tmp_path / "speedup.csv").read_text()
    assert "eager+int8wo" in text and "eager+int8dq" in text, (text, result.stderr)
