"""The torchbench suite against a TorchBench-shaped fixture package (tests/fixtures/torchbench: the same
layout and Model API as pytorch/benchmark): finding it, listing, building eager and on XLA, batch sizes,
and every skip reason (our skip list, the model's metadata, NotImplementedError, its own train(), a
missing package, missing input data, a download)."""

import argparse
import os
import sys

import pytest

from helpers import ROOT, XLA, by_model, call_runner, read_jsonl, run_runner

from benchmarks.config import experiment_config


from benchmarks.plumbing.cli_support import UsageError
from benchmarks.suites import torchbench, torchbench_checkout, torchbench_skips

FIXTURE = ROOT / "tests" / "fixtures" / "torchbench"
FIXTURE_SKIPS = ROOT / "tests" / "fixtures" / "torchbench_skips.yaml"
COMMON = [f"--torchbench-dir={FIXTURE}", "--suite-name=torchbench", "--accelerator=cpu", "--repeat=2", "--warmup=1"]
FIXTURE_MODELS = ["cpu_train_not_implemented", "downloads_weights", "eval_only", "fixed_batch", "grad_in_eval",
                  "hub_weights", "needs_data", "needs_dependency", "needs_other_models_file", "no_train", "pretrained_convnet",
                  "skip_listed", "tiny_convnet", "canary_mlp"]


def experiment(**kw):
    base = dict(accelerator="cpu", xla=None, dynamo=None, test="train", accelerator_model="Some CPU")
    base.update(kw)
    return experiment_config.ExperimentConfig(**base)


# ---------------------------------------------------------------- finding and listing (parent side, no torch)


def test_found_from_the_flag_as_a_checkout_or_its_package_folder():
    assert torchbench_checkout.find_root(str(FIXTURE)) == (str(FIXTURE), "--torchbench-dir")
    assert torchbench_checkout.find_root(str(FIXTURE / "torchbenchmark"))[0] == str(FIXTURE)
    root, why = torchbench_checkout.find_root(str(ROOT / "tests"))
    assert root is None and "holds no TorchBench checkout" in why


def test_found_as_an_importable_package_then_in_nearby_folders(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURE))
    assert torchbench_checkout.find_root(None) == (str(FIXTURE), "importable torchbenchmark package")
    monkeypatch.undo()
    work = tmp_path / "work" / "project"
    work.mkdir(parents=True)
    (tmp_path / "benchmark").symlink_to(FIXTURE)  # ../../benchmark from the working folder
    monkeypatch.chdir(work)
    root, how = torchbench_checkout.find_root(None)
    assert os.path.samefile(root, FIXTURE) and "benchmark" in how


def test_not_found_is_one_clear_line_and_exit_2(tmp_path):
    cwd = tmp_path / "a" / "b" / "c"
    cwd.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = call_runner("--suite-name=torchbench", "--dry-run", cwd=cwd, env=env)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "TorchBench not found" in lines[0] and "--torchbench-dir" in lines[0]
    assert "Traceback" not in result.stderr


def test_models_are_listed_from_the_folders_with_canary_models_last():
    options = argparse.Namespace(torchbench_dir=str(FIXTURE), torchbench_skips=None, model_params=None)
    models = torchbench.SUITE.list_models(options)
    assert [m["model_name"] for m in models] == FIXTURE_MODELS  # not_a_model has no __init__.py
    assert all(m == {"suite_name": "torchbench", "model_name": m["model_name"]} for m in models)
    # Listing imports nothing of the checkout.
    assert not any(name.startswith("torchbenchmark") for name in sys.modules)


def test_bad_skip_file_and_model_params_are_usage_errors(tmp_path):
    bad = tmp_path / "skips.yaml"
    bad.write_text("skips:\n  - models: [a]\n")
    with pytest.raises(UsageError, match="needs 'reason'"):
        torchbench_skips.load_skips(str(bad))
    bad.write_text("skips:\n  - {reason: r, models: [a], device: cpu}\n")
    with pytest.raises(UsageError, match="unknown key"):
        torchbench_skips.load_skips(str(bad))
    result = call_runner(*COMMON, "--torchbench-skips=/nonexistent/skips.yaml", "--dry-run", check_rc=2)
    assert result.stderr.count("\n") == 1 and "No such file" in result.stderr
    result = call_runner(*COMMON, "--model-params={\"a\": 1}", "--dry-run", check_rc=2)
    assert "takes no --model-params" in result.stderr


def test_project_skip_list_is_valid_and_narrows_by_experiment():
    groups = torchbench_skips.load_skips(None)
    assert groups and all(g["reason"] and g["models"] for g in groups)
    names = {name for g in groups for name in g["models"]}
    assert "cm3leon_generate" in names
    # Pretrained models are not skipped by the list: their weights load from the local cache, or a skip says why.
    assert not {"resnet18", "alexnet", "vgg16", "mobilenet_v2", "hf_clip"} & names
    reason = lambda exp, name: next((g["reason"] for g in groups if torchbench_skips.group_applies(g, name, exp)), None)
    assert reason(experiment(test="eval", xla="PJRT"), "cm3leon_generate")
    assert reason(experiment(test="eval", xla="PJRT", dynamo="openxla"), "cm3leon_generate") is None
    assert reason(experiment(test="eval", xla=None), "cm3leon_generate") is None
    assert reason(experiment(test="eval", accelerator="cuda"), "resnet50_quantized_qat")
    assert reason(experiment(test="eval"), "resnet50_quantized_qat") is None
    assert torchbench_skips.load_skips("none") == []


def test_metadata_not_implemented_entries():
    metadata = {"not_implemented": [{"device": "cpu", "test": "train"}, {"test": "example"},
                                    {"device": "NVIDIA A10G"}]}
    assert "train on cpu" in torchbench_skips.metadata_skip(metadata, experiment())
    assert torchbench_skips.metadata_skip(metadata, experiment(test="eval")) is None
    assert torchbench_skips.metadata_skip(metadata, experiment(test="eval", accelerator="cuda",
                                                         accelerator_model="NVIDIA A10G"))
    assert torchbench_skips.metadata_skip({}, experiment()) is None


# ---------------------------------------------------------------- real sweeps on the fixture


@pytest.fixture(scope="module")
def eager_and_xla(tmp_path_factory):
    """tiny_convnet, eval and train, eager and PyTorch/XLA lazy tensors, at the model's default batch sizes."""
    out = tmp_path_factory.mktemp("tb_xla")
    run_runner(*COMMON, "-k", "^tiny_convnet$", "--xla=None", "--xla=PJRT", "--dynamo=None", "--test=eval",
               "--test=train", f"--output-dirname={out}", check_rc=0)
    return read_jsonl(out / "results.jsonl")


@pytest.fixture(scope="module")
def skips(tmp_path_factory):
    """Every model that cannot train here, for its own reason (train, eager, default batch sizes)."""
    out = tmp_path_factory.mktemp("tb_skips")
    result = run_runner(*COMMON, f"--torchbench-skips={FIXTURE_SKIPS}", "-x",
                        "tiny_convnet|fixed_batch|canary|grad_in_eval|pretrained_convnet|hub_weights",
                        "--xla=None", "--dynamo=None", "--test=train", f"--output-dirname={out}", check_rc=0)
    return result, by_model(read_jsonl(out / "results.jsonl"))


@pytest.fixture(scope="module")
def compiled_with_batch_size(tmp_path_factory):
    out = tmp_path_factory.mktemp("tb_bs")
    run_runner(*COMMON, "-k", "^(tiny_convnet|fixed_batch)$", "--xla=None", "--dynamo=aot_eager", "--test=eval",
               "--batch-size=2", f"--output-dirname={out}", check_rc=0)
    return by_model(read_jsonl(out / "results.jsonl"))


@pytest.mark.integration
def test_eager_and_xla_eval_and_train_run_with_the_same_default_batch_size(eager_and_xla):
    got = {(r["experiment"]["xla"], r["experiment"]["test"]): r for r in eager_and_xla}
    xla = [("PJRT", "eval"), ("PJRT", "train")] if XLA else []  # dropped, saying why, where torch-xla can't run
    assert sorted(got, key=str) == sorted([(None, "eval"), (None, "train")] + xla, key=str)
    for (xla, test), record in got.items():
        assert record["status"] == "ok", record["error"]
        assert record["model"] == {"suite_name": "torchbench", "model_name": "tiny_convnet"}
        assert record["requested_batch_size"] is None
        assert record["experiment"]["batch_size"] == (6 if test == "eval" else 4)  # the model's defaults
        assert record["experiment"]["precision"] == ("bf16" if test == "eval" else "fp32")  # upstream's CPU default
        assert len(record["metrics"]["per_iter_time"]) == 2
        assert ("xla_ExecuteTime_number" in record["metrics"]) == bool(xla)
    if XLA:
        assert got[("PJRT", "train")]["metrics"]["xla_ExecuteTime_number"][0] >= 1


@pytest.mark.integration
def test_a_compiled_backend_and_a_requested_batch_size(compiled_with_batch_size):
    records = compiled_with_batch_size
    for record in records.values():
        assert record["status"] == "ok", record["error"]
        assert record["experiment"]["dynamo"] == "aot_eager" and record["requested_batch_size"] == 2
    assert records["tiny_convnet"]["experiment"]["batch_size"] == 2
    # ALLOW_CUSTOMIZE_BSIZE = False: the model's own batch size runs, and the record says so.
    assert records["fixed_batch"]["experiment"]["batch_size"] == 3


SKIP_REASONS = {
    "cpu_train_not_implemented": ("setup", "metadata.yaml marks train on cpu as not implemented"),
    "skip_listed": ("setup", "skipped by the tests' skip list for training"),
    "eval_only": ("load", "DEFAULT_TRAIN_BSIZE is not implemented"),
    "no_train": ("load", "train is not implemented by this TorchBench model: Training is not supported"),
    "needs_dependency": ("load", "needs the Python module 'fixture_dependency_not_installed'"),
    "needs_data": ("load", "needs TorchBench's input data"),
    # As functorch_maml_omniglot: a file kept in another model's folder; both models' install names the fix.
    "needs_other_models_file": ("load", "run python install.py needs_other_models_file some_other_model in the "
                                "TorchBench checkout"),
    "downloads_weights": ("load", "needs a download while it is built"),
}


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(SKIP_REASONS))
def test_each_skip_is_a_record_that_says_why(skips, name):
    _, records = skips
    record = records[name]
    phase, text = SKIP_REASONS[name]
    assert record["status"] == "skip", record
    assert record["error"]["phase"] == phase and text in record["error"]["message"], record["error"]
    assert record["metrics"]["error"].startswith("SKIP: ") and record["verification_code"] == "VERIFIER_SKIPPED"


@pytest.mark.integration
def test_skips_end_a_sweep_normally(skips):
    result, records = skips
    assert result.returncode == 0 and set(records) == set(SKIP_REASONS)
    assert all(r["status"] == "skip" for r in records.values())


# ---------------------------------------------------------------- pretrained weights, gradients in eval


def checkpoint_sweep(out, home, *extra):
    """Both pretrained fixtures with `home` as TORCH_HOME and HF_HOME (HF_HUB_OFFLINE left to the runner)."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_HUB_CACHE")}
    env.update(TORCH_HOME=str(home), HF_HOME=str(home))
    return run_runner(*COMMON, "-k", "^(pretrained_convnet|hub_weights)$", "--xla=None", "--dynamo=None",
                      "--test=eval", f"--output-dirname={out}", *extra, env=env, check_rc=0)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """pretrained_convnet without its checkpoint in TORCH_HOME, then with it; grad_in_eval (maml's situation)."""
    import torch

    sys.path.insert(0, str(FIXTURE))
    try:
        from torchbenchmark.models.pretrained_convnet import WEIGHTS_URL, Net
    finally:
        sys.path.remove(str(FIXTURE))
        for name in [n for n in sys.modules if n.startswith("torchbenchmark")]:
            del sys.modules[name]
    empty, filled = tmp_path_factory.mktemp("empty_home"), tmp_path_factory.mktemp("filled_home")
    checkpoints = filled / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    torch.manual_seed(1)
    torch.save(Net().state_dict(), checkpoints / WEIGHTS_URL.rsplit("/", 1)[1])
    # A Hugging Face cache entry as the hub client leaves it: refs/main names the snapshot holding the file.
    repo = filled / "hub" / "models--fixture-org--tiny-linear"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    torch.save(torch.nn.Linear(4, 3).state_dict(), repo / "snapshots" / commit / "weights.pt")
    missing_out, present_out, grad_out = (tmp_path_factory.mktemp(n) for n in ("missing", "present", "grad"))
    checkpoint_sweep(missing_out, empty)
    checkpoint_sweep(present_out, filled, "--verify")
    run_runner(*COMMON, "-k", "^grad_in_eval$", "--xla=None", "--xla=PJRT", "--dynamo=None", "--test=eval",
               "--verify", f"--output-dirname={grad_out}", check_rc=0)
    return (by_model(read_jsonl(missing_out / "results.jsonl")), by_model(read_jsonl(present_out / "results.jsonl")),
            read_jsonl(grad_out / "results.jsonl"), empty, WEIGHTS_URL)


@pytest.mark.integration
def test_pretrained_weights_run_from_the_local_caches(pretrained):
    _, records, _, _, _ = pretrained
    assert set(records) == {"pretrained_convnet", "hub_weights"}  # torch hub and Hugging Face hub caches
    for record in records.values():
        assert record["status"] == "ok", record["error"]
        assert record["verification_code"] == "PASS"


def load_skip_message(record: dict) -> str:
    assert record["status"] == "skip" and record["error"]["phase"] == "load", record["error"]
    return record["error"]["message"]


@pytest.mark.integration
def test_missing_pretrained_weights_are_a_skip_naming_the_file_and_the_fetch_command(pretrained):
    records, _, _, empty_home, url = pretrained
    message = load_skip_message(records["pretrained_convnet"])
    wanted = str(empty_home / "hub" / "checkpoints" / url.rsplit("/", 1)[1])
    assert f"pretrained weights missing from the local cache: {wanted};" in message
    assert f"torch.hub.load_state_dict_from_url('{url}')" in message and "python install.py pretrained_convnet" in message
    assert not (empty_home / "hub" / "checkpoints").exists() or not any((empty_home / "hub" / "checkpoints").iterdir())


@pytest.mark.integration
def test_an_eval_that_takes_gradients_runs_with_them(pretrained):
    _, _, records, _, _ = pretrained
    assert {r["experiment"]["xla"] for r in records} == ({None, "PJRT"} if XLA else {None})
    for record in records:
        assert record["status"] == "ok", record["error"]
        assert record["verification_code"] == "PASS", record.get("verification_message")


@pytest.mark.integration
def test_missing_hub_files_are_a_skip_naming_the_cache(pretrained):
    records, _, _, empty_home, _ = pretrained
    message = load_skip_message(records["hub_weights"])
    assert f"not in the local cache {empty_home / 'hub'}" in message and "HF_HUB_OFFLINE=1" in message


def real_torchbench():
    """A real TorchBench checkout: $TORCHBENCH_DIR, else one beside this repository (../torchbench, ...)."""
    named = os.environ.get("TORCHBENCH_DIR")
    if named:
        return torchbench_checkout.checkout_root(named)
    for name in torchbench_checkout.CHECKOUT_NAMES:
        root = torchbench_checkout.checkout_root(str(ROOT.parent / name))
        if root and os.path.isdir(os.path.join(root, torchbench_checkout.PACKAGE, "models", "maml")):
            return root
    return None


@pytest.mark.integration
@pytest.mark.skipif(real_torchbench() is None, reason="no TorchBench checkout: set TORCHBENCH_DIR or clone "
                    "https://github.com/pytorch/benchmark beside this repository as torchbench")
def test_real_maml_eval_runs_with_gradients(tmp_path):
    # maml adapts its weights with torch.autograd.grad inside forward; TorchBench lists it in USE_GRAD_IN_INFERENCE.
    run_runner(f"--torchbench-dir={real_torchbench()}", "--suite-name=torchbench", "-k", "^maml$", "--accelerator=cpu",
               "--xla=None", "--dynamo=None", "--test=eval", "--precision=fp32", "--repeat=1", "--warmup=0",
               f"--output-dirname={tmp_path}", check_rc=0)
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "ok", record.get("error")
    assert record["metrics"]["per_iter_time"][0] > 0
