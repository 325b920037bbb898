"""--verify: each config's record also says whether its result matches eager's, and by how much.

Real sweeps (the runner as a subprocess, torch and torch-xla on the CPU), shared between assertions:
PASS on eager / inductor / PJRT lazy / PJRT + openxla for eval and train; FAIL and EXCEPTION_RAISED from
torch's relu_*_TESTING_ONLY backends; the faults suite's NONDETERMINISTIC_EAGER_RUN, EAGER_FAILED,
declared-random (VERIFIER_SKIPPED), an exception after timing, and a structure mismatch; resume.
The comparison itself is also checked directly on real tensors and outputs.
"""

import collections
import dataclasses
import shutil
import weakref

import pytest

from benchmarks.config.feature_options import VerifyOptions
from benchmarks.results import accuracy_status
from helpers import XLA, call_runner, read_jsonl, run_runner

VERIFY_KEYS = ("verification_code", "verification_mean_rel_error", "verification_max_abs_error",
               "verification_cosine_similarity", "verification_tolerance", "verification_message")
# one call per run: third_call_raises works for exactly the warm-up and the timed run
QUICK = ["--accelerator=cpu", "--repeat=1", "--warmup=1", "--iterations-per-run=1", "--verify"]


def by_config(records: list) -> dict:
    return {(r["model"]["model_name"], r["experiment"]["xla"], r["experiment"]["dynamo"], r["experiment"]["test"]): r
            for r in records}


# ---------------------------------------------------------------- real sweeps


@pytest.fixture(scope="module")
def passing(tmp_path_factory):
    """The dummy mlp on the four backends, eval and train; two verification iterations (train: two steps)."""
    out = tmp_path_factory.mktemp("verify_pass")
    result = run_runner(*QUICK, "--xla=None", "--xla=PJRT", "--dynamo=None", "--dynamo=inductor", "--dynamo=openxla",
                        "--test=eval", "--test=train", "-k", "^mlp$", "--verify-iterations=2",
                        f"--output-dirname={out}", check_rc=0)
    return result, read_jsonl(out / "results.jsonl")


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    """torch's test backends: relu perturbed (wrong numbers) and relu raising (the config cannot run)."""
    out = tmp_path_factory.mktemp("verify_fail")
    run_runner(*QUICK, "--xla=None", "--dynamo=relu_accuracy_error_TESTING_ONLY",
               "--dynamo=relu_runtime_error_TESTING_ONLY", "--test=eval", "--test=train", "-k", "^mlp$",
               f"--output-dirname={out}", check_rc=1)
    return by_config(read_jsonl(out / "results.jsonl"))


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    out = tmp_path_factory.mktemp("verify_faults")
    common = ["--suite-name=faults", *QUICK, "--xla=None", f"--output-dirname={out}"]
    result = run_runner(*common, "--dynamo=None", "--test=eval",
                        "-k", "^(random_output|unseeded_noise|third_call_raises|raise_on_load|segfault)$", check_rc=1)
    run_runner(*common, "--dynamo=eager", "--test=eval", "-k", "^structure_differs$", check_rc=1)  # fail_accuracy
    records = read_jsonl(out / "results.jsonl")
    return result, out, {r["model"]["model_name"]: r for r in records}


@pytest.mark.integration
def test_pass_on_every_backend_for_eval_and_train_with_timing_and_figures(passing):
    result, records = passing
    configs = by_config(records)
    backends = [(None, None), (None, "inductor")] + ([("PJRT", None), ("PJRT", "openxla")] if XLA else [])
    assert set(configs) == {("mlp", xla, dynamo, test) for xla, dynamo in backends for test in ("eval", "train")}
    for key, record in configs.items():
        assert record["status"] == "ok" and record["verify"] is True, key
        assert record["verification_code"] == "PASS", (key, record["verification_message"])
        # Timing is still measured, in the same record.
        assert len(record["metrics"]["per_iter_time"]) == 1 and len(record["metrics"]["warmup_time"]) == 1, key
        # Train compares after the config's own timed steps: only weights put back as they were before
        # timing give an error this small (a step at lr 0.01 moves the gradients far more).
        assert 0 <= record["verification_mean_rel_error"] <= 1e-5, key
        assert 0 <= record["verification_max_abs_error"] <= 1e-4, key
        assert record["verification_cosine_similarity"] > 0.99999, key
        assert record["verification_tolerance"] == 0.02 and record["verification_message"] is None, key
        assert list(record)[list(record).index("verification_code"):][:len(VERIFY_KEYS)] == list(VERIFY_KEYS)
        # Judged against the fp64 eager reference, at the harness's tolerance (TorchBench's row: 1e-4 on the CPU).
        assert record["accuracy"] == "pass" and record["accuracy_reference"] == "fp64", (key, record["accuracy_message"])
        assert record["accuracy_tolerance"] == 1e-4 and record["accuracy_message"] is None, key
        assert 0 < record["accuracy_rmse"] < 1e-5 and 0 < record["accuracy_eager_rmse"] < 1e-5, key
        assert list(record)[list(record).index("verification_message") + 1] == "accuracy", key
        # The device peak of every timed run: PJRT's CPU client reports no memory figures, so the CPU rule.
        assert record["memory_kind"] == "cpu_rss_above_baseline", key
        assert len(record["metrics"]["peak_memory_bytes"]) == 1 and record["metrics"]["peak_memory_bytes"][0] >= 0
    ran = len(configs)  # 8; 4 where torch-xla can't run (its configs dropped, saying why)
    assert f"upstream's verification_code: {ran} PASS" in result.stdout and f"accuracy: {ran} pass" in result.stdout
    assert "upstream's verification_code PASS" in result.stderr  # the per-config progress line, labelled as upstream's


@pytest.mark.integration
def test_accuracy_error_backend_fails_every_time_and_keeps_the_timing(failing):
    for test in ("eval", "train"):
        record = failing[("mlp", None, "relu_accuracy_error_TESTING_ONLY", test)]
        assert record["status"] == "ok" and record["error"] is None
        assert record["verification_code"] == "FAIL"
        assert record["verification_mean_rel_error"] > 0.02
        assert "above the tolerance 0.02" in record["verification_message"]
        assert len(record["metrics"]["per_iter_time"]) == 1 and "error" not in record["metrics"]
        # The harness's judgement catches it too, naming the tensor and the rule.
        assert record["accuracy"] == "fail_accuracy" and record["accuracy_reference"] == "fp64"
        assert record["accuracy_rmse"] > 3 * record["accuracy_eager_rmse"]
        assert "RMSE to fp64" in record["accuracy_message"]


@pytest.mark.integration
def test_runtime_error_backend_is_exception_raised(failing):
    for test in ("eval", "train"):
        record = failing[("mlp", None, "relu_runtime_error_TESTING_ONLY", test)]
        # The config itself cannot run: an error record (no timing exists), and for verification the
        # config raised: EXCEPTION_RAISED, with the phase and the exception in the message.
        assert record["status"] == "error" and record["error"]["phase"] == "compile"
        assert record["verification_code"] == "EXCEPTION_RAISED"
        assert "raised before it could be compared (phase compile)" in record["verification_message"]
        assert "relu" in record["verification_message"].lower()
        assert record["verification_mean_rel_error"] is None
        assert record["accuracy"] == "fail_to_run" and record["accuracy_rmse"] is None


@pytest.mark.integration
def test_random_output_not_declared_is_nondeterministic_eager_run(faults):
    record = faults[2]["unseeded_noise"]
    assert record["status"] == "ok" and len(record["metrics"]["per_iter_time"]) == 1
    assert record["verification_code"] == "NONDETERMINISTIC_EAGER_RUN"
    assert record["verification_message"].startswith("two eager runs differ: mean relative error")
    assert record["verification_mean_rel_error"] > 0 and record["verification_max_abs_error"] > 0
    assert record["accuracy"] == "eager_two_runs_differ"  # never the backend's failure


@pytest.mark.integration
def test_declared_non_deterministic_without_tolerance_opts_out(faults):
    record = faults[2]["random_output"]
    assert record["status"] == "ok" and len(record["metrics"]["per_iter_time"]) == 1
    assert record["verification_code"] == "VERIFIER_SKIPPED"
    assert "declares a non-deterministic output" in record["verification_message"]
    assert record["accuracy"] == "not_checked" and "declares a non-deterministic" in record["accuracy_message"]


@pytest.mark.integration
def test_eager_reference_raising_is_eager_failed(faults):
    record = faults[2]["raise_on_load"]
    assert record["verification_code"] == "EAGER_FAILED"
    assert record["verification_message"] == ("the eager reference raised: RuntimeError: raise_on_load: this model "
                                              "fails while it is built, on purpose")
    assert record["status"] == "error" and record["error"]["phase"] == "load"  # then the config's own build
    assert record["accuracy"] == "eager_fail_to_run"  # eager failed first: not the backend's failure


@pytest.mark.integration
def test_a_child_dying_during_verification_is_verifier_didnt_run(faults):
    # It dies in its first forward: the config's own, which runs before the eager references (so that nothing
    # of them is in its time or memory figures); an exception there is still judged after eager's references.
    record = faults[2]["segfault"]
    assert record["status"] == "crash" and record["error"]["type"] == "SIGSEGV"
    assert record["error"]["phase"] == "compile" and record["verify"] is True
    assert record["verification_code"] == "VERIFIER_DIDNT_RUN"
    assert record["accuracy"] == "fail_to_run"  # the parent's record, derived from the phase


@pytest.mark.integration
def test_exception_during_verification_keeps_the_timing(faults):
    _, out, records = faults
    record = records["third_call_raises"]
    assert record["status"] == "ok" and record["error"] is None and "error" not in record["metrics"]
    assert len(record["metrics"]["per_iter_time"]) == 1 and len(record["metrics"]["warmup_time"]) == 1
    assert record["verification_code"] == "EXCEPTION_RAISED"
    assert record["verification_message"] == ("the config raised during verification: RuntimeError: "
                                              "third_call_raises: this model fails from its third call on, on purpose")
    assert record["accuracy"] == "fail_to_run"
    log = (out / "logs" / "third_call_raises" / "cpu-eager-eval.log").read_text()
    assert "Traceback" in log


@pytest.mark.integration
def test_structure_mismatch_fails_and_says_where(faults):
    record = faults[2]["structure_differs"]
    assert record["status"] == "ok" and record["experiment"]["dynamo"] == "eager"
    assert record["verification_code"] == "FAIL"
    assert record["verification_message"] == "differs from eager: output: keys differ from eager's (extra ['extra'])"
    assert record["accuracy"] == "fail_accuracy" and "structure differs" in record["accuracy_message"]


@pytest.mark.integration
def test_resume_treats_verified_and_unverified_runs_as_different(faults, tmp_path):
    _, out, _ = faults
    shutil.copy(out / "results.jsonl", tmp_path / "results.jsonl")
    args = ["--suite-name=faults", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=1",
            "--warmup=1", "-k", "^random_output$", f"--output-dirname={tmp_path}"]
    again = run_runner(*args, "--verify", check_rc=0)
    assert "1 model(s) x 1 experiment config(s): 0 to run, 1 already in" in again.stderr
    plain = run_runner(*args, check_rc=0)
    assert "0 to run" not in plain.stderr and "1 to run, 0 already in" in plain.stderr
    records = [r for r in read_jsonl(tmp_path / "results.jsonl") if r["model"]["model_name"] == "random_output"]
    assert [r["verify"] for r in records] == [True, False]
    assert records[1]["verification_code"] == "VERIFIER_SKIPPED" and "verification_message" not in records[1]


def test_fingerprint_tells_verified_from_unverified():
    from benchmarks.config.experiment_config import ExperimentConfig
    from benchmarks.results import records
    from benchmarks.runner.plan import Config

    model = {"suite_name": "dummy", "model_name": "mlp"}
    experiment = ExperimentConfig(accelerator="cpu", xla=None, dynamo="inductor", test="eval")
    verified, plain = Config(model, experiment, True), Config(model, experiment, False)
    assert verified.fingerprint != plain.fingerprint

    def record(**verify):
        data = records.new_record(model, experiment.to_dict(), repeat=1, iterations_per_run=1, warmup=1, timestamp=0.0,
                                  verify=False, requested_batch_size=None, environment={})
        data.pop("verify")
        data.update(verify)
        return records.record_fingerprint(data)

    assert record(verify=True) == verified.fingerprint
    assert record(verify=False) == record() == plain.fingerprint  # an old record without the key: unverified


def test_bad_verify_flags_are_one_line_and_exit_2():
    for flag in ("--verify-tolerance=-1", "--verify-tolerance=nan", "--verify-tolerance=abc", "--verify-iterations=0",
                 "--accuracy-tolerance=-1", "--verification-tolerance=abc"):
        result = call_runner("--verify", flag, "--dry-run")
        assert result.returncode == 2, flag
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, flag
        assert flag.split("=")[0] in result.stderr


# ---------------------------------------------------------------- the comparison, on real tensors


def test_compare_figures_on_real_tensors():
    import torch

    from benchmarks.child.accuracy import eager_comparison, output_tree, verify, verify_outputs

    ref = {"a": torch.tensor([1.0, -2.0, 0.0, 4.0]), "b": (torch.tensor([[10.0]]), 3, "x")}
    out = {"a": torch.tensor([1.5, -2.0, 0.0, 4.0]), "b": (torch.tensor([[9.0]]), 3, "x")}
    c = eager_comparison.compare(output_tree.to_cpu(ref), output_tree.to_cpu(out))
    assert c.mismatches == [] and c.elements == 5
    assert c.mean_rel_error == pytest.approx(1.5 / 17.0)  # sum|out-ref| / sum|ref|
    assert c.max_abs_error == pytest.approx(1.0)
    expected_cos = float(torch.nn.functional.cosine_similarity(
        torch.tensor([1.5, -2, 0, 4, 9], dtype=torch.float64), torch.tensor([1.0, -2, 0, 4, 10], dtype=torch.float64),
        dim=0))
    assert c.cosine_similarity == pytest.approx(expected_cos)
    assert eager_comparison.verification_code(c, 0.1) == ("PASS", None)
    code, message = eager_comparison.verification_code(c, 0.05)
    assert code == "FAIL" and message == "mean relative error 0.0882 is above the tolerance 0.05"
    # A reference that is all zeros: any difference is an infinite relative error, recorded as null.
    zeros = eager_comparison.compare(torch.zeros(3), torch.tensor([0.0, 1e-3, 0.0]))
    assert zeros.mean_rel_error == float("inf") and zeros.figures()["verification_mean_rel_error"] is None
    assert eager_comparison.verification_code(zeros, 0.02)[0] == "FAIL"
    # NaN where eager has NaN is equal; NaN where eager has a number is a mismatch.
    nan = float("nan")
    assert eager_comparison.compare(torch.tensor([nan, 1.0]), torch.tensor([nan, 1.0])).identical
    odd = eager_comparison.compare(torch.tensor([1.0, 1.0]), torch.tensor([nan, 1.0]))
    assert odd.mismatches == ["output: 1 element(s) NaN or infinite where the other is not"]
    # Exact equality is what the eager determinism check asks for.
    assert eager_comparison.compare(torch.ones(2, 2), torch.ones(2, 2)).identical
    assert not eager_comparison.compare(torch.ones(2), torch.ones(2) + 1e-7).identical


def test_boolean_masks_are_compared_by_overlap_but_eager_runs_must_match_exactly():
    import torch

    from benchmarks.child.accuracy import eager_comparison

    mask = torch.zeros(10000, dtype=torch.bool)
    mask[:5000] = True
    few = mask.clone()
    few[:3] = False  # 4997/5000
    c = eager_comparison.compare({"m": mask}, {"m": few})
    assert c.mismatches == [] and not c.identical  # eager's determinism check still sees the difference
    assert eager_comparison.verification_code(c, 0.02) == (
        "PASS", "boolean masks judged by overlap (IoU >= 0.99), not exactly: output['m'] IoU 0.9994")
    many = mask.clone()
    many[:100] = False  # 4900/5000
    c = eager_comparison.compare({"m": mask}, {"m": many})
    assert eager_comparison.verification_code(c, 1.0) == (
        "FAIL", "differs from eager: output['m']: boolean mask overlaps eager's by IoU 0.9800 < 0.99")
    assert eager_comparison.compare(mask, mask.clone()).identical
    assert eager_comparison.verification_code(eager_comparison.compare(mask, mask.clone()), 0.02) == ("PASS", None)


def test_structure_mismatches_say_where():
    import torch

    from benchmarks.child.accuracy import eager_comparison, output_tree, verify, verify_outputs

    Pair = collections.namedtuple("Pair", "left right")

    @dataclasses.dataclass
    class Output:  # like a Hugging Face ModelOutput
        logits: torch.Tensor
        hidden: tuple

    t = torch.arange(6.0).reshape(2, 3)
    cases = [
        ({"a": t, "b": t}, {"a": t, "c": t}, "output: keys differ from eager's (missing ['b'], extra ['c'])"),
        ([t, t], [t], "output: length 1, eager 2"),
        ((t,), (t.reshape(3, 2),), "output[0]: shape (3, 2), eager (2, 3)"),
        ({"x": [t, {"y": t}]}, {"x": [t, {"y": t.double()}]},
         "output['x'][1]['y']: dtype torch.float64, eager torch.float32"),
        (Output(t, (t, t)), Output(t, (t, 1)), "output.hidden[1]: int, eager Tensor"),
        (Output(t, (t,)), Pair(t, (t,)), "output: Pair, eager Output"),
        (Pair(t, 3), Pair(t, 4), "output.right: 4, eager 3"),
        ({"ids": torch.tensor([1, 2, 3])}, {"ids": torch.tensor([1, 0, 3])},
         "output['ids']: 1 of 3 torch.int64 elements differ"),
        (t, [t], "output: sequence, eager Tensor"),
    ]
    for ref, out, where in cases:
        comparison = eager_comparison.compare(output_tree.to_cpu(ref), output_tree.to_cpu(out))
        assert comparison.mismatches == [where]
        code, message = eager_comparison.verification_code(comparison, 1.0)  # however loose the tolerance: a FAIL
        assert code == "FAIL" and message == f"differs from eager: {where}"
    # Lists and tuples are both sequences; equal non-tensor leaves and NaN leaves match.
    assert eager_comparison.compare(output_tree.to_cpu((t, None, "s", 2.5, float("nan"))),
                          output_tree.to_cpu([t, None, "s", 2.5, float("nan")])).identical


def test_to_cpu_tree_copies_so_no_view_keeps_a_model_alive():
    import torch

    from benchmarks.child.accuracy import eager_comparison, output_tree, verify, verify_outputs

    weight = torch.nn.Parameter(torch.ones(4))
    copied = output_tree.to_cpu({"view": weight[:2]})
    assert copied["view"].untyped_storage().data_ptr() != weight.untyped_storage().data_ptr()
    assert not copied["view"].requires_grad


# ---------------------------------------------------------------- the child's side, in process


def eval_experiment(test="eval"):
    from benchmarks.config.experiment_config import ExperimentConfig

    return ExperimentConfig(accelerator="cpu", xla=None, dynamo=None, test=test)


def options(**overrides):
    values = {"enabled": True, "iterations": 1}
    values.update(overrides)
    return VerifyOptions(**values)


def test_eager_reference_is_on_the_cpu_and_its_models_are_freed():
    import torch

    from benchmarks.child import config_run
    from benchmarks.child.accuracy import eager_comparison, verify, verify_outputs
    from benchmarks.suites import load_suite

    built, phases = [], []
    suite = load_suite("dummy")

    def build(experiment):
        bm = config_run.build_model(suite, {"suite_name": "dummy", "model_name": "mlp"}, experiment, None)
        built.append(weakref.ref(bm.module))
        return bm

    verifier = verify.Verifier(options(), build, phases.append)
    verifier.compute_reference(eval_experiment("train"))
    assert len(built) == 3 and all(ref() is None for ref in built)  # two eager runs and the fp64 one, all gone
    assert phases == ["reference"] and verifier.outcome.code is None  # reference ready, verdict pending
    # The fp64 reference's gradients are float64 (its loss is the generic reduction's, which sums in float32).
    assert all(g.dtype == torch.float64 for g in verifier.kept.fp64["grad"].values())
    assert all(g.dtype == torch.float32 for g in verifier.kept.reference["grad"].values())
    assert set(verifier.kept.reference) == {"loss", "grad"}
    assert all(g.device.type == "cpu" and not g.requires_grad for g in verifier.kept.reference["grad"].values())
    assert set(verifier.kept.reference["grad"]) == {f"{layer}.{kind}" for layer in ("fc1", "fc2", "out")
                                               for kind in ("weight", "bias")}


def run_declared_random(tolerance, **flags):
    """A random model declared non-deterministic, with its own tolerance: checked through the child's steps;
    `flags`: VerifyOptions (the --verify flags)."""
    import torch

    from benchmarks.child import measured_loop
    from benchmarks.child.accuracy import eager_comparison, verify, verify_outputs
    from benchmarks.suites import BenchmarkModel
    from benchmarks.suites.faults_models import RandomOutput

    def build(experiment):
        torch.manual_seed(0)
        return BenchmarkModel(module=RandomOutput(), example_inputs=(torch.randn(4, 8),), batch_size=4,
                              deterministic=False, tolerance=tolerance)

    experiment = eval_experiment()
    verifier = verify.Verifier(options(**flags), build)
    verifier.compute_reference(experiment)
    bm = build(experiment)
    step = measured_loop.make_step(bm, experiment, bm.module, bm.example_inputs, {})
    verifier.before_timing(experiment, bm.module, step)
    record = {"verification_code": "VERIFIER_SKIPPED", "status": "ok",
              "metrics": measured_loop.measure(step, experiment, 1, 1, 1)}
    verifier.check(experiment, bm.module, step)
    accuracy_status.settle(record, verifier.finish(record))  # as the child does
    return record


def test_declared_non_deterministic_with_a_tolerance_is_compared_with_it():
    loose = run_declared_random(tolerance=10.0)
    assert loose["verification_code"] == "PASS" and loose["verification_tolerance"] == 10.0
    assert 0 < loose["verification_mean_rel_error"] < 10.0  # compared: the noise shows
    # The accuracy: the mean-relative-error fallback, named, at the tolerance that judged it.
    assert loose["accuracy"] == "pass" and loose["accuracy_reference"] == "mean_rel_error"
    assert loose["accuracy_tolerance"] == 10.0 and "mean-relative-error fallback" in loose["accuracy_reason"]
    strict = run_declared_random(tolerance=1e-3)
    assert strict["verification_code"] == "FAIL" and "above the tolerance 0.001" in strict["verification_message"]
    assert strict["accuracy"] == "fail_accuracy" and strict["accuracy_reference"] == "mean_rel_error"


def test_each_rule_has_its_own_override_flag():
    """--verification-tolerance replaces verification_code's limit, the model's own too; --accuracy-tolerance (the
    harness's rule) leaves it alone (config/tolerances.py: one flag per rule)."""
    overridden = run_declared_random(tolerance=1e-3, verification_tolerance=10.0)
    assert overridden["verification_code"] == "PASS" and overridden["verification_tolerance"] == 10.0
    assert overridden["accuracy"] == "pass" and overridden["accuracy_tolerance"] == 10.0  # the fallback's limit
    other_rule = run_declared_random(tolerance=1e-3, accuracy_tolerance=10.0)
    assert other_rule["verification_code"] == "FAIL" and other_rule["verification_tolerance"] == 1e-3


def test_an_eager_reference_the_suite_skips_is_not_a_failure():
    from benchmarks.child.accuracy import eager_comparison, output_tree, verify, verify_outputs
    from benchmarks.suites import ModelSkipped

    def build(experiment):
        raise ModelSkipped("no eager run for this one")

    verifier = verify.Verifier(options(), build)
    verifier.compute_reference(eval_experiment())
    record = {"verification_code": "VERIFIER_SKIPPED", "status": "ok", "metrics": {"total_time": [1.0]}}
    assert accuracy_status.settle(record, verifier.finish(record)) == "not_checked"
    assert record["verification_code"] == "VERIFIER_SKIPPED" and record["metrics"] == {"total_time": [1.0]}
    assert record["verification_message"] == "the suite skips the eager reference: no eager run for this one"


def test_train_result_is_the_same_with_collect_full_output():
    import torch

    from benchmarks.child import backends, measured_loop
    from benchmarks.child.accuracy import eager_comparison, verify, verify_outputs
    from benchmarks.suites import load_suite

    experiment = eval_experiment("train")
    results = []
    for full_output in (False, True):
        backends.seed_everything(experiment)
        bm = load_suite("dummy").build({"suite_name": "dummy", "model_name": "mlp"}, experiment, "cpu", None)
        step = measured_loop.make_step(bm, experiment, bm.module, tuple(bm.example_inputs), {}, full_output=full_output)
        results.append(verify_outputs.collect(experiment, bm.module, step()))
    plain, full = results
    assert isinstance(full["loss"], torch.Tensor) and full["loss"].shape == ()
    assert eager_comparison.compare(plain, full, "").identical
