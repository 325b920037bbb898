"""One tolerance vocabulary (config/tolerances.py): a table per rule, each value with its source, read by the rule
it belongs to; one override flag per rule (--verify-tolerance kept as the accuracy flag's old spelling)."""

import math

import pytest

from benchmarks.config import accuracy_rule, tolerances
from benchmarks.config.run_options import build_parser
from benchmarks.suites import all_suites


def test_every_value_is_a_positive_number_with_its_source():
    entries = [entry for table in (tolerances.ACCURACY, tolerances.MEAN_REL_ERROR) for cases in table.values()
               for entry in cases.values()] + [tolerances.MEAN_REL_ERROR_DEFAULT]
    for entry in entries:
        assert math.isfinite(entry.value) and entry.value > 0 and entry.source.strip(), entry
    for atol, rtol in tolerances.GOLDEN.values():
        assert 0 < atol < 1 and 0 < rtol < 1
    assert tolerances.GOLDEN_SOURCE.strip()


@pytest.mark.parametrize("suite,test,accelerator,case", [
    ("torchbench", "eval", "cpu", "default"), ("torchbench", "train", "cuda", "train_gpu"),
    ("huggingface", "eval", "cuda", "eval"), ("huggingface", "train", "cpu", "train"),
    ("timm", "eval", "cpu", "eval"), ("timm", "train", "cpu", "train"),
    ("dummy", "train", "cpu", "default"),  # another suite takes TorchBench's numbers
])
def test_the_accuracy_rule_reads_its_table(suite, test, accelerator, case):
    table = tolerances.ACCURACY[suite if suite in tolerances.ACCURACY else "torchbench"]
    rule = accuracy_rule.rule(suite, "a_model_on_no_list", "fp32", test, accelerator)
    assert rule.tolerance == table[case].value
    listed = accuracy_rule.rule("timm", "inception_v3", "fp32", "train", "cpu")  # timm's REQUIRE_HIGHER_TOLERANCE
    assert listed.tolerance == tolerances.ACCURACY["timm"]["higher"].value


def test_verification_limits_are_the_suites_rows_of_one_table():
    from benchmarks.config.experiment_config import ExperimentConfig
    from benchmarks.suites import huggingface, timm_suite, torchbench

    def limit(test, accelerator, model="dcgan"):
        experiment = ExperimentConfig(accelerator=accelerator, xla=None, dynamo=None, test=test)
        return torchbench.tolerance_for(experiment, model)

    table = tolerances.MEAN_REL_ERROR["torchbench"]
    assert (limit("eval", "cpu"), limit("train", "cpu"), limit("train", "cuda")) == (
        table["eval"].value, table["train"].value, table["train_cuda"].value) == (1e-2, 1e-4, 1e-3)
    # PyTorch/XLA's TorchBenchModel.tolerance: 8e-2 for torchbench.yaml's even_higher models in CUDA training
    assert limit("train", "cuda", model="tacotron2") == table["train_cuda_even_higher"].value == 8e-2
    assert huggingface.TOLERANCE == timm_suite.TOLERANCE == {"eval": 1e-3, "train": 1e-2}
    assert tolerances.mean_rel_error("microbench", "float32") == tolerances.MEAN_REL_ERROR_DEFAULT.value == 0.02
    assert tolerances.mean_rel_error("microbench", "bfloat16") == 5e-2


def test_one_override_flag_per_rule_and_the_old_spelling_is_the_accuracy_flag():
    parser = build_parser(all_suites())
    old = parser.options(["--verify", "--verify-tolerance=0.3"]).verify
    new = parser.options(["--verify", "--accuracy-tolerance=0.3"]).verify
    assert old == new and (new.accuracy_tolerance, new.verification_tolerance) == (0.3, None)
    upstream = parser.options(["--verify", "--verification-tolerance=0.3"]).verify
    assert (upstream.accuracy_tolerance, upstream.verification_tolerance) == (None, 0.3)
    assert tolerances.GOLDEN_FLAGS == ("--golden-atol", "--golden-rtol")
    assert parser.options(["--golden-atol=1e-3"]).golden.atol == 1e-3


def test_help_shows_each_rules_flag_and_not_the_old_spelling(capsys):
    parser = build_parser(all_suites())
    with pytest.raises(SystemExit):
        parser.parse_args(["--help-all"])
    shown = capsys.readouterr().out
    assert "--accuracy-tolerance" in shown and "--verification-tolerance" in shown
    assert "--verify-tolerance" not in shown  # an old spelling: docs/command-line.md lists it


def test_golden_tolerances_by_the_results_dtype():
    assert tolerances.golden("bfloat16") == tolerances.GOLDEN["bfloat16"] == (1e-2, 3e-2)
    assert tolerances.golden("complex64") == tolerances.GOLDEN["float32"]  # a dtype the table lacks: float32's
