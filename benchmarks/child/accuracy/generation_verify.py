"""--verify for a model run by generate (child/generation.py): the logits the config computed against eager's, and
the tokens it generated beside eager's.

After timing, the config's step runs once more (then its model is let go), and an eager model of the same experiment (no dynamo, the same
precision and quantization, built afresh) runs generate on the same inputs; a logits processor keeps the logits of
the first two new tokens on each side: the prefill's, and the first decode step's (what transformers' decode-step
compile computes; judged only where both sides chose the same first token, so that both steps saw the same input).
They are judged by the mean relative error at the suite's tolerance (upstream's verification_code, and the record's
`accuracy` at fp32). In a reduced precision (bf16, fp16, autocast), where eager itself is that far from exact, the
record's `accuracy` follows the dynamo harness's rule as for every other model (config/accuracy_rule.py): the same
logits of an fp64 model (one forward over the prompt and eager's first new token) are the reference, and the
config's error to them may be a multiplier times eager's; a model that can't run in fp64 keeps the mean relative
error. The logits generate masks on both sides (-inf: the end token before min_new_tokens) are left out. Greedy
decoding on random weights may part ways once two logits nearly tie in low precision, so the tokens do not decide:
the record's `generation_verify` says how many leading new tokens match eager's.
"""

from __future__ import annotations

import functools
import logging
from typing import Optional

from benchmarks.child import config_hooks, feature_methods
from benchmarks.child.accuracy.eager_comparison import compare, verification_code
from benchmarks.child.config_hooks import HookRun
from benchmarks.config import accuracy_rule, tolerances
from benchmarks.config.experiment_config import AXIS_DEFAULTS
from benchmarks.results import accuracy_status
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.records import RecordStatus, VerificationCode

log = logging.getLogger("benchmarks.child.accuracy.generation_verify")

LOGIT_STEPS = 2  # the prefill's logits (the first new token's) and the first decode step's (the second's)


@functools.lru_cache(maxsize=None)
def logits_recorder_class():
    """The LogitsRecorder class, made once per process (dynamo guards on a processor's type: generation.py)."""
    import torch
    from transformers import LogitsProcessor

    class LogitsRecorder(LogitsProcessor):
        """Keeps (on the CPU, in float32) the scores of the first `steps` new tokens."""

        def __init__(self, steps: int):
            self.steps, self.kept = steps, []

        @torch.compiler.disable
        def __call__(self, input_ids, scores):
            if len(self.kept) < self.steps:
                self.kept.append(scores.detach().to("cpu", torch.float32, copy=True))
            return scores

    return LogitsRecorder


def logits_recorder(steps: int = LOGIT_STEPS):
    """A logits processor that keeps (on the CPU, in float32) the scores of the first `steps` new tokens."""
    return logits_recorder_class()(steps)


def generated(step, new_tokens: int) -> tuple:
    """One generate call of `step` (generation.GenerateStep): (the kept logits, the new token ids on the CPU)."""
    recorder = logits_recorder()
    output = step(recorder)
    return recorder.kept, output[:, -new_tokens:].to("cpu")


def with_tokens(kwargs: dict, tokens) -> dict:
    """generate's inputs with `tokens` (batch, n) appended to what the decoder reads (an encoder-decoder's decoder
    inputs, else the prompt and its mask): one forward then gives the logits of n + 1 steps."""
    import torch

    key = "decoder_input_ids" if "decoder_input_ids" in kwargs else "input_ids"
    found = dict(kwargs, **{key: torch.cat([kwargs[key], tokens.to(kwargs[key].device)], dim=1)})
    if key == "input_ids" and "attention_mask" in kwargs:
        mask = kwargs["attention_mask"]
        found["attention_mask"] = torch.cat([mask, torch.ones_like(tokens, dtype=mask.dtype, device=mask.device)], 1)
    return found


def fp64_logits(run: HookRun, eager, first_tokens, steps: int) -> tuple:
    """(the logits of the first `steps` new tokens from an fp64 model given eager's first tokens, None), or (None, why
    it can't run in fp64). The model is built as eager's at fp32 without quantization, then cast, as for every
    model's fp64 reference (child/accuracy/verify.py)."""
    import torch

    from benchmarks.child import backends
    from benchmarks.child.accuracy import verify_common
    from benchmarks.suites import tensor_trees

    plain = eager.with_(precision=AXIS_DEFAULTS["precision"], quantization=None)
    bm = module = None
    try:
        bm = run.build(plain)
        bm.module = bm.module.to(torch.float64)
        device = backends.target_device(plain)
        module = backends.module_on(bm, device)
        kwargs = tensor_trees.cast_tree(dict(bm.example_kwargs), torch.float64)
        kwargs = tensor_trees.move(with_tokens(kwargs, first_tokens[:, :steps - 1]), device)
        with torch.no_grad():
            logits = module(**kwargs, use_cache=False).logits
        return [logits[:, index - steps, :].to("cpu", torch.float64) for index in range(steps)], None
    except Exception as exc:  # an OOM too: no fp64 reference, the mean relative error decides
        return None, verify_common.one_line("the model can't run in float64", exc)
    finally:
        bm = module = None
        verify_common.free_memory()


def unmasked(result: list, eager: list, fp64: list) -> tuple:
    """The three sides' logits without the columns generate masked (-inf) on the config's or eager's side."""
    import torch

    kept = [torch.isfinite(r) & torch.isfinite(e) for r, e in zip(result, eager)]
    return tuple([side[:, keep.all(dim=0)] for side, keep in zip(sides, kept)] for sides in (result, eager, fp64))


def leading_matches(reference, result) -> int:
    """How many leading new tokens every row of `result` shares with `reference`."""
    equal = (reference == result).all(dim=0).tolist()
    return next((index for index, same in enumerate(equal) if not same), len(equal))


def judged_steps(reference_ids, result_ids) -> int:
    """The logits compared: the prefill's, and the first decode step's where both sides chose the same first token."""
    return 1 + int(bool((reference_ids[:, 0] == result_ids[:, 0]).all()))


class GenerationVerify(config_hooks.Hook):
    """--verify's hook for a generate run, in place of config_hooks.Verify (`replace_verify`)."""

    def __init__(self, options):
        self.options = options  # VerifyOptions: --verification-tolerance
        self.code: Optional[str] = VerificationCode.VERIFIER_SKIPPED
        self.message: Optional[str] = None
        self.comparison = None
        self.tolerance: Optional[float] = None
        self.status: Optional[str] = None  # an eager failure's accuracy status
        self.tokens: Optional[dict] = None
        self.rule = self.judgement = None  # a reduced precision's: the harness's rule and its verdict against fp64
        self.fp64_problem: Optional[str] = None  # why that precision had no fp64 reference

    def check(self, run: HookRun) -> None:
        from benchmarks.child import backends, generation
        from benchmarks.suites import tensor_trees
        from benchmarks.child.accuracy import verify_common

        run.channel.set_phase("verify")
        new_tokens = run.bm.generation.new_tokens
        self.tolerance = next(t for t in (self.options.verification_tolerance, run.bm.tolerance,
                                          tolerances.MEAN_REL_ERROR_DEFAULT.value) if t is not None)
        try:
            backends.seed_everything(run.experiment)
            result_logits, result_ids = generated(run.step, new_tokens)
        except Exception as exc:
            log.exception("the config raised during verification")
            self.code, self.message = VerificationCode.EXCEPTION_RAISED, verify_common.one_line("the config raised", exc)
            return
        run.release_model()  # the config's model is let go before eager's is built: one model in memory at a time
        verify_common.free_memory()
        run.channel.set_phase("reference")
        eager = run.experiment.with_(xla=None, dynamo=None, generation_compile=None)  # eager on the accelerator
        try:
            bm = run.build(eager)
            device = backends.target_device(eager)
            module = backends.module_on(bm, device)
            step = generation.GenerateStep(bm, eager, module, tensor_trees.move(dict(bm.example_kwargs), device))
            backends.seed_everything(eager)
            reference_logits, reference_ids = generated(step, new_tokens)
        except Exception as exc:
            log.exception("the eager reference raised")
            self.code = VerificationCode.EAGER_FAILED
            self.message = verify_common.one_line("the eager reference raised", exc)
            self.status = verify_common.eager_failure_status(1, exc)
            return
        finally:
            bm = module = step = None
            verify_common.free_memory()
        steps = judged_steps(reference_ids, result_ids)
        self.comparison = compare(reference_logits[:steps], result_logits[:steps], "logits")
        self.code, self.message = verification_code(self.comparison, self.tolerance)
        matched = leading_matches(reference_ids, result_ids)
        self.tokens = {"leading_tokens_match": matched, "new_tokens": new_tokens, "logit_steps_judged": steps}
        if (feature_methods.provided("compute_dtype")(run.experiment) or "float32") != "float32":
            self._judge_by_fp64(run, eager, reference_ids, result_logits[:steps], reference_logits[:steps])
        log.info("verification %s: mean relative error %s over %d step(s) of logits; %d of %d leading tokens match "
                 "eager's", self.code, self.comparison.mean_rel_error, steps, matched, new_tokens)

    def _judge_by_fp64(self, run: HookRun, eager, reference_ids, result: list, reference: list) -> None:
        """A reduced precision's verdict: the harness's rule against the fp64 model's logits (self.judgement), or
        the mean relative error where the model can't run in fp64 (self.fp64_problem says why)."""
        from benchmarks.child.accuracy import check

        run.channel.set_phase("reference")
        found, self.fp64_problem = fp64_logits(run, eager, reference_ids, len(result))
        if found is None:
            log.warning("accuracy: %s; judged by the mean relative error instead", self.fp64_problem)
            return
        self.rule = accuracy_rule.for_experiment(run.model_config["suite_name"], run.model_config["model_name"],
                                                 run.experiment, self.options.accuracy_tolerance)
        result, reference, found = unmasked(result, reference, found)
        self.judgement = check.judge(result, reference, found, self.rule.tolerance, "logits",
                                     check.Options(larger_for_small=self.rule.larger_multiplier))
        log.info("accuracy by the harness's rule against fp64 logits: passed %s (RMSE %s, eager's %s, tolerance %g)",
                 self.judgement.passed, self.judgement.rmse, self.judgement.eager_rmse, self.rule.tolerance)

    def finish(self, record: dict) -> Optional[str]:
        """The verification keys after verification_code, `generation_verify`, and the accuracy status decided."""
        from benchmarks.child.accuracy import verify_common

        ok = record.get("status") == RecordStatus.OK
        if not ok:
            self.code = (VerificationCode.VERIFIER_SKIPPED if record.get("status") == RecordStatus.SKIP
                         else VerificationCode.EXCEPTION_RAISED)
        figures = self.comparison.figures() if self.comparison and ok else dict.fromkeys(verify_common.FIGURE_KEYS[:3])
        values = {"verification_code": self.code, **figures, "verification_tolerance": self.tolerance,
                  "verification_message": self.message, "accuracy": None}
        status, reason = self._status(ok)
        judged = self.comparison is not None and ok
        values.update({"accuracy_reference": accuracy_status.REFERENCE_MEAN_REL_ERROR if judged else None,
                       "accuracy_tolerance": self.tolerance if judged else None, "accuracy_rmse": None,
                       "accuracy_eager_rmse": None, "accuracy_message": self.message if judged else None,
                       "accuracy_reason": reason})
        if judged and self.judgement is not None:  # a reduced precision judged against fp64 (the harness's rule)
            values.update({"accuracy_reference": self.judgement.reference, "accuracy_tolerance": self.rule.tolerance,
                           "accuracy_rmse": self.judgement.rmse, "accuracy_eager_rmse": self.judgement.eager_rmse,
                           "accuracy_message": self.judgement.message()})
        verify_common.place_after(record, "verification_code", values)
        if self.tokens is not None and ok:
            record["generation_verify"] = self.tokens
        return status

    def _status(self, ok: bool) -> tuple:
        if not ok:
            return None, None  # the failure's own status (accuracy_status.derive)
        if self.status is not None:
            return self.status, "the eager reference raised on its first run"
        steps = self.tokens["logit_steps_judged"] if self.tokens else 0
        tokens = (f"{self.tokens['leading_tokens_match']} of {self.tokens['new_tokens']} leading new tokens match "
                  "eager's (reported, not judged)") if self.tokens else ""
        if self.judgement is not None and self.code in (VerificationCode.PASS, VerificationCode.FAIL):
            return (AccuracyStatus.PASS if self.judgement.passed else AccuracyStatus.FAIL_ACCURACY,
                    f"generation: the logits of the first {steps} new token(s) against an fp64 model's by the "
                    f"harness's rule ({self.rule.tolerance_from}, tolerance {self.rule.tolerance:g}: RMSE to fp64 "
                    f"at most a multiplier times eager's), as the run's precision is reduced; {tokens}")
        if self.code in (VerificationCode.PASS, VerificationCode.FAIL):
            passed = self.code == VerificationCode.PASS
            fallback = f" (no fp64 reference: {self.fp64_problem})" if self.fp64_problem else ""
            return (AccuracyStatus.PASS if passed else AccuracyStatus.FAIL_ACCURACY,
                    f"generation: the logits of the first {steps} new token(s) against eager's by the mean relative "
                    f"error at the suite's tolerance {self.tolerance:g}{fallback}; {tokens}")
        return None, f"the config's check raised: {self.message}"


def replace_verify(hooks: list) -> list:
    """A generate run's hooks: --verify's (config_hooks.Verify) replaced by GenerationVerify."""
    return [GenerationVerify(hook.options) if isinstance(hook, config_hooks.Verify) else hook for hook in hooks]
