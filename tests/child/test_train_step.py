"""--train-step, a matrix axis (experiment key `train_step`): the dynamo harness's training step (`harness`: the
whole step compiled, the suite's loss, no optimizer on the CPU) or ours (`forward_loss`); the key in old and new
records and in the resume fingerprint, each suite's default (the plan, --dry-run), labels and the eager baseline;
real sweeps: which step ran, the harness step's graph breaks, and --verify judging a dropout model's harness step
(aot_eager, a Hugging Face model, and Inductor with fallback_random)."""

import json

import pytest

from helpers import ROOT, call_runner, read_jsonl, run_runner

from benchmarks.config import experiment_config
from benchmarks.results import against_eager, records
from benchmarks.results.measurement import Measurement
from benchmarks.runner import matrix
from benchmarks.suites import load_suite

MODELS = ROOT / "tests" / "fixtures" / "train_step_models"
FILES = ["--suite-name=files", f"--search-dir={MODELS}", "--accelerator=cpu", "--xla=None", "--repeat=2",
         "--warmup=1"]
DROPNET = {"suite_name": "files", "model_name": "dropnet"}


def exp(**kw):
    base = dict(accelerator="cpu", xla=None, dynamo=None, test="train")
    base.update(kw)
    return experiment_config.ExperimentConfig(**base)


# ---------------------------------------------------------------- the key (no torch)


def test_the_key_follows_the_compile_keys_and_old_records_ran_forward_loss():
    data = exp(train_step="harness").to_dict()
    keys = list(data)
    assert keys[keys.index("compile_cache") + 1] == "train_step" and data["train_step"] == "harness"
    assert experiment_config.ExperimentConfig.from_dict(data).train_step == "harness"
    old = {k: v for k, v in exp().to_dict().items() if k != "train_step"}
    assert experiment_config.ExperimentConfig.from_dict(old).train_step is None
    assert experiment_config.AXIS_DEFAULTS["train_step"] == "forward_loss"
    # Resume: a record without the key, and one at forward_loss, are the same config; harness is another.
    def fingerprint(e):
        return records.fingerprint(DROPNET, e, None, False)

    assert fingerprint(old) == fingerprint(exp(train_step="forward_loss").to_dict())
    assert fingerprint(old) != fingerprint(exp(train_step="harness").to_dict())
    # Log and artifact names: the non-default step only.
    assert exp(train_step="harness").slug() == "cpu-eager-train-step-harness"
    assert exp(train_step="forward_loss").slug() == exp().slug() == "cpu-eager-train"


@pytest.mark.parametrize("data, message", [
    ({"test": "eval", "train_step": "harness"}, "train_step must be one of harness, forward_loss (train configs)"),
    ({"test": "train", "train_step": "whole"}, "not 'whole' for test train"),
])
def test_a_bad_key_in_a_hand_written_config_is_one_line(data, message):
    with pytest.raises(experiment_config.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        experiment_config.ExperimentConfig.from_dict(dict(exp().to_dict(), **data))
    config = json.dumps(dict(exp().to_dict(), **data))
    result = call_runner(f"--model-config={json.dumps(DROPNET)}", f"--experiment-config={config}", check_rc=2)
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_an_unknown_step_on_the_command_line_is_one_line_and_exit_2():
    result = call_runner("--suite-name=dummy", "--train-step=whole", "--dry-run", check_rc=2)
    assert result.stderr.count("\n") == 1 and "--train-step" in result.stderr and "'whole'" in result.stderr


def test_the_matrix_gives_eval_configs_no_step():
    configs = matrix.expand({"accelerator": ["cpu"], "xla": [None], "dynamo": [None, "inductor"], "test": ["eval", "train"],
                             "train_step": ["harness", None]})
    steps = sorted((c.dynamo or "", c.test, c.train_step or "") for c in configs)
    assert steps == [("", "eval", ""), ("", "train", ""), ("", "train", "harness"),
                     ("inductor", "eval", ""), ("inductor", "train", ""), ("inductor", "train", "harness")]


# ---------------------------------------------------------------- the suites' defaults (the plan)


@pytest.mark.parametrize("suite, default", [
    ("torchbench", "harness"), ("timm", "harness"), ("huggingface", "harness"),
    ("dummy", "forward_loss"), ("files", "forward_loss"), ("torchvision", "forward_loss"), ("scripts", "forward_loss"),
    ("microbench", "forward_loss"),
])
def test_each_suite_defaults_to_the_step_the_dashboard_measures_for_it(suite, default):
    model = {"suite_name": suite, "model_name": "m"}
    assert load_suite(suite).train_step_for(model, exp()) == default
    assert load_suite(suite).train_step_for(model, exp(test="eval")) is None
    asked = "forward_loss" if default == "harness" else "harness"
    assert load_suite(suite).train_step_for(model, exp(train_step=asked)) == asked


def steps_planned(stdout: str) -> list:
    """(test, train_step) of every config --dry-run prints."""
    found = []
    for line in stdout.splitlines():
        start = line.find('--experiment-config=')
        if start >= 0:
            text = line[start + len('--experiment-config='):].strip("'")
            data = json.loads(text[:text.rindex("}") + 1])
            found.append((data["test"], data["train_step"]))
    return found


def test_dry_run_names_the_step_each_train_config_runs():
    dummy = call_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                       "--test=eval", "--test=train", "--dry-run", check_rc=0)
    assert sorted(steps_planned(dummy.stdout)) == [("eval", None), ("train", "forward_loss")]
    timm = call_runner("--suite-name=timm", "-k", "^mobilenetv2_100$", "--accelerator=cpu", "--xla=None",
                      "--dynamo=None", "--test=eval", "--test=train", "--dry-run", check_rc=0)
    assert sorted(steps_planned(timm.stdout)) == [("eval", None), ("train", "harness")]
    both = call_runner("--suite-name=timm", "-k", "^mobilenetv2_100$", "--accelerator=cpu", "--xla=None",
                      "--dynamo=None", "--test=train", "--train-step=forward_loss", "--train-step=harness", "--dry-run",
                      check_rc=0)
    assert sorted(steps_planned(both.stdout)) == [("train", "forward_loss"), ("train", "harness")]


# ---------------------------------------------------------------- labels and the eager baseline


def test_labels_show_the_harness_step_and_eager_is_matched_on_the_same_step():
    def view(dynamo, step):
        experiment = exp(dynamo=dynamo, train_step=step).to_dict()
        if step is None:
            del experiment["train_step"]  # an old record
        return Measurement({"model": DROPNET, "experiment": experiment, "metrics": {"per_iter_time": [1.0]}})

    old, ours, harness = view("inductor", None), view("inductor", "forward_loss"), view("inductor", "harness")
    assert [m.backend for m in (old, ours, harness)] == ["inductor", "inductor", "inductor[harness-step]"]
    assert harness.labels["train_step"] == "harness" and "train_step" not in ours.labels
    index = against_eager.EagerIndex([(view(None, "harness"), None, "eager harness"),
                                      (view(None, "forward_loss"), None, "eager forward_loss")])
    assert index.find(harness) == "eager harness"
    assert index.find(ours) == index.find(old) == "eager forward_loss"


# ---------------------------------------------------------------- real sweeps


@pytest.fixture(scope="module")
def dropnet(tmp_path_factory):
    """dropnet (dropout, batch norm) trained under both steps, eager and aot_eager, with --verify."""
    out = tmp_path_factory.mktemp("train_step")
    run_runner(*FILES, "--dynamo=None", "--dynamo=aot_eager", "--test=train", "--train-step=harness",
               "--train-step=forward_loss", "--verify", f"--output-dirname={out}", check_rc=0)
    return {(r["experiment"]["dynamo"], r["experiment"]["train_step"]): r for r in read_jsonl(out / "results.jsonl")}


@pytest.mark.integration
def test_each_record_says_which_step_ran(dropnet):
    assert set(dropnet) == {(None, "harness"), (None, "forward_loss"), ("aot_eager", "harness"),
                            ("aot_eager", "forward_loss")}
    assert all(r["status"] == "ok" for r in dropnet.values())
    assert dropnet[("aot_eager", "harness")]["verification_code"] == records.VerificationCode.PASS
    assert dropnet[("aot_eager", "harness")]["accuracy"] == "pass"
    assert dropnet[("aot_eager", "harness")]["accuracy_reference"] == "fp64"


@pytest.mark.integration
def test_the_harness_steps_graph_breaks_are_counted(dropnet):
    # The harness's step breaks where it calls what dynamo won't trace: the input clone, the dynamo-disabled
    # zero_grad, torch's loss reduction (twice: the step, then its compute_loss frame, as the harness's
    # TorchBench training counts it: dcgan 5, 4 unique) and backward; ours compiles forward + loss in one graph.
    harness = dropnet[("aot_eager", "harness")]["dynamo_stats"]
    ours = dropnet[("aot_eager", "forward_loss")]["dynamo_stats"]
    assert ours["graph_breaks"] == 0
    assert harness["graph_breaks"] == 5 and harness["unique_graph_breaks"] == 4
    assert sum(reason["count"] for reason in harness["graph_break_reasons"]
               if "reduce_to_scalar_loss" in (reason["explanation"] or "")) == 2
    assert "dynamo_stats" not in dropnet[(None, "harness")]


@pytest.mark.integration
def test_full_output_and_dynamic_batches_keep_working_under_the_harness_step(tmp_path):
    run_runner(*FILES, "--dynamo=aot_eager", "--test=train", "--train-step=harness", "--dynamic=batch",
               "--collect-full-output", "--verify", f"--output-dirname={tmp_path}", check_rc=0)
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "ok" and record["experiment"]["dynamic"] == "batch"
    assert record["verification_code"] == records.VerificationCode.PASS and record["accuracy"] == "pass"
    assert len(record["dynamic_shapes"]["batch_sizes"]) > 1


@pytest.mark.integration
@pytest.mark.requires_loadable_torchvision
def test_a_hugging_face_model_with_dropout_is_judged_under_the_harness_step_only(tmp_path):
    tiny = '{"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "vocab_size": 128, "seq_len": 16}'
    run_runner("--suite-name=huggingface", "-k", "^BertForMaskedLM$", f"--model-params={tiny}", "--accelerator=cpu",
               "--xla=None", "--dynamo=aot_eager", "--test=train", "--train-step=harness", "--train-step=forward_loss",
               "--batch-size=2", "--repeat=2", "--warmup=1", "--verify", f"--output-dirname={tmp_path}", check_rc=0)
    got = {r["experiment"]["train_step"]: r for r in read_jsonl(tmp_path / "results.jsonl")}
    assert got["harness"]["accuracy"] == "pass" and got["harness"]["verification_code"] == records.VerificationCode.PASS
    # Ours draws dropout from the backend's RNG: not compared (the suite says so), as before.
    assert got["forward_loss"]["accuracy"] == "not_checked"
    assert got["forward_loss"]["verification_code"] == records.VerificationCode.VERIFIER_SKIPPED


@pytest.mark.integration
def test_inductor_checks_the_harness_step_of_a_dropout_model_with_eagers_random_numbers(tmp_path):
    run_runner(*FILES, "--dynamo=inductor", "--test=train", "--train-step=harness", "--verify",
               f"--output-dirname={tmp_path}", check_rc=0)
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "ok" and record["experiment"]["train_step"] == "harness"
    # Dropout masks, batch-norm buffers and gradients after 2 steps all equal eager's: fallback_random took effect.
    assert record["verification_code"] == records.VerificationCode.PASS and record["accuracy"] == "pass", \
        record["accuracy_message"]
    assert record["dynamo_stats"]["graph_breaks"] == 5
