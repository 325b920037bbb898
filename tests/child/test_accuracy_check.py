"""--verify's accuracy, judged as the dynamo harness judges it, and the device peak memory of every timed run.

Real sweeps (the runner as a subprocess, tiny faults-suite models on the CPU): a bf16 Inductor run that only the
fp64 rule judges fairly, a model that refuses float64 (the cosine fallback), a model holding a known buffer
(memory above the baseline), boolean masks a little and a lot off eager's (judged by overlap). The judgement itself, the tolerance table and the status derivation are also
checked directly, on real tensors and records. The pass on every backend, the accuracy fault, the
nondeterministic model and the eager failures are in test_verify.py; the parent's failure records in
tests/runner/test_failures.py.
"""

import pytest

from helpers import read_jsonl, run_runner, by_model

MiB = 2**20


# ---------------------------------------------------------------- real sweeps


@pytest.fixture(scope="module")
def faults_verified(tmp_path_factory):
    """Eager fp32 (refuses_float64, big_buffer) and Inductor bf16 (elementwise_chain), all with --verify."""
    out = tmp_path_factory.mktemp("accuracy")
    common = ["--suite-name=faults", "--accelerator=cpu", "--repeat=2", "--warmup=1", "--verify", "--xla=None",
              "--test=eval", f"--output-dirname={out}"]
    run_runner(*common, "--dynamo=None", "-k", "^(refuses_float64|big_buffer)$", check_rc=0)
    run_runner(*common, "--dynamo=inductor", "--precision=bf16", "-k", "^elementwise_chain$", check_rc=0)
    return by_model(read_jsonl(out / "results.jsonl"))


@pytest.fixture(scope="module")
def masks_verified(tmp_path_factory):
    """aot_eager with --verify on models whose boolean mask output differs from eager's when compiled: in 4 of
    its 4096 elements, and in a quarter of them."""
    out = tmp_path_factory.mktemp("masks")
    run_runner("--suite-name=faults", "-k", "^mask_differs_a_(little|lot)$", "--accelerator=cpu", "--xla=None",
               "--dynamo=aot_eager", "--test=eval", "--repeat=1", "--warmup=1", "--verify",
               f"--output-dirname={out}", check_rc=1)  # the one that differs a lot fails its check
    return by_model(read_jsonl(out / "results.jsonl"))


@pytest.mark.integration
def test_a_mask_a_few_elements_off_passes_by_overlap_and_the_record_says_so(masks_verified):
    record = masks_verified["mask_differs_a_little"]
    assert record["status"] == "ok" and record["accuracy"] == "pass" and record["verification_code"] == "PASS"
    assert "; boolean masks by overlap, IoU >= 0.99 (the harness's rule, pytorch#171927): output['masks']" in \
        record["accuracy_reason"]
    for key in ("accuracy_message", "verification_message"):  # the IoU of the mask that passed without matching
        said = "boolean masks judged by overlap (IoU >= 0.99), not exactly: output['masks'] IoU 0.99"
        assert record[key].startswith(said), record[key]


@pytest.mark.integration
def test_a_mask_far_off_fails_by_both_checks(masks_verified):
    record = masks_verified["mask_differs_a_lot"]
    assert record["status"] == "ok" and record["accuracy"] == "fail_accuracy" and record["verification_code"] == "FAIL"
    assert "output['masks']: boolean mask overlaps eager's by IoU 0.6" in record["accuracy_message"]
    assert "output['masks']: boolean mask overlaps eager's by IoU 0.6" in record["verification_message"]
    assert "boolean masks by overlap, IoU >= 0.99" in record["accuracy_reason"]


@pytest.mark.integration
def test_bf16_inductor_passes_by_the_fp64_rule_where_a_same_precision_check_fails(faults_verified):
    record = faults_verified["elementwise_chain"]
    assert record["status"] == "ok" and record["experiment"]["precision"] == "bf16"
    tol = record["accuracy_tolerance"]
    assert tol == 1e-4  # TorchBench's bf16 value (our faults suite takes TorchBench's row)
    # A same-precision check at the harness's tolerance FAILS it: Inductor's fused float32 chain is far from
    # eager bf16, which rounds after every operation (here about 5e-2 apart, where allclose wants 1e-4) ...
    assert record["verification_max_abs_error"] > 100 * tol and record["verification_mean_rel_error"] > 10 * tol
    # ... though against fp64 the compiled result is the better one: pass, by the RMSE rule (not by allclose).
    assert record["accuracy"] == "pass" and record["accuracy_reference"] == "fp64"
    assert 0 < record["accuracy_rmse"] < record["accuracy_eager_rmse"]
    assert record["accuracy_message"] is None
    # Upstream's verification_code passes it only by being loose (2 % mean relative error): loose enough to
    # pass a result worse than eager's too (test_upstreams_check_passes_a_result_the_fp64_rule_fails).
    assert record["verification_code"] == "PASS" and record["verification_mean_rel_error"] < 0.02


@pytest.mark.integration
def test_a_model_that_cannot_run_fp64_is_judged_by_cosine_similarity_and_says_so(faults_verified):
    record = faults_verified["refuses_float64"]
    assert record["status"] == "ok" and record["verification_code"] == "PASS"
    assert record["accuracy"] == "pass" and record["accuracy_reference"] == "cosine"
    assert record["accuracy_message"] is None
    assert record["accuracy_reason"] == ("fp64 reference failed (the model can't run in float64: TypeError: "
                                         "refuses_float64: this model has no float64 kernel, on purpose): cosine "
                                         "similarity, as the harness falls back")
    assert record["accuracy_rmse"] is None and record["accuracy_eager_rmse"] is None


@pytest.mark.integration
def test_cpu_memory_is_the_peak_above_what_the_process_held_before_the_model(faults_verified):
    big, small = faults_verified["big_buffer"], faults_verified["refuses_float64"]
    for record in (big, small):
        assert record["memory_kind"] == "cpu_rss_above_baseline"
        assert len(record["metrics"]["peak_memory_bytes"]) == 2  # one sample per timed run
    # The 64 MiB buffer shows (the rest: the tiny layer, its output, allocator slack), the tiny model hardly.
    assert all(60 * MiB <= value <= 64 * MiB + 32 * MiB for value in big["metrics"]["peak_memory_bytes"])
    assert all(value < 16 * MiB for value in small["metrics"]["peak_memory_bytes"])
    # peak_rss_bytes stays the process's lifetime peak though each timed run resets Linux's peak (VmHWM, which
    # getrusage reads too): above the run's peak by more than `import torch` holds (over 100 MiB) ...
    for record in (big, small):
        assert min(record["metrics"]["peak_rss_bytes"]) > max(record["metrics"]["peak_memory_bytes"]) + 100 * MiB
    # ... and it holds big_buffer's 64 MiB; not --verify's float64 reference (the buffer as 128 MiB), which runs
    # after timing so that nothing of verification is in the config's figures (tests/child/test_device_memory.py).
    assert min(big["metrics"]["peak_rss_bytes"]) > max(small["metrics"]["peak_rss_bytes"]) + 60 * MiB
    from benchmarks.results.measurement import Measurement

    assert Measurement(big).peak_memory() == max(big["metrics"]["peak_memory_bytes"])


# ---------------------------------------------------------------- the judgement, in process


def judge(result, eager, fp64, tol=1e-4, root="output"):
    from benchmarks.child.accuracy import check

    return check.judge(result, eager, fp64, tol, root)


def test_allclose_to_eager_passes_and_the_rmse_figures_are_kept():
    import torch

    fp64 = torch.linspace(-1, 1, 2000, dtype=torch.float64)
    eager = fp64.float()
    verdict = judge(eager.clone(), eager, fp64)
    assert verdict.passed and verdict.reference == "fp64" and verdict.failures == []
    assert verdict.rmse == verdict.eager_rmse and 0 <= verdict.rmse < 1e-7


def test_rmse_rule_multiplier_two_for_float32_three_for_bf16():
    import torch

    from benchmarks.child.accuracy import check

    generator = torch.Generator().manual_seed(0)
    fp64 = torch.randn(4000, generator=generator, dtype=torch.float64)
    eager = fp64 + 1e-3 * torch.randn(4000, generator=generator, dtype=torch.float64)  # eager's own error: ~1e-3
    worse = fp64 + 2.5e-3 * torch.randn(4000, generator=generator, dtype=torch.float64)  # ~2.5x eager's
    # float32, 4000 elements, tight tolerance: multiplier 2, so 2.5x eager's error fails ...
    verdict = judge(worse.float(), eager.float(), fp64)
    assert not verdict.passed and "RMSE to fp64" in verdict.failures[0] and "2 x eager's" in verdict.failures[0]
    # ... and in bfloat16 the multiplier is 3.
    assert check.multiplier(worse.bfloat16(), eager.bfloat16(), 4000, 1e-4) == 3.0
    # Small tensors, 1x1 maps and loose tolerances take 3 too.
    assert check.multiplier(worse.float()[:999], eager.float()[:999], 999, 1e-4) == 3.0
    assert check.multiplier(torch.zeros(4, 1000, 1, 1), torch.zeros(4, 1000, 1, 1), 4000, 1e-4) == 3.0
    assert check.multiplier(worse.float(), eager.float(), 4000, 2e-2) == 3.0
    assert judge(worse.float(), eager.float(), fp64, tol=2e-2).passed is True
    # Better than eager always passes.
    assert judge(fp64.float(), eager.float(), fp64).passed


def test_upstreams_check_passes_a_result_the_fp64_rule_fails():
    import torch

    from benchmarks.child.accuracy import eager_comparison
    from benchmarks.config import tolerances

    generator = torch.Generator().manual_seed(0)
    fp64 = torch.randn(4000, generator=generator, dtype=torch.float64)
    eager = (fp64 + 1e-4 * torch.randn(4000, generator=generator, dtype=torch.float64)).float()
    wrong = eager * (1 + 0.01 * torch.randn(4000, generator=generator))  # 1 % noise: 100x eager's error
    old_code, _ = eager_comparison.verification_code(eager_comparison.compare(eager, wrong),
                                                     tolerances.MEAN_REL_ERROR_DEFAULT.value)
    assert old_code == "PASS"  # within 2 % of eager: passed, wrongly
    verdict = judge(wrong, eager, fp64)
    assert not verdict.passed and verdict.rmse > 50 * verdict.eager_rmse


def test_a_leaf_the_fp64_reference_cannot_judge_is_judged_by_cosine_and_named():
    import torch

    generator = torch.Generator().manual_seed(0)
    fp64 = {"a": torch.randn(4000, generator=generator, dtype=torch.float64),
            "b": torch.randn(10, generator=generator, dtype=torch.float64)}  # another shape than the output's "b"
    eager = {"a": fp64["a"].float(), "b": torch.randn(4000, generator=generator)}
    close = {"a": eager["a"], "b": eager["b"] * 1.01}  # not allclose to eager's, but cosine 1
    verdict = judge(close, eager, fp64)
    assert verdict.passed and verdict.reference == "fp64" and verdict.cosine_leaves == ["output['b']"]
    assert verdict.message() == ("judged by cosine similarity, the fp64 reference's tensor having another shape "
                                 "or dtype: output['b']")
    flipped = {"a": eager["a"], "b": -eager["b"]}
    verdict = judge(flipped, eager, fp64)
    assert not verdict.passed and verdict.failures == [
        "output['b']: cosine similarity to eager -1.0000 < 0.99 (judged by cosine: the fp64 reference's is "
        "torch.float64 (10,))"]
    assert judge(eager, eager, fp64).message() is None  # allclose to eager: no cosine judgement to report


def test_boolean_masks_by_overlap_integers_exactly_structure_and_dtype_fail():
    import torch

    mask = torch.zeros(10000, dtype=torch.bool)
    mask[:5000] = True
    one_off = mask.clone()
    one_off[5000] = True  # overlap 5000/5001
    # The harness's IoU >= 0.99 whatever the tolerance (pytorch#171927): a mask a few elements off passes, and says so.
    for tol in (1e-3, 1e-5):
        verdict = judge(one_off, mask, None, tol=tol)
        assert verdict.passed and verdict.masks == ["output"] and verdict.near_masks == ["output IoU 0.9998"]
        assert verdict.message() == "boolean masks judged by overlap (IoU >= 0.99), not exactly: output IoU 0.9998"
    exact = judge(mask, mask, None)
    assert exact.passed and exact.masks == ["output"] and exact.message() is None  # an equal mask: nothing to say
    far_off = mask.clone()
    far_off[5000:5102] = True  # 5000/5102 = 0.98: fails even at a loose tolerance
    verdict = judge(far_off, mask, None, tol=0.1)
    assert not verdict.passed and verdict.failures == ["output: boolean mask overlaps eager's by IoU 0.9800 < 0.99"]
    assert judge(torch.zeros(0, dtype=torch.bool), torch.zeros(0, dtype=torch.bool), None).passed  # both empty
    ints = torch.arange(5)
    assert "1 of 5 torch.int64 elements differ" in judge(ints + (ints == 4), ints, None).failures[0]
    verdict = judge({"a": torch.ones(3)}, {"a": torch.ones(3), "b": torch.ones(3)}, None)
    assert not verdict.passed and "missing [\"output['b']\"]" in verdict.failures[0]
    assert "dtype torch.float16, eager torch.float32" in judge(torch.ones(3).half(), torch.ones(3), None).failures[0]


def test_cosine_fallback_without_fp64():
    import torch

    eager = torch.linspace(-1, 1, 100)
    close = judge(eager * 1.01, eager, None)  # cosine 1.0: a scale error is direction-preserving
    assert close.passed and close.reference == "cosine"
    opposite = judge(-eager, eager, None)
    assert not opposite.passed and "cosine similarity to eager -1.0000 < 0.99" in opposite.failures[0]


def test_train_trees_name_the_loss_and_each_gradient():
    import torch

    eager = {"loss": torch.tensor(1.0), "grad": {"fc.weight": torch.ones(3, 3), "fc.bias": torch.ones(3)}}
    fp64 = {"loss": torch.tensor(1.0, dtype=torch.float64),
            "grad": {"fc.weight": torch.ones(3, 3, dtype=torch.float64), "fc.bias": torch.ones(3, dtype=torch.float64)}}
    result = {"loss": torch.tensor(1.0), "grad": {"fc.weight": torch.ones(3, 3), "fc.bias": -torch.ones(3)}}
    verdict = judge(result, eager, fp64, root="")
    assert not verdict.passed and len(verdict.failures) == 1
    assert verdict.failures[0].startswith("['grad']['fc.bias']: RMSE to fp64 2 > 3 x eager's 0")


# ---------------------------------------------------------------- tolerances and statuses


def test_each_failure_derives_its_harness_status():
    from benchmarks.results import accuracy_status as acc

    def record(status, phase=None, code="VERIFIER_DIDNT_RUN", **extra):
        return dict({"status": status, "verification_code": code,
                     "error": {"phase": phase} if phase else None, "metrics": {}}, **extra)

    assert acc.derive(record("error", "load")) == acc.AccuracyStatus.MODEL_FAIL_TO_LOAD
    assert acc.derive(record("error", "setup")) == acc.AccuracyStatus.MODEL_FAIL_TO_LOAD
    assert acc.derive(record("error", "compile")) == acc.AccuracyStatus.FAIL_TO_RUN
    assert acc.derive(record("crash", "run")) == acc.AccuracyStatus.FAIL_TO_RUN
    assert acc.derive(record("crash", "reference")) == acc.AccuracyStatus.EAGER_FAIL_TO_RUN
    assert acc.derive(record("error", "load", "EAGER_FAILED")) == acc.AccuracyStatus.EAGER_FAIL_TO_RUN
    assert acc.derive(record("oom", "run")) == acc.AccuracyStatus.OOM
    assert acc.derive(record("timeout", "compile")) == acc.AccuracyStatus.TIMEOUT
    assert acc.derive(record("skip", "setup", "VERIFIER_SKIPPED")) == acc.AccuracyStatus.SKIPPED
    assert acc.derive(record("ok", code="VERIFIER_SKIPPED")) == acc.AccuracyStatus.NOT_CHECKED
    assert acc.derive(record("ok", code="EXCEPTION_RAISED")) == acc.AccuracyStatus.FAIL_TO_RUN
    assert acc.derive(record("ok", code="NONDETERMINISTIC_EAGER_RUN")) == acc.AccuracyStatus.EAGER_TWO_RUNS_DIFFER
    assert acc.derive(record("ok", code="FAIL")) == acc.AccuracyStatus.FAIL_ACCURACY
    own = record("ok", code="PASS", accuracy="fail_accuracy")
    assert acc.derive(own) == acc.AccuracyStatus.FAIL_ACCURACY  # its own wins
    # The harness's eager-run statuses are records' own (older records keep EAGER_FAILED -> eager_fail_to_run).
    for own in ("eager_1st_run_fail", "eager_1st_run_OOM", "eager_2nd_run_fail", "eager_2nd_run_OOM",
                "pass_due_to_skip"):
        assert acc.derive(record("ok", code="EAGER_FAILED", accuracy=own)) == own
    assert acc.passed("pass") and acc.passed("pass_due_to_skip") and not acc.passed("eager_1st_run_fail")
    assert "eager_2nd_run_OOM" in acc.FAILURES and "pass_due_to_skip" not in acc.FAILURES
