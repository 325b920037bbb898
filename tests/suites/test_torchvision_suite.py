"""The torchvision suite (random weights, synthetic inputs, cross-entropy on random labels) and tiers."""

import argparse

import pytest

from helpers import call_runner, read_jsonl, run_runner

from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.runner import model_selection

from benchmarks.config import tiers
from benchmarks.suites import load_suite, torchvision_suite

COMMON = ["--suite-name=torchvision", "--accelerator=cpu", "--xla=None", "--repeat=2", "--warmup=1",
          '--model-params={"image_size": 32, "num_classes": 10}']
REQUIRED = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "alexnet", "vgg16", "densenet121",
            "squeezenet1_1", "shufflenet_v2_x1_0", "efficientnet_b0", "regnet_y_400mf", "vit_b_16", "convnext_tiny",
            "swin_t"]


def selection(suite_name, **kw):
    base = dict(filter=[], exclude=[], filter_by_tier=[], exclude_by_tier=[], total_partitions=1, partition_id=0,
                model_params=None, torchbench_dir=None, torchbench_skips=None)
    base.update(kw)
    return [m["model_name"] for m in model_selection.select_models(load_suite(suite_name), RunOptions.from_flags(argparse.Namespace(**base)))]


# ---------------------------------------------------------------- listing and tiers (no torch)


def test_lists_the_required_models_and_every_tier_name_exists():
    names = [m["model_name"] for m in torchvision_suite.SUITE.list_models(argparse.Namespace(model_params=None))]
    assert set(REQUIRED) <= set(names)
    tiered = [name for tier in tiers.TORCHVISION_TIERS.values() for name in tier]
    assert set(tiered) <= set(names) and len(tiered) == len(set(tiered))


def test_filter_and_exclude_by_tier():
    assert selection("torchvision", filter_by_tier=[1]) == sorted(tiers.TORCHVISION_TIERS[1])
    both = selection("torchvision", filter_by_tier=[1, 3])
    assert set(both) == set(tiers.TORCHVISION_TIERS[1] + tiers.TORCHVISION_TIERS[3])
    rest = selection("torchvision", exclude_by_tier=[3])
    assert "vgg16" not in rest and "resnet18" in rest and "vit_b_16" not in rest
    # As upstream: a --filter regex and a tier are a union; an exclusion wins over both.
    assert set(selection("torchvision", filter=["^alexnet$"], filter_by_tier=[1])) == \
        set(tiers.TORCHVISION_TIERS[1]) | {"alexnet"}
    assert "resnet18" not in selection("torchvision", filter_by_tier=[1], exclude=["resnet"])


def test_torchbench_tiers_are_upstreams():
    assert len(tiers.TORCHBENCH_TIERS[1]) == 13 and len(tiers.TORCHBENCH_TIERS[2]) == 27
    assert tiers.TORCHBENCH_TIERS[3] == ["doctr_det_predictor", "doctr_reco_predictor", "drq",
                                         "functorch_maml_omniglot"]
    assert load_suite("torchbench").tiers() is tiers.TORCHBENCH_TIERS


def test_unknown_tier_is_exit_2():
    with pytest.raises(UsageError, match="has no tier 7"):
        selection("torchvision", filter_by_tier=[7])
    result = call_runner("--suite-name=torchvision", "--exclude-by-tier=9", "--dry-run", check_rc=2)
    assert result.stderr.count("\n") == 1 and "suite torchvision has no tier 9 (tiers: [1, 2, 3])" in result.stderr


def test_bad_params_are_exit_2():
    result = call_runner("--suite-name=torchvision", '--model-params={"image_size": 0}', "--dry-run", check_rc=2)
    assert "image_size must be a positive integer" in result.stderr
    result = call_runner("--suite-name=torchvision", '--model-params={"depth": 3}', "--dry-run", check_rc=2)
    assert "takes only image_size, num_classes" in result.stderr


def test_dry_run_shows_a_tier_times_a_batch_size_sweep():
    result = call_runner(*COMMON, "--filter-by-tier=1", "-x", "mobile|shuffle|regnet|mnas", "--dynamo=None",
                        "--test=eval", "--batch-size=1", "--batch-size=3", "--dry-run", check_rc=0)
    lines = [line for line in result.stdout.splitlines() if line.startswith("/") or "experiment_runner" in line]
    assert len(lines) == 4  # squeezenet1_1 and resnet18, two batch sizes each
    assert sum('"batch_size": 1' in line for line in lines) == 2 and sum('"batch_size": 3' in line for line in lines) == 2
    assert all('"params": {"image_size": 32, "num_classes": 10}' in line for line in lines)


# ---------------------------------------------------------------- real runs


@pytest.fixture(scope="module")
def eager(tmp_path_factory):
    out = tmp_path_factory.mktemp("tv_eager")
    run_runner(*COMMON, "-k", "^(squeezenet1_1|resnet18)$", "--dynamo=None", "--test=eval", "--test=train",
               f"--output-dirname={out}", check_rc=0)
    return read_jsonl(out / "results.jsonl")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("tv_compiled")
    run_runner(*COMMON, "-k", "^squeezenet1_1$", "--dynamo=aot_eager", "--test=eval", "--test=train",
               "--batch-size=3", f"--output-dirname={out}", check_rc=0)
    return read_jsonl(out / "results.jsonl")


@pytest.mark.integration
@pytest.mark.requires_torchvision
def test_two_models_eval_and_train_eager(eager):
    got = {(r["model"]["model_name"], r["experiment"]["test"]): r for r in eager}
    assert set(got) == {(m, t) for m in ("squeezenet1_1", "resnet18") for t in ("eval", "train")}
    for (name, _), record in got.items():
        assert record["status"] == "ok", record["error"]
        assert record["model"]["params"] == {"image_size": 32, "num_classes": 10}
        assert record["experiment"]["batch_size"] == torchvision_suite.MODELS[name]  # the CPU default
        assert record["requested_batch_size"] is None
        assert record["model_info"] == {"image_size": 32, "num_classes": 10}
        assert all(t > 0 for t in record["metrics"]["per_iter_time"])


@pytest.mark.integration
@pytest.mark.requires_torchvision
def test_compiled_eval_and_train_at_a_requested_batch_size(compiled):
    assert [r["experiment"]["test"] for r in compiled] == ["eval", "train"]
    for record in compiled:
        assert record["status"] == "ok", record["error"]
        assert record["experiment"]["dynamo"] == "aot_eager"
        assert record["experiment"]["batch_size"] == 3 and record["requested_batch_size"] == 3


def test_an_image_size_a_model_cannot_take_is_a_skip_with_the_reason():
    from benchmarks.config import experiment_config

    exp = experiment_config.ExperimentConfig(accelerator="cpu", xla=None, dynamo=None, test="eval")
    suite = torchvision_suite.SUITE
    small = {"image_size": 64}
    assert "at least 75, not 64" in suite.skip_reason({"model_name": "inception_v3", "params": small}, exp, None)
    assert "multiple of 224" in suite.skip_reason({"model_name": "maxvit_t", "params": small}, exp, None)
    assert suite.skip_reason({"model_name": "vit_b_16", "params": small}, exp, None) is None
    assert suite.skip_reason({"model_name": "inception_v3"}, exp, None) is None  # its default is 299


@pytest.mark.requires_torchvision
def test_models_that_draw_random_numbers_while_training_say_so():
    from benchmarks.config import experiment_config

    suite, params = torchvision_suite.SUITE, {"image_size": 32, "num_classes": 10}
    built = lambda name, test: suite.build({"model_name": name, "params": params}, experiment_config.ExperimentConfig(
        accelerator="cpu", xla=None, dynamo=None, test=test), "cpu", None)
    squeezenet = built("squeezenet1_1", "train")  # dropout: --verify must not expect equal results
    assert squeezenet.deterministic is False and built("squeezenet1_1", "eval").deterministic is True
    assert built("resnet18", "train").deterministic is True
    labels = squeezenet.loss_fn.targets
    assert squeezenet.example_inputs[0].shape == (8, 3, 32, 32) and labels.shape == (8,) and int(labels.max()) < 10
