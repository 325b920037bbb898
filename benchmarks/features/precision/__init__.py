"""The precision a config runs in, as an experiment axis (key `precision`): the names, the dtypes each one means,
and what a device can't run. Pure Python (the parent checks them without torch); the child applies them
(features/precision/child.py). The design: below.

`fp32`, `bf16`, `fp16`: the model and its floating-point inputs are cast to that dtype. `amp`, `amp_bf16`,
`amp_fp16`: the model stays float32 and runs under autocast (`amp`: the device's default dtype, float16 on
CUDA, bfloat16 on the CPU and XLA). A record without the key is an fp32 run.

The design:

`precision` is an experiment key (`features/precision/__init__.py`: names, dtypes, the support rule). The axis value
None means "the suite's default": `runner/plan.py` resolves every (model, experiment) pair with `Suite.resolve` (the
one resolution: precision, training step, the LLM rows' keys, and the precision's reason), so every Config (its
fingerprint, its command, its record) holds the precision that runs; the base Suite keeps the request or `fp32`,
TorchBench applies upstream PyTorch/XLA's default and the per-model lists (`suites/torchbench_precision.py`; they
depend on the accelerator, since upstream never autocasts on the CPU; idempotent: a config run by hand resolves
itself with `Suite.resolve` too, a sweep's child is given its config resolved). A default precision a model can't
run is never its default: `torchbench_precision.CAST_UNSUPPORTED` (the QAT models, whose quantize step takes float32
only) resolves their default to `fp32`, and `Suite.precision_reason` says why; the plan keeps the reason on the
Config (`Config.precision_reason`, not in the fingerprint, since the child is handed the resolved precision and
can't know it) and `runner/result_records.py` writes it on the config's child, failure and skip records as
`precision_reason`; the child writes it itself for a config run by hand without a precision. An explicit cast on
such a model is a skip (`torchbench_precision.unsupported_request`, from the suite's `skip_reason`). Two requests
that come to one precision for a model are planned once; a resolved precision the device can't run is a skip record
with the rule's reason. In the child, `features/precision/child.py` casts the built model and its example inputs
(`build_model`, before quantization, so `--verify`'s eager reference is cast alike), wraps each step's forward (and
loss) in autocast inside the compiled function, and gives float16 autocast training a grad scaler. `fp32` is left
out of the fingerprint and of the labels (`experiment_config.AXIS_DEFAULTS`), so older results files resume and keep
their labels; the selection's `--precision fp32` matches records without the key.
"""

from __future__ import annotations

from typing import Optional
from benchmarks.config.axis import Axis, flag_type

DEFAULT = "fp32"
# name -> what it means (the --help text and the README's table)
PRECISIONS = {
    "fp32": "float32 (no cast)",
    "bf16": "model and floating-point inputs cast to bfloat16",
    "fp16": "model and floating-point inputs cast to float16",
    "amp": "autocast in the device's default dtype (float16 on CUDA, bfloat16 on CPU and XLA)",
    "amp_bf16": "autocast in bfloat16",
    "amp_fp16": "autocast in float16",
}
CAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
AMP_DTYPES = {"amp_bf16": "bfloat16", "amp_fp16": "float16"}
KNOWN_TEXT = ", ".join(PRECISIONS)


class PrecisionError(ValueError):
    """An unknown precision; the message is one line naming the known ones."""


def parse(text: Optional[str]) -> Optional[str]:
    """A known name (any case) -> its name; None/'none'/'' -> None (the suite's default); else PrecisionError."""
    if text is None or str(text).strip().lower() in ("none", "null", "default", ""):
        return None
    name = str(text).strip().lower()
    if name not in PRECISIONS:
        raise PrecisionError(f"unknown precision {text!r} (known: {KNOWN_TEXT})")
    return name


def cast_dtype(precision: Optional[str]) -> Optional[str]:
    """The torch dtype name the model and its inputs are cast to, or None (fp32 and the amp modes: no cast)."""
    return CAST_DTYPES.get(precision)


def autocast_dtype(precision: Optional[str], accelerator: str) -> Optional[str]:
    """The torch dtype name autocast runs in, or None when the precision is not an amp one."""
    if precision == "amp":
        return "float16" if accelerator == "cuda" else "bfloat16"
    return AMP_DTYPES.get(precision)


def compute_dtype(precision: Optional[str], accelerator: str) -> str:
    """The dtype the model's arithmetic mostly runs in."""
    return cast_dtype(precision) or autocast_dtype(precision, accelerator) or "float32"


def precision_dtypes(precision: Optional[str], accelerator: str) -> tuple:
    """(Declared hook, config/accuracy_rule.py.) (cast_dtype, autocast_dtype): what the harness's tolerance rules ask
    of a precision (half, bfloat16, autocast)."""
    return cast_dtype(precision), autocast_dtype(precision, accelerator)


def needs_grad_scaler(precision: Optional[str], accelerator: str, test: str) -> bool:
    """Training under float16 autocast scales its loss, so that small gradients don't flush to zero."""
    return test == "train" and autocast_dtype(precision, accelerator) == "float16"


def unsupported_reason(experiment) -> Optional[str]:
    """Why the device can't run the experiment's precision (a support-rule drop), or None if it may."""
    precision = getattr(experiment, "precision", None)
    if experiment.accelerator == "tpu" and compute_dtype(precision, "tpu") == "float16":
        return f"precision {precision}: TPUs compute in bfloat16, not float16 (use bf16 or amp_bf16)"
    return None


def resolved_skip_reason(experiment) -> Optional[str]:
    """unsupported_reason of a config as its suite resolves it (a precision the suite forces): the hook
    runner/plan.py asks every declaration for (features.declared)."""
    return unsupported_reason(experiment)


# (name, cannot_run(experiment, capabilities), reason): runner/matrix.py's table adds it (config/axes.py).
SUPPORT_RULES = [("precision-supported", lambda e, c: unsupported_reason(e) is not None,
                  lambda e, c: unsupported_reason(e))]


ORDER = 20  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "precision",
        "fp32, bf16, fp16 (model and inputs cast), amp (autocast: float16 on CUDA, bfloat16 on CPU and XLA), amp_bf16, "
        "amp_fp16 (repeatable); default: the suite's (torchbench: upstream PyTorch/XLA's rule, README; others fp32); "
        "experiment key `precision`",
        parse=parse, default=DEFAULT,  # None asked: the suite's default, resolved by the plan
        type=flag_type(parse, PRECISIONS), metavar="PRECISION",
        support_rules=SUPPORT_RULES, example="bf16", meaning="the precision that ran (absent: fp32)"),
)
