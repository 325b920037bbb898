"""The timm suite: the harness's names and batch sizes, image_size where the architecture takes it (a skip
record saying why where it does not), the skip without timm; one sweep of two models, eager and PyTorch/XLA
lazy, eval and train, with --verify."""

import argparse
import importlib.util

import pytest

from helpers import XLA, call_runner, read_jsonl, run_runner

from benchmarks.config import experiment_config
from benchmarks.suites import timm_suite

MODELS = ["deit_tiny_patch16_224.fb_in1k", "mobilenetv2_100"]


def exp(test="eval"):
    return experiment_config.ExperimentConfig("cpu", None, None, test)


def test_the_harness_list_and_image_size():
    models = timm_suite.SUITE.list_models(argparse.Namespace(model_params='{"image_size": 64}'))
    assert len(models) == 18 and {m["model_name"] for m in models} >= set(MODELS)
    assert timm_suite.MODELS["ghostnet_100"] == 512 and timm_suite.MODELS["inception_v3"] == 128
    skip = timm_suite.SUITE.skip_reason({"model_name": "inception_v3", "params": {"image_size": 64}}, exp(), None)
    assert "at least 75, not 64" in skip
    assert timm_suite.SUITE.skip_reason({"model_name": "inception_v3", "params": {"image_size": 96}}, exp(), None) is None
    result = call_runner("--suite-name=timm", '--model-params={"img": 3}', "--dry-run", check_rc=2)
    assert "timm takes only image_size" in result.stderr and result.stderr.count("\n") == 1


def test_without_timm_every_config_is_a_skip_saying_how_to_install(monkeypatch):
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "timm" else found(name, *a))
    assert "pip install timm==" in timm_suite.SUITE.skip_reason({"model_name": "mobilenetv2_100"}, exp(), None)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("timm")
    common = ["--suite-name=timm", "--accelerator=cpu", "--dynamo=None", "--test=eval", "--test=train",
              "--batch-size=2", '--model-params={"image_size": 32}', "--repeat=1", "--warmup=1", "--verify",
              f"--output-dirname={out}"]
    run_runner(*common, "-k", "^(" + "|".join(MODELS) + "|inception_v3)$", "--xla=None", check_rc=0)
    # On XLA, the transformer only: a CNN's training step compiles for half a minute here.
    run_runner(*common, "-k", f"^{MODELS[0]}$", "--xla=PJRT", check_rc=0)
    return read_jsonl(out / "results.jsonl")


@pytest.mark.integration
@pytest.mark.requires_torchvision
def test_models_run_and_verify_on_eager_and_xla(sweep):
    got = {(r["model"]["model_name"], r["experiment"]["xla"], r["experiment"]["test"]): r for r in sweep}
    keys = [(m, None, t) for m in MODELS for t in ("eval", "train")]
    if XLA:  # else dropped, saying why: torch-xla can't run beside this torch
        keys += [(MODELS[0], "PJRT", t) for t in ("eval", "train")]
    assert not [key for key in got if key[1] and not XLA]
    for key in keys:
        record = got[key]
        assert record["status"] == "ok", (key, record.get("error"))
        assert record["verification_code"] == "PASS", (key, record.get("verification_message"))
        assert record["model_info"]["image_size"] == [32, 32] and record["experiment"]["batch_size"] == 2


@pytest.mark.integration
@pytest.mark.requires_torchvision
def test_a_size_the_architecture_cannot_take_is_a_skip_record(sweep):
    skips = [r for r in sweep if r["model"]["model_name"] == "inception_v3"]
    assert len(skips) == 2 and all(r["status"] == "skip" for r in skips)
    assert "needs an image_size of at least 75, not 32" in skips[0]["error"]["message"]


def test_a_pattern_that_spells_a_name_is_a_name_and_a_regex_is_not():
    from benchmarks.suites.library_names import plain_name, unknown_name

    assert plain_name("convnext_tiny") == "convnext_tiny" and plain_name("^convnext_tiny.fb_in1k$") == "convnext_tiny.fb_in1k"
    assert plain_name("^(a|b)$") is None and plain_name("vit.*") is None
    message = str(unknown_name("convnext_tinny", ["convnext_tiny", "resnet50", "convnext_small"], "timm"))
    assert message == "timm has no model 'convnext_tinny'; close matches: convnext_tiny, convnext_small"


@pytest.mark.integration
@pytest.mark.requires_torchvision
def test_any_timm_architecture_runs_by_name_and_an_unknown_one_names_close_matches(tmp_path):
    run_runner("--suite-name=timm", "-k", "convnext_tiny", "--accelerator=cpu", "--xla=None", "--dynamo=None",
               "--test=eval", "--batch-size=1", '--model-params={"image_size": 32}', "--repeat=1", "--warmup=0",
               f"--output-dirname={tmp_path}", check_rc=0)
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert record["model"]["model_name"] == "convnext_tiny" and record["status"] == "ok", record.get("error")
    assert record["experiment"]["batch_size"] == 1 and record["model_info"]["image_size"] == [32, 32]
    unknown = run_runner("--suite-name=timm", "-k", "convnext_tinny", "--dry-run", check_rc=2)
    assert unknown.stderr.count("\n") == 1 and "timm has no model 'convnext_tinny'" in unknown.stderr
    assert "close matches: convnext_tiny" in unknown.stderr


# ---------------------------------------------------------------- the harness's input sizes and images

# A tiny architecture whose config has a test size (256) other than its train size (224).
SIZED = "mobilenetv4_conv_small_050.e3000_r224_in1k"


@pytest.mark.requires_torchvision  # timm imports it
def test_eval_runs_at_timms_test_size_train_at_its_train_size_and_image_size_overrides_both():
    import timm

    module = timm_suite.create(timm, SIZED, None)
    assert timm_suite.input_size(module, "eval", None) == ((3, 256, 256), "test")
    assert timm_suite.input_size(module, "train", None) == ((3, 224, 224), "train")
    assert timm_suite.input_size(module, "eval", 64) == ((3, 64, 64), "model_params")
    assert timm_suite.input_size(module, "train", 64) == ((3, 64, 64), "model_params")
    plain = timm_suite.create(timm, "mobilenetv2_100", None)  # no test size in its config: the one size
    assert timm_suite.input_size(plain, "eval", None) == ((3, 224, 224), "test")


def test_images_are_the_harness_recipe_whatever_seed_the_process_holds():
    import torch

    torch.manual_seed(7)
    images = timm_suite.harness_images(2, (3, 8, 8))
    torch.manual_seed(timm_suite.IMAGE_SEED)  # the harness's own steps, on the global generator
    pixels = torch.randint(256, (2, 3, 8, 8)).float()
    assert torch.equal(images, (pixels - pixels.mean()) / pixels.std())
    assert images.dtype == torch.float32 and abs(images.mean().item()) < 1e-5 and abs(images.std().item() - 1) < 1e-5


@pytest.mark.integration
@pytest.mark.requires_torchvision
def test_the_record_and_the_stored_inputs_show_the_size_that_ran(tmp_path):
    from benchmarks.child.accuracy import golden_store, tensor_tree_file

    store = tmp_path / "golden"
    run_runner("--suite-name=timm", "-k", SIZED, "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
               "--test=train", "--batch-size=2", "--repeat=1", "--warmup=0", f"--save-golden={store}",
               f"--output-dirname={tmp_path}", check_rc=0)
    records = {r["experiment"]["test"]: r for r in read_jsonl(tmp_path / "results.jsonl")}
    for test, size, size_from in (("eval", 256, "test"), ("train", 224, "train")):
        record = records[test]
        assert record["status"] == "ok", record.get("error")
        assert record["model_info"]["image_size"] == [size, size]
        assert record["model_info"]["image_size_from"] == size_from
        entry = golden_store.entry_dir(str(store), record["model"], exp(test).with_(batch_size=2))
        (images,), _ = tensor_tree_file.load(f"{entry}/{golden_store.FILES['inputs']}")
        assert tuple(images.shape) == (2, 3, size, size)
        assert images.equal(timm_suite.harness_images(2, (3, size, size)))
