"""The accuracy rule by the dynamo harness's own model lists (common/accuracy_rule.py, harness_accuracy.yaml):
tolerances per suite, precision, test, accelerator and freezing; the lists and their precedence; every list
naming where it comes from. No torch."""

import pytest

from benchmarks.common import accuracy_rule
from benchmarks.common.accuracy_rule import rule


def test_every_list_names_its_file_and_key_in_the_harness():
    lists = accuracy_rule.harness_lists()
    assert set(accuracy_rule.HARNESS_SUITES) <= set(lists)
    for suite in set(lists) - set(accuracy_rule.HARNESS_SUITES):  # our own test lists say they are ours
        assert all(source.startswith("ours") for source, _ in lists[suite].values()), suite
    for suite, by_key in ((suite, lists[suite]) for suite in accuracy_rule.HARNESS_SUITES):
        for key in ("larger_multiplier", "non_deterministic", "skip_large_models", "skip_eager_not_deterministic"):
            assert key in by_key, (suite, key)  # every suite says, even where the harness has none
        for key, (source, models) in by_key.items():
            assert source and isinstance(models, frozenset), (suite, key)
            if models:  # a list with names was read from a file of the harness
                assert any(name in source for name in ("torchbench.yaml", "huggingface.yaml", "huggingface.py",
                                                       "timm_models.py")), (suite, key, source)


def test_torchbench_defaults_and_its_lists():
    dcgan = rule("torchbench", "dcgan", "fp32", "eval", "cpu")
    assert (dcgan.tolerance, dcgan.tolerance_from) == (1e-4, "torchbench default")
    assert not (dcgan.cosine or dcgan.larger_multiplier or dcgan.non_deterministic or dcgan.skip_from)
    assert rule("torchbench", "dcgan", "bf16", "eval", "cpu").tolerance == 1e-4
    assert rule("torchbench", "dcgan", "fp16", "eval", "cuda").tolerance == 1e-3
    assert rule("torchbench", "dcgan", "amp", "train", "cpu").tolerance == 1e-3  # any autocast: fp16's row
    assert rule("torchbench", "dcgan", "fp32", "train", "cuda").tolerance == 1e-3
    assert rule("torchbench", "dcgan", "fp32", "train", "cpu").tolerance == 1e-4
    # per-model lists, each with its source
    drq = rule("torchbench", "drq", "bf16", "eval", "cpu")
    assert (drq.tolerance, drq.tolerance_from) == (1e-2, "torchbench.yaml tolerance.higher_bf16")
    assert rule("torchbench", "phlippe_resnet", "fp16", "eval", "cuda").tolerance == 1e-2  # higher_fp16
    assert rule("torchbench", "phlippe_resnet", "bf16", "eval", "cpu").tolerance == 1e-4  # not in higher_bf16
    assert rule("torchbench", "yolov3", "amp_fp16", "eval", "cuda").tolerance == 8e-2  # even_higher
    assert rule("torchbench", "yolov3", "fp32", "train", "cuda").tolerance == 8e-2
    assert rule("torchbench", "yolov3", "fp32", "eval", "cpu").tolerance == 1e-4  # even_higher: not on CPU fp32
    assert rule("torchbench", "squeezenet1_1", "bf16", "eval", "xpu").tolerance == 8e-2
    assert rule("torchbench", "squeezenet1_1", "bf16", "eval", "cpu").tolerance == 1e-4
    # freezing's list applies under fp16/autocast with freezing only, and wins over the others
    assert rule("torchbench", "mobilenet_v2", "fp16", "eval", "cuda", freezing=True).tolerance == 8e-2
    assert rule("torchbench", "mobilenet_v2", "fp16", "eval", "cuda").tolerance == 1e-3
    assert rule("torchbench", "yolov3", "fp32", "eval", "cpu").larger_multiplier_from == \
        "torchbench.yaml require_larger_multiplier_for_smaller_tensor"


def test_torchbench_non_deterministic_and_skip_lists():
    mobilenet = rule("torchbench", "mobilenet_v3_large", "fp32", "eval", "cpu")
    assert mobilenet.non_deterministic_from == "torchbench.yaml non_deterministic"
    assert rule("torchbench", "maml", "fp32", "eval", "cpu").skip_from == "torchbench.yaml accuracy.skip.large_models"
    # eager_not_deterministic is a training list
    assert rule("torchbench", "pytorch_unet", "fp32", "train", "cpu").skip_eager_comparison_from == \
        "torchbench.yaml accuracy.skip.eager_not_deterministic"
    assert rule("torchbench", "pytorch_unet", "fp32", "eval", "cpu").skip_eager_comparison_from is None


def test_huggingface_tolerances():
    assert rule("huggingface", "BertForMaskedLM", "fp32", "eval", "cpu").tolerance == 1e-3
    assert rule("huggingface", "BertForMaskedLM", "bf16", "train", "cpu").tolerance == 1e-2
    assert rule("huggingface", "MT5ForConditionalGeneration", "fp32", "train", "cpu").tolerance == 2e-2
    # GPT2ForSequenceClassification is on both inference lists: the CPU one wins on the CPU
    assert rule("huggingface", "GPT2ForSequenceClassification", "fp32", "eval", "cpu").tolerance == 5e-3
    assert rule("huggingface", "GPT2ForSequenceClassification", "fp32", "eval", "cuda").tolerance == 4e-3
    assert rule("huggingface", "DebertaForQuestionAnswering", "fp32", "train", "cpu").tolerance == 1e-2
    assert rule("huggingface", "DebertaForQuestionAnswering", "fp32", "train", "cpu",
                max_autotune=True).tolerance == 2e-2
    assert rule("huggingface", "ElectraForQuestionAnswering", "fp32", "eval", "cpu").larger_multiplier
    assert rule("huggingface", "DebertaV2ForMaskedLM", "fp32", "eval", "cpu").skip_from == \
        "huggingface.yaml accuracy.skip.large_models"


def test_timm_tolerances_training_replaces_freezing():
    assert rule("timm", "mobilenetv2_100", "fp32", "eval", "cpu").tolerance == 1e-3
    assert rule("timm", "mobilenetv2_100", "bf16", "train", "cpu").tolerance == 1e-2
    assert rule("timm", "inception_v3", "fp32", "train", "cpu").tolerance == 4e-2
    assert rule("timm", "sebotnet33ts_256", "fp32", "train", "cpu").tolerance == 8e-2  # even_higher first
    assert rule("timm", "poolformer_m36", "amp", "train", "cpu").tolerance == 4e-2
    assert rule("timm", "poolformer_m36", "fp32", "train", "cpu").tolerance == 1e-2
    assert rule("timm", "selecsls42b", "fp32", "eval", "cpu", freezing=True).tolerance == 8e-2
    assert rule("timm", "gluon_inception_v3", "fp32", "train", "cpu", max_autotune=True).tolerance == 8e-2
    assert rule("timm", "xcit_large_24_p8_224", "fp32", "train", "cpu").skip_eager_comparison_from
    assert not rule("timm", "mobilenetv2_100", "fp32", "eval", "cpu").non_deterministic  # timm lists none


def test_other_suites_take_torchbench_defaults_without_lists_and_the_override_wins():
    faults = rule("faults", "mobilenet_v3_large", "amp_bf16", "eval", "cpu")
    assert faults.tolerance == 1e-3 and "the faults suite is not the harness's" in faults.tolerance_from
    assert not faults.non_deterministic  # the torchbench name does not carry its list to another suite
    override = rule("timm", "inception_v3", "fp32", "train", "cpu", override=0.5)
    assert (override.tolerance, override.tolerance_from) == (0.5, "--verify-tolerance")
    assert override.larger_multiplier  # the lists stay


@pytest.mark.parametrize("dynamo,test,freezing", [("inductor", "eval", True), ("inductor", "train", False),
                                                  ("aot_eager", "eval", False)])
def test_freezing_is_inductors_inference_only(dynamo, test, freezing):
    from benchmarks.common.experiment_config import ExperimentConfig

    experiment = ExperimentConfig(accelerator="cpu", xla=None, dynamo=dynamo, test=test, precision="fp16",
                                  inductor_config="freezing=True")
    assert accuracy_rule.for_experiment("torchbench", "mobilenet_v2", experiment).freezing is freezing
