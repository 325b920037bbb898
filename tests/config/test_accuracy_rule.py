"""The accuracy rule by the dynamo harness's own model lists (config/accuracy_rule.py, harness_accuracy.yaml):
tolerances per suite, precision, test, accelerator and freezing; the lists and their precedence; every list
naming where it comes from. No torch."""

import pytest

from helpers import ROOT

from benchmarks.config import accuracy_rule
from benchmarks.config.accuracy_rule import rule


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
    assert (override.tolerance, override.tolerance_from) == (0.5, "--accuracy-tolerance")
    assert override.larger_multiplier  # the lists stay


@pytest.mark.parametrize("dynamo,test,freezing", [("inductor", "eval", True), ("inductor", "train", False),
                                                  ("aot_eager", "eval", False)])
def test_freezing_is_inductors_inference_only(dynamo, test, freezing):
    from benchmarks.config.experiment_config import ExperimentConfig

    experiment = ExperimentConfig(accelerator="cpu", xla=None, dynamo=dynamo, test=test, precision="fp16",
                                  inductor_config="freezing=True")
    assert accuracy_rule.for_experiment("torchbench", "mobilenet_v2", experiment).freezing is freezing


def test_an_eager_run_that_raises_gets_the_harness_status_of_that_run():
    import torch

    from benchmarks.child.accuracy.verify_common import eager_failure_status

    assert eager_failure_status(0, RuntimeError("x")) == "eager_fail_to_run"  # the model could not be built
    assert eager_failure_status(1, RuntimeError("x")) == "eager_1st_run_fail"
    assert eager_failure_status(2, RuntimeError("x")) == "eager_2nd_run_fail"
    assert eager_failure_status(1, torch.OutOfMemoryError("x")) == "eager_1st_run_OOM"
    assert eager_failure_status(2, MemoryError()) == "eager_2nd_run_OOM"


# ---------------------------------------------------------------- real sweeps (faults models, eager)


@pytest.fixture(scope="module")
def ruled(tmp_path_factory):
    """Eager fp32 with --verify: the eager reference raising on its first / second run, a model the rule's
    large-model list leaves unchecked, a model without an fp64 run; and a model on the rule's non-deterministic
    list under torch's accuracy-error test backend (judged fail_accuracy, counted as pass)."""
    from helpers import by_model, read_jsonl, run_runner

    out = tmp_path_factory.mktemp("accuracy_rule")
    common = ["--suite-name=faults", "--accelerator=cpu", "--repeat=1", "--warmup=1", "--verify", "--xla=None",
              "--test=eval", f"--output-dirname={out}"]
    run_runner(*common, "--dynamo=None", "-k",
               "^(first_eager_run_raises|second_eager_run_raises|listed_unchecked|refuses_float64|random_output)$",
               check_rc=1)  # eager's failures are the configs' verdicts: bad news
    run_runner(*common, "--dynamo=relu_accuracy_error_TESTING_ONLY", "-k", "^listed_non_deterministic$", check_rc=0)
    return by_model(read_jsonl(out / "results.jsonl"))


@pytest.mark.integration
def test_eager_reference_raising_on_its_first_or_second_run(ruled):
    for model, status, run in (("first_eager_run_raises", "eager_1st_run_fail", "first"),
                               ("second_eager_run_raises", "eager_2nd_run_fail", "second")):
        record = ruled[model]
        assert record["status"] == "ok" and record["verification_code"] == "EAGER_FAILED", model  # config timed
        assert record["accuracy"] == status and record["accuracy_reference"] is None, model
        assert record["accuracy_reason"] == f"the eager reference raised on its {run} run", model
        assert "fails, on purpose" in record["accuracy_message"], model


@pytest.mark.integration
def test_a_model_the_harness_does_not_check_is_pass_due_to_skip(ruled):
    record = ruled["listed_unchecked"]
    assert record["status"] == "ok" and record["verification_code"] == "VERIFIER_SKIPPED"
    assert record["accuracy"] == "pass_due_to_skip" and record["accuracy_reference"] is None
    assert record["accuracy_reason"].startswith("the harness does not check this model's accuracy (ours: ")


@pytest.mark.integration
def test_a_listed_non_deterministic_model_counts_its_fail_accuracy_as_pass_and_says_so(ruled):
    record = ruled["listed_non_deterministic"]
    assert record["status"] == "ok" and record["verification_code"] == "FAIL"  # upstream's check: unchanged
    assert record["accuracy"] == "pass" and record["accuracy_reference"] == "fp64"
    assert record["accuracy_reason"].startswith("non-deterministic by the harness's list (ours: ")
    assert "its fail_accuracy counts as pass; judged fail_accuracy by the harness's rule" in record["accuracy_reason"]
    assert "RMSE to fp64" in record["accuracy_message"]  # what failed stays in the record


@pytest.mark.integration
def test_every_verify_record_says_which_rule_judged_it_or_why_none_did(ruled):
    from benchmarks.results import accuracy_status

    assert len(ruled) == 6
    for model, record in ruled.items():
        assert isinstance(record["accuracy_reason"], str) and record["accuracy_reason"], model
        assert list(record)[list(record).index("accuracy_message") + 1] == "accuracy_reason", model
        if record["verification_code"] in ("PASS", "FAIL"):  # judged: by a named rule, at a tolerance
            assert record["accuracy_reference"] in accuracy_status.REFERENCES, model
            assert record["accuracy_tolerance"] is not None, model
    assert ruled["refuses_float64"]["accuracy_reference"] == "cosine"
    assert ruled["refuses_float64"]["accuracy_reason"].startswith("fp64 reference failed (the model can't run in "
                                                                  "float64: TypeError: refuses_float64")
    assert ruled["random_output"]["accuracy"] == "not_checked"  # declared random, no tolerance: not compared


# ---------------------------------------------------------------- the rule's switches in the judgement (torch)


def test_question_answering_outputs_are_judged_by_their_loss_alone():
    import torch

    from benchmarks.child.accuracy.check import judge
    from benchmarks.child.accuracy.output_tree import Node

    def output(loss, logits):
        return Node("QuestionAnsweringModelOutput", {"loss": torch.tensor(loss), "start_logits": logits})

    logits = torch.linspace(0, 1, 2000)
    eager, fp64 = output(1.0, logits), output(1.0, logits.double())
    assert judge(output(1.0, logits + 5), eager, fp64, 1e-4).passed  # the logits are not compared, as the harness
    verdict = judge(output(2.0, logits), eager, fp64, 1e-4)
    assert not verdict.passed and verdict.failures[0].startswith("output.loss:")
    other = Node("MaskedLMOutput", {"loss": torch.tensor(1.0), "logits": logits + 5})  # any other output: all of it
    assert not judge(other, Node("MaskedLMOutput", {"loss": torch.tensor(1.0), "logits": logits}), None, 1e-4).passed


def test_larger_and_forced_multipliers_and_cosine_by_the_rule():
    import torch

    from benchmarks.child.accuracy import check

    small, medium = torch.zeros(10), torch.zeros(500)
    assert check.multiplier(small, small, 10, 1e-4) == 3.0
    assert check.multiplier(small, small, 10, 1e-4, larger_for_small=True) == 10.0
    assert check.multiplier(medium, medium, 500, 1e-4, larger_for_small=True) == 8.0
    assert check.multiplier(torch.zeros(5000), torch.zeros(5000), 5000, 1e-4, force_max=True) == 10.0
    generator = torch.Generator().manual_seed(0)
    fp64 = torch.randn(400, generator=generator, dtype=torch.float64)
    eager = fp64 + 1e-3 * torch.randn(400, generator=generator, dtype=torch.float64)
    worse = fp64 + 5e-3 * torch.randn(400, generator=generator, dtype=torch.float64)  # ~5x eager's error
    assert not check.judge(worse.float(), eager.float(), fp64, 1e-4).passed  # multiplier 3
    assert check.judge(worse.float(), eager.float(), fp64, 1e-4,
                       options=check.Options(larger_for_small=True)).passed  # 8
    by_cosine = check.judge(worse.float(), eager.float(), fp64, 1e-4,
                            options=check.Options(cosine=True))
    assert by_cosine.passed and by_cosine.reference == "cosine" and by_cosine.rmse is None


def test_settle_is_the_one_writer_of_the_accuracy_key():
    """The verifier's status wins where it judged; else derive's rule, a status already written kept; the key keeps
    the place it was given."""
    from benchmarks.results import accuracy_status

    record = {"status": "ok", "accuracy": None, "accuracy_reason": "x"}
    assert accuracy_status.settle(record, "fail_accuracy") == "fail_accuracy" and list(record)[1] == "accuracy"
    assert accuracy_status.settle({"status": "ok"}) == "not_checked"
    assert accuracy_status.settle({"status": "ok", "accuracy": "pass_due_to_skip"}) == "pass_due_to_skip"
    assert accuracy_status.settle({"status": "crash", "error": {"phase": "load"}}, "not-a-status") == "model_fail_to_load"
    writers = [p.relative_to(ROOT).as_posix() for p in (ROOT / "benchmarks").rglob("*.py")
               if 'record["accuracy"] =' in p.read_text(encoding="utf-8")]
    assert writers == ["benchmarks/results/accuracy_status.py"]
