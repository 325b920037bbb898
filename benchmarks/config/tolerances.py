"""Every tolerance a check judges by: one named table per rule, each value with where it comes from, and the one
flag that overrides it. "Tolerance" is a different number in each rule (docs/runner.md, "Tolerances"):

ACCURACY        the record's `accuracy` (--verify; the dynamo harness's rule, config/accuracy_rule.py): the `tol` of
                torch._dynamo.utils.same: allclose(atol=rtol=tol), else RMSE to the fp64 reference at most a
                multiplier times eager's plus tol/10. Per suite and case; which case applies (test, precision,
                accelerator, freezing, the harness's per-model lists in harness_accuracy.yaml) is accuracy_rule's.
                Record key `accuracy_tolerance`; override --accuracy-tolerance (also spelled --verify-tolerance).
MEAN_REL_ERROR  upstream PyTorch/XLA's `verification_code` (and `accuracy`'s fallback for an output random by
                design): the limit on the mean relative error sum|out-ref|/sum|ref| against eager at the run's
                precision. A default, per suite and case; a model may declare its own (a `files`-suite module's
                TOLERANCE). Record key `verification_tolerance`; override --verification-tolerance.
GOLDEN          --golden: every element within atol + rtol * |golden|. (atol, rtol) by the result's lowest
                floating-point dtype, written into an entry's manifest when it is saved (a manifest may be edited
                to carry a model's own). Record keys `golden.atol`, `golden.rtol`; override --golden-atol and
                --golden-rtol.

Pure Python (no torch): the child's checks and the suites read it.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Tolerance:
    value: float
    source: str  # where the number comes from (a record's `accuracy_reason` names it)


# The flag that overrides each rule's tolerance, for every config of a sweep (the source a record then names).
ACCURACY_FLAG, ACCURACY_FLAG_OLD_NAME = "--accuracy-tolerance", "--verify-tolerance"
MEAN_REL_ERROR_FLAG = "--verification-tolerance"
GOLDEN_FLAGS = ("--golden-atol", "--golden-rtol")

# The harness's numbers (pytorch benchmarks/dynamo, torch 2.9, as harness_accuracy.yaml), each suite's from its
# runner's get_tolerance_and_cosine_flag. A case named after a list applies to the models on that list.
ACCURACY = {
    "torchbench": {  # torchbench.py TorchBenchmarkRunner.get_tolerance_and_cosine_flag
        "default": Tolerance(1e-4, "torchbench default"),
        "half": Tolerance(1e-3, "torchbench default under float16 or autocast"),
        "higher_fp16": Tolerance(1e-2, "torchbench, float16 or autocast, tolerance.higher_fp16"),
        "even_higher": Tolerance(8e-2, "torchbench, float16, autocast or training on cuda/xpu, tolerance.even_higher"),
        "freezing_even_higher": Tolerance(8e-2, "torchbench, float16 or autocast with --freezing, "
                                                "tolerance.freezing.even_higher"),
        "higher_bf16": Tolerance(1e-2, "torchbench, bfloat16, tolerance.higher_bf16"),
        "higher_bf16_xpu": Tolerance(8e-2, "torchbench, bfloat16 on xpu, tolerance.higher_bf16_xpu"),
        "train_gpu": Tolerance(1e-3, "torchbench default for training on cuda/xpu"),
    },
    "huggingface": {  # huggingface.py HuggingfaceRunner.get_tolerance_and_cosine_flag
        "eval": Tolerance(1e-3, "huggingface default for inference"),
        "higher_inference": Tolerance(4e-3, "huggingface, tolerance.higher_inference"),
        "higher_inference_cpu": Tolerance(5e-3, "huggingface on the CPU, tolerance.higher_inference_cpu"),
        "train": Tolerance(1e-2, "huggingface default for training"),
        "higher_training": Tolerance(2e-2, "huggingface, tolerance.higher_training"),
        "higher_max_autotune_training": Tolerance(2e-2, "huggingface under max-autotune, "
                                                        "tolerance.higher_max_autotune_training"),
    },
    "timm": {  # timm_models.py TimmRunner.get_tolerance_and_cosine_flag
        "eval": Tolerance(1e-3, "timm default for inference"),
        "higher_freezing": Tolerance(8e-2, "timm with --freezing, REQUIRE_HIGHER_TOLERANCE_FOR_FREEZING"),
        "train": Tolerance(1e-2, "timm default for training"),
        "higher": Tolerance(4e-2, "timm training, REQUIRE_HIGHER_TOLERANCE"),
        "higher_amp": Tolerance(4e-2, "timm training under autocast, REQUIRE_HIGHER_TOLERANCE_AMP"),
        "even_higher": Tolerance(8e-2, "timm training, REQUIRE_EVEN_HIGHER_TOLERANCE"),
        "even_higher_max_autotune": Tolerance(8e-2, "timm training under max-autotune, "
                                                    "REQUIRE_EVEN_HIGHER_TOLERANCE_MAX_AUTOTUNE"),
    },
}

MEAN_REL_ERROR_DEFAULT = Tolerance(0.02, "PyTorch/XLA's verifier until July 2024 (pytorch/xla#6250, replaced by #7724): "
                                         "a fixed 2 % on the mean relative error, as its README still says")
# Per suite and case; a suite missing here, or a case, takes the default. Upstream's current verifier gives its
# TorchBench numbers to same() (above's rule); here they limit the mean relative error, a looser measure.
MEAN_REL_ERROR = {
    "torchbench": {  # pytorch/xla benchmarks: TorchBenchModel.tolerance (torchbench_model.py), BenchmarkModel's
        "eval": Tolerance(1e-2, "PyTorch/XLA's TorchBenchModel.tolerance for inference"),
        "train_cuda": Tolerance(1e-3, "PyTorch/XLA's TorchBenchModel.tolerance for training on CUDA"),
        "train_cuda_even_higher": Tolerance(8e-2, "PyTorch/XLA's TorchBenchModel.tolerance for training on CUDA, "
                                                  "torchbench.yaml tolerance.even_higher"),
        "train": Tolerance(1e-4, "PyTorch/XLA's BenchmarkModel.tolerance (training off CUDA)"),
    },
    # The dynamo harness's float32 defaults for these suites (ACCURACY's "eval" and "train"): a compiler reorders
    # float32 reductions by about 1e-7..1e-5 relative, a wrong kernel is off by 1e-1 or more.
    "huggingface": {"eval": ACCURACY["huggingface"]["eval"], "train": ACCURACY["huggingface"]["train"]},
    "timm": {"eval": ACCURACY["timm"]["eval"], "train": ACCURACY["timm"]["train"]},
    "microbench": {  # per dtype; float32 takes the default
        "bfloat16": Tolerance(5e-2, "ours, set with the suite: a bfloat16 op against its eager run"),
        "float16": Tolerance(1e-2, "ours, set with the suite: a float16 op against its eager run"),
    },
}

GOLDEN_SOURCE = ("ours: a few units in the last place of each format, loose enough for a compiler's reordering, "
                 "tight enough to catch a changed kernel")
GOLDEN = {"float64": (1e-7, 1e-7), "float32": (1e-4, 1e-3), "float16": (1e-3, 4e-3), "bfloat16": (1e-2, 3e-2)}


def mean_rel_error(suite: str, case: str) -> float:
    """verification_code's limit for `case` of `suite` (MEAN_REL_ERROR), else the default."""
    return MEAN_REL_ERROR.get(suite, {}).get(case, MEAN_REL_ERROR_DEFAULT).value


def by_test(suite: str) -> dict:
    """{test: verification_code's limit} of a suite whose cases are the tests (eval, train)."""
    return {test: mean_rel_error(suite, test) for test in ("eval", "train")}


def golden(dtype: str) -> tuple:
    """(atol, rtol) of a golden entry whose result's lowest floating-point dtype is `dtype` (float32's otherwise)."""
    return GOLDEN.get(dtype, GOLDEN["float32"])
