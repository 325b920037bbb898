"""--verify: does the config compute what eager computes? The accuracy status, verification codes and error figures.

In the child, with --verify (see `Verifier`; docs/accuracy.md):
0. the rule (config/accuracy_rule.py): the harness's tolerance and per-model lists for this suite, model,
   precision, test, accelerator and freezing. A model the harness does not check (its large-model list) gets
   no reference and the accuracy `pass_due_to_skip`;
1. the config is built and timed as usual, first, so that nothing of verification is in its time or memory
   (timing never depends on what verification finds); training keeps its weights as they were before timing;
2. the eager reference (phase `reference`, after timing, or after the config failed: eager's own failure
   still decides the accuracy status): the same model, inputs and seeds on the same accelerator with no
   dynamo and no XLA (for a TPU config: the CPU, the plain device its models are built on), at the run's
   precision, run `--verify-iterations` iterations (default 1; 2 under the harness's training step); eval keeps
   the output, train keeps the loss and every parameter gradient of the last step (the harness's step: also every
   parameter and buffer, a missing gradient as zeros, as the harness's collect_results). It runs twice and the
   two must agree exactly (NONDETERMINISTIC_EAGER_RUN, accuracy `eager_two_runs_differ`, otherwise); a run that
   raises gives `eager_1st_run_fail` / `eager_2nd_run_fail` (`_OOM` for OutOfMemoryError). Then the same in
   float64 (model and floating-point inputs cast, no autocast, no quantization): the fp64 reference; a model
   that can't run it, or that the harness lists under cosine, is judged by cosine similarity instead
   (`accuracy_reference`: cosine). Both are kept on the CPU; the eager models are freed;
3. the config's weights (and optimizer state) are put back as they were before timing, the same
   iterations run again (each side's from a reset seed; a compiled harness step by a step of its own, compiled
   with Inductor's fallback_random so that dropout draws eager's numbers, as the harness checks), and the
   result, moved to the CPU, is judged (child/accuracy/check.py: `accuracy`, `accuracy_*` figures,
   `accuracy_reason` saying which rule) and compared with eager at the run's precision (upstream's
   verification_code and the verification_* figures below, which keep their meaning).

Figures over every floating-point element of the output (complex as real pairs):
`verification_mean_rel_error` = sum |out - ref| / sum |ref| (robust where the reference is near zero),
`verification_max_abs_error`, `verification_cosine_similarity`. PASS when the mean relative error is at
most the verification tolerance (config/tolerances.py MEAN_REL_ERROR): --verification-tolerance, else the
model's own (BenchmarkModel.tolerance) if its suite gives one, else the default. Boolean tensors (masks) pass when
their overlap with eager's (intersection over union) is at least 0.99, as the harness's rule (pytorch#171927; the
verification_message of a pass names a mask that did not match exactly; eager's two runs must still agree
exactly); integer tensors and non-tensor leaves must be equal; a structure mismatch (type, keys, length, shape, dtype) is a FAIL whose message says where. Lists and tuples are
both sequences: a tuple where eager returned a list is not a mismatch.

A model whose suite declares its output random (BenchmarkModel.deterministic=False: dropout in training, a
fault model) skips the determinism check and the harness's rule; it is compared with the tolerance its suite
gives it (`accuracy_reference`: mean_rel_error, the fallback), and without one it opts out (VERIFIER_SKIPPED,
with a message): a random output compared at the default 2 % would only ever FAIL. A model the harness lists
as non-deterministic is judged by its rule, and the failures the harness turns into `pass` are `pass` here
too, `accuracy_reason` saying so and `accuracy_message` keeping what failed.

Importing this module is cheap (torch is imported by the functions that need it).
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Callable, Optional

from benchmarks.child import torch_internals
from benchmarks.child.accuracy import check
from benchmarks.child.accuracy.eager_comparison import compare, verification_code
from benchmarks.child.accuracy.verify_common import (FIGURE_KEYS, eager_failure_status, free_memory, one_line,
                                                     place_after)
from benchmarks.child.accuracy.verify_outputs import (collect, iterations_for, root_name, uses_fallback_random,
                                                      fallback_random)
from benchmarks.child.accuracy.verify_state import Judging, Kept, Outcome
from benchmarks.config import accuracy_rule, tolerances
from benchmarks.config.experiment_config import AXIS_DEFAULTS
from benchmarks.results import accuracy_status
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.records import RecordStatus, VerificationCode
from benchmarks.suites import ModelSkipped

log = logging.getLogger("benchmarks.child.accuracy.verify")


class Verifier:
    """One config's verification; the child calls `before_timing`, then (after timing) `compute_reference` and
    `check`, then `finish`.

    `build(experiment)` returns a seeded BenchmarkModel on the plain accelerator device (the child's
    own model builder, so that eager and the config start from the same weights and inputs). `suite` and
    `model` select the harness's rule (config/accuracy_rule.py): tolerance, cosine, lists.
    Its state: `kept` (the references and the weights put back), `outcome` (upstream's verification), `judging`
    (the accuracy status's parts). Nothing here raises into the child.
    """

    def __init__(self, options, build: Callable, on_phase: Callable[[str], None] = lambda phase: None,
                 suite: str = "", model: str = ""):
        self.options = options  # VerifyOptions: --verify-iterations, --accuracy-tolerance, --verification-tolerance
        self.build = build
        self.on_phase = on_phase
        self.suite = suite
        self.model = model
        self.iterations = options.iterations or 1  # each run's: the step's (iterations_for) once referenced
        self.referenced = False  # whether compute_reference ran (after timing, or after the config failed)
        self.kept = Kept()
        self.outcome = Outcome()
        self.judging = Judging()

    # -- 1. eager reference
    def _eager_result(self, experiment, bm, dtype=None) -> Any:
        """Run `bm` eagerly for the verification iterations (cast to `dtype` first, if given); the result on the CPU."""
        from benchmarks.child import backends, measured_loop
        from benchmarks.suites import tensor_trees

        if dtype is not None:
            bm.module = bm.module.to(dtype)
            bm.example_inputs = tensor_trees.cast_tree(tuple(bm.example_inputs), dtype)
            bm.example_kwargs = tensor_trees.cast_tree(dict(bm.example_kwargs), dtype)
        module = backends.module_on(bm, backends.target_device(experiment))
        args = tensor_trees.move(tuple(bm.example_inputs), backends.target_device(experiment))
        kwargs = tensor_trees.move(dict(bm.example_kwargs), backends.target_device(experiment))
        step = measured_loop.make_step(bm, experiment, module, args, kwargs)
        backends.seed_everything(experiment)
        _, _, output = measured_loop.timed_run(step, experiment, self.iterations)
        return collect(experiment, module, output)

    def compute_reference(self, experiment) -> None:
        """Eager, twice unless the suite declares the config's output random, then in fp64 (unless the rule says
        cosine); then everything eager is freed. A model the harness does not check gets no reference."""
        self.on_phase("reference")
        self.iterations = self.options.iterations or iterations_for(experiment)
        self.referenced = True
        rule = self.judging.rule = accuracy_rule.for_experiment(self.suite, self.model, experiment,
                                                                self.options.accuracy_tolerance)
        if rule.skip_from:  # the harness checks nothing for it, not even eager: neither do we
            self._not_checked(rule)
            return
        eager = experiment.with_(xla=None, dynamo=None)
        if experiment.xla:
            start_xla_runtime(experiment)
        deterministic = self._eager_reference(eager)
        if deterministic:  # a model random by design keeps upstream's comparison only
            self.judging.judged = True
            self.judging.tolerance = rule.tolerance
            if not rule.cosine:
                self.kept.fp64 = self._fp64_result(eager)

    def _not_checked(self, rule) -> None:
        """A model on the harness's large-model list: pass_due_to_skip, with no reference computed."""
        self.judging.status = AccuracyStatus.PASS_DUE_TO_SKIP
        reason = f"the harness does not check this model's accuracy ({rule.skip_from})"
        self.judging.reason = self.outcome.message = reason
        log.info("verification skipped: %s", self.outcome.message)

    def _eager_reference(self, eager) -> Optional[bool]:
        """Eager's result kept as the reference (outcome.code None: `check` decides), once agreed by a second run
        where the model is deterministic. Returns whether it is, None where there is no reference: eager failed,
        the suite skipped it, its two runs differ, or a random output has no tolerance to be compared at."""
        run = 0  # which eager run raised: 0 the build, 1 the first, 2 the second
        try:
            bm = self.build(eager)
            deterministic = bm.deterministic
            if not self._comparable(bm):
                return None
            run = 1
            first = self._eager_result(eager, bm)
            del bm
            free_memory()
            if deterministic:
                run = 2
                if not self._eager_runs_agree(eager, first):
                    return None
        except ModelSkipped as exc:  # a decision, not a failure; the config's own build decides for itself
            self._eager_skipped(exc)
            return None
        except Exception as exc:
            self._eager_failed(run, exc)
            return None
        finally:
            free_memory()
        self.kept.reference, self.outcome.code = first, None  # None: to be decided by `check`
        return deterministic

    def _comparable(self, bm) -> bool:
        """Set the verification tolerance (--verification-tolerance, else the model's own, else the default); False
        for a model that declares its output random and gives no tolerance: it is not compared."""
        outcome, own_tolerance = self.outcome, bm.tolerance
        outcome.tolerance = next(t for t in (self.options.verification_tolerance, own_tolerance,
                                             tolerances.MEAN_REL_ERROR_DEFAULT.value) if t is not None)
        if bm.deterministic or own_tolerance is not None:
            return True
        outcome.tolerance = None
        outcome.message = "the model declares a non-deterministic output and no tolerance: not compared"
        self.judging.reason = f"{RANDOM_BY_DESIGN} and no tolerance: not compared"
        log.info("verification skipped: %s", outcome.message)
        return False

    def _eager_runs_agree(self, eager, first) -> bool:
        """Eager's second run, from a model built again, must equal the first exactly; else
        NONDETERMINISTIC_EAGER_RUN and the accuracy status the harness's lists give (_eager_runs_differ)."""
        outcome = self.outcome
        second = self._eager_result(eager, self.build(eager))
        free_memory()
        runs = compare(first, second, root_name(eager))
        if runs.identical:
            return True
        outcome.code, outcome.comparison = VerificationCode.NONDETERMINISTIC_EAGER_RUN, runs
        outcome.message = ("two eager runs differ: " + (runs.describe_mismatches() or runs.describe_masks() or
                           f"mean relative error {runs.mean_rel_error:.3g}, "
                           f"max abs error {runs.max_abs_error:.3g}"))
        self._eager_runs_differ()
        log.warning("verification: %s", outcome.message)
        return False

    def _eager_skipped(self, exc: BaseException) -> None:
        """The suite skips the model's eager build (ModelSkipped): verifier_skipped, with its reason."""
        outcome = self.outcome
        outcome.code = VerificationCode.VERIFIER_SKIPPED
        outcome.message = f"the suite skips the eager reference: {exc}"
        self.judging.reason = outcome.message
        log.info("verification skipped: %s", outcome.message)

    def _eager_failed(self, run: int, exc: BaseException) -> None:
        """Eager raised (its build, run 0, or its first or second run): EAGER_FAILED, and the harness's status."""
        log.exception("the eager reference raised")
        outcome, judging = self.outcome, self.judging
        outcome.code, outcome.message = VerificationCode.EAGER_FAILED, one_line("the eager reference raised", exc)
        judging.status = eager_failure_status(run, exc)
        judging.reason = (f"the eager reference raised on its {('', 'first', 'second')[run]} run" if run else
                          "the eager reference's model could not be built")

    def _eager_runs_differ(self) -> None:
        """The accuracy status of two eager runs that differ: eager_two_runs_differ, unless a harness list
        says otherwise."""
        judging, rule = self.judging, self.judging.rule
        if rule.non_deterministic:
            judging.status = AccuracyStatus.PASS
            judging.reason = (f"{NON_DETERMINISTIC} ({rule.non_deterministic_from}): two eager runs differ, "
                              f"which it counts as pass; the config was not judged")
        elif rule.skip_eager_comparison_from:
            judging.status = AccuracyStatus.PASS_DUE_TO_SKIP
            judging.reason = (f"the harness does not compare this model's eager runs in training "
                              f"({rule.skip_eager_comparison_from}); they differ, so the config was not judged")
        else:
            judging.status = AccuracyStatus.EAGER_TWO_RUNS_DIFFER
            judging.reason = "two eager runs differ: no reference to judge the config by"

    def _fp64_result(self, eager) -> Any:
        """The fp64 reference on the CPU, or None (and why) when the model can't run in float64."""
        import torch

        plain = eager.with_(precision=AXIS_DEFAULTS["precision"], quantization=None)
        try:
            return self._eager_result(plain, self.build(plain), torch.float64)
        except Exception as exc:  # ModelSkipped too: no fp64 run, so the fallback
            problem = self.judging.fp64_problem = one_line("the model can't run in float64", exc)
            log.warning("accuracy: %s; judged by cosine similarity instead", problem)
            return None
        finally:
            free_memory()

    # -- 2. around the config's timing
    def before_timing(self, experiment, module, step) -> None:
        """Keep what training changes (weights, buffers, optimizer state, loss scale), to start the check from it."""
        if experiment.test != "train":
            return
        try:
            weights = {name: value.detach().to("cpu", copy=True) if hasattr(value, "detach") else copy.deepcopy(value)
                       for name, value in module.state_dict().items()}
            optimizer = getattr(step, "optimizer", None)
            scaler = getattr(step, "grad_scaler", None)  # float16 autocast: its loss scale changes while training
            self.kept.initial = (weights, copy.deepcopy(optimizer.state_dict()) if optimizer is not None else None,
                                 scaler.state_dict() if scaler is not None else None)
        except Exception as exc:
            log.exception("keeping the initial weights raised")
            self._fail(one_line("the config raised during verification", exc))

    def check(self, experiment, module, step, fresh_step: Optional[Callable] = None) -> None:
        """After timing: the config's own result from the initial weights, judged against the references.
        Under the harness's training step a compiled config is checked by a step of its own (`fresh_step()`, the
        config's step made again) compiled with eager's random numbers (`fallback_random_step`), as the harness
        checks; the timed step is never compiled so."""
        kept, outcome = self.kept, self.outcome
        if kept.reference is None:
            return
        self.on_phase("verify")
        try:
            self._put_back_initial(module, step)
            result = collect(experiment, module, self._config_output(experiment, step, fresh_step))
            comparison = outcome.comparison = compare(kept.reference, result, root_name(experiment))
            outcome.code, outcome.message = verification_code(comparison, outcome.tolerance)
            if self.judging.judged:
                self._judge(experiment, result)
            kept.release()
            self._log_check()
        except Exception as exc:
            log.exception("the config raised during verification")
            self._fail(one_line("the config raised during verification", exc))

    def _put_back_initial(self, module, step) -> None:
        """Training: the weights, optimizer state and loss scale as they were before timing (before_timing kept
        them), so that the check starts where eager's reference did."""
        if self.kept.initial is None:
            return
        weights, optimizer_state, scaler_state = self.kept.initial
        module.load_state_dict(weights)
        if optimizer_state is not None:
            step.optimizer.load_state_dict(optimizer_state)
        if scaler_state is not None:
            step.grad_scaler.load_state_dict(scaler_state)

    def _config_output(self, experiment, step, fresh_step: Optional[Callable]) -> Any:
        """The config's last output over the verification iterations, from a reset seed; by a step of its own
        compiled with eager's random numbers where the harness checks so (uses_fallback_random)."""
        import contextlib

        from benchmarks.child import backends, measured_loop

        own_step = fresh_step is not None and uses_fallback_random(experiment)
        with fallback_random() if own_step else contextlib.nullcontext():
            if own_step:
                step = fresh_step()  # compiled at its first call, below
            backends.seed_everything(experiment)
            _, _, output = measured_loop.timed_run(step, experiment, self.iterations)
        return output

    def _judge(self, experiment, result) -> None:
        """The config's result judged by the harness's rule against eager's and the fp64 reference."""
        judging, kept = self.judging, self.kept
        rule = judging.rule
        options = check.Options(cosine=rule.cosine, larger_for_small=rule.larger_multiplier,
                                force_max=force_max_multiplier(rule, experiment))
        judging.judgement = check.judge(result, kept.reference, kept.fp64, judging.tolerance,
                                        root_name(experiment), options)
        judging.force_max = options.force_max

    def _log_check(self) -> None:
        """The check's verification code and figures, and its accuracy judgement where judged, in the child's log."""
        outcome, judging, comparison = self.outcome, self.judging, self.outcome.comparison
        log.info("verification %s: mean relative error %s, max abs error %s, cosine similarity %s%s",
                 outcome.code, comparison.mean_rel_error, comparison.max_abs_error, comparison.cosine_similarity,
                 f" ({outcome.message})" if outcome.message else "")
        judgement = judging.judgement
        if judgement is not None:
            log.info("accuracy %s (%s reference, tolerance %g): RMSE to fp64 %s, eager's %s%s",
                     AccuracyStatus.PASS if judgement.passed else AccuracyStatus.FAIL_ACCURACY,
                     judgement.reference, judging.tolerance, judgement.rmse, judgement.eager_rmse,
                     f" ({judgement.message()})" if judgement.failures else "")

    def kept_bytes(self) -> int:
        """Bytes of the CPU tensors kept for the check (the weights put back; the references, where computed): the
        process holds them during timing, but they are --verify's, not the config's (PeakMemory leaves them out)."""
        return self.kept.nbytes()

    def _fail(self, message: str) -> None:
        self.outcome.code, self.outcome.message = VerificationCode.EXCEPTION_RAISED, message
        self.kept.release()
        self.judging.judgement = None

    def accuracy(self, record: dict) -> tuple:
        """(the status this check decided, its figures: accuracy_status.KEYS but `accuracy`), once the verification code is
        final; accuracy_status.settle writes the status."""
        outcome, judging = self.outcome, self.judging
        ok = record.get("status") == RecordStatus.OK
        judgement = judging.judgement if ok else None
        reference = tolerance = None
        message, reason = outcome.message, judging.reason
        if judging.status is not None and (ok or judging.status not in accuracy_status.PASSING):
            status = judging.status  # eager's failures and differing runs come first, as in the harness
            message = None if message == reason else message
        elif judgement is not None:
            status, reason = self._judged(judgement)
            reference, tolerance, message = judgement.reference, judging.tolerance, judgement.message()
        else:
            status = accuracy_status.derive(dict(record, accuracy=None))
            code = record.get("verification_code")
            if ok and code in (VerificationCode.PASS, VerificationCode.FAIL):  # a declared random output: upstream's
                reference, tolerance = accuracy_status.REFERENCE_MEAN_REL_ERROR, outcome.tolerance
                reason = (f"{RANDOM_BY_DESIGN}: judged by the mean-relative-error fallback (upstream's "
                          f"verification) at {outcome.tolerance:g}, not by the harness's rule")
            elif not (status == AccuracyStatus.NOT_CHECKED and code == VerificationCode.VERIFIER_SKIPPED):
                message = None
                reason = (f"the config's check raised: {outcome.message}" if ok else
                          f"the config did not reach its check (status {record.get('status')}): the accuracy "
                          f"is its failure's")
        return status, {"accuracy_reference": reference, "accuracy_tolerance": tolerance,
                        "accuracy_rmse": judgement.rmse if judgement else None,
                        "accuracy_eager_rmse": judgement.eager_rmse if judgement else None,
                        "accuracy_message": message, "accuracy_reason": reason}

    def _judged(self, judgement) -> tuple:
        """(status, reason) of a config judged by the harness's rule, its lists applied."""
        rule = self.judging.rule
        if judgement.reference == check.FP64:
            reason = f"the harness's rule against the fp64 reference, tolerance {rule.tolerance:g} ({rule.tolerance_from})"
        elif rule.cosine:
            reason = f"the harness lists it under cosine ({rule.cosine_from}), tolerance {rule.tolerance:g}"
        else:
            reason = (f"fp64 reference failed ({self.judging.fp64_problem}): cosine similarity, as the harness "
                      "falls back")
        if judgement.masks:
            reason += (f"; boolean masks by overlap, IoU >= {check.MASK_IOU:g} (the harness's rule, "
                       f"pytorch#171927): {', '.join(judgement.masks[:check.MAX_LISTED])}"
                       + (" ..." if len(judgement.masks) > check.MAX_LISTED else ""))
        if rule.larger_multiplier:
            reason += f"; larger multipliers for small tensors ({rule.larger_multiplier_from})"
        if self.judging.force_max:
            reason += "; multiplier 10 (freezing folded a convolution in bfloat16: same()'s force_max_multiplier)"
        status = AccuracyStatus.PASS if judgement.passed else AccuracyStatus.FAIL_ACCURACY
        if rule.skip_eager_comparison_from:
            return AccuracyStatus.PASS_DUE_TO_SKIP, (
                f"the harness does not check this model in training ({rule.skip_eager_comparison_from}); "
                f"ours, for the record: {status} by {reason}")
        if rule.non_deterministic and status == AccuracyStatus.FAIL_ACCURACY:
            return AccuracyStatus.PASS, (f"{NON_DETERMINISTIC} ({rule.non_deterministic_from}): its fail_accuracy "
                                          f"counts as pass; judged fail_accuracy by {reason}")
        return status, reason

    # -- 3. the record
    def finish(self, record: dict) -> str:
        """Write the outcome into `record` (after any failure was marked), right after verification_code; return the
        accuracy status it decided, for accuracy_status.settle (the `accuracy` key is placed here, written there)."""
        outcome, status = self.outcome, record.get("status")
        if status == RecordStatus.SKIP:
            outcome.code = VerificationCode.VERIFIER_SKIPPED
        elif outcome.code is None:  # the reference was ready but the config failed before its check
            error = record.get("error") or {}
            outcome.code = VerificationCode.EXCEPTION_RAISED
            outcome.message = (f"the config raised before it could be compared (phase {error.get('phase')}): "
                               f"{error.get('type')}: {error.get('message')}")
        if status != RecordStatus.OK:
            self.judging.judgement = None  # a failed config's accuracy is its failure's (accuracy_status.derive)
        self.kept.release()
        values = {"verification_code": outcome.code}
        values.update(outcome.comparison.figures() if outcome.comparison else dict.fromkeys(FIGURE_KEYS[:3]))
        values["verification_tolerance"] = outcome.tolerance
        values["verification_message"] = outcome.message
        status, figures = self.accuracy(dict(record, verification_code=outcome.code))
        values["accuracy"] = None  # its place; accuracy_status.settle writes it
        values.update(figures)
        place_after(record, "verification_code", values)
        return status


RANDOM_BY_DESIGN = "the suite declares this config's output random (BenchmarkModel.deterministic=False)"
NON_DETERMINISTIC = "non-deterministic by the harness's list"


def force_max_multiplier(rule, experiment) -> bool:
    """same()'s force_max_multiplier, as the harness sets it: freezing, bfloat16, and Inductor folded a
    convolution with a binary op (its counter, since the child cleared the counters at setup)."""
    from benchmarks.child import feature_methods

    if not rule.freezing or feature_methods.provided("cast_dtype")(experiment) != "bfloat16":
        return False
    def folded() -> bool:
        from torch._dynamo.utils import counters

        return counters["inductor"]["binary_folding_conv"] > 0

    return bool(torch_internals.read(torch_internals.DYNAMO_COUNTERS, "torch._dynamo.utils.counters", folded, False))


def start_xla_runtime(experiment) -> None:
    """The autograd engine sizes its device queues at the first backward: the XLA runtime must be up before eager's
    backward, or the config's backward fails an internal assert."""
    from benchmarks.child import backends

    try:
        backends.target_device(experiment)
    except Exception as exc:  # the config's own load reports it, in its phase
        log.warning("the XLA device is not available: %s", exc)


