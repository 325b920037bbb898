"""TorchBench's precision per model: upstream PyTorch/XLA's default and the dynamo harness's per-model
exceptions (benchmarks/features/precision/__init__.py). Pure Python: the parent resolves it while planning.

The lists are the `dtype` and `only_fp32` entries of PyTorch's benchmarks/dynamo/torchbench.yaml, which both
upstream PyTorch/XLA's TorchBench runner and the dynamo harness read; CAST_UNSUPPORTED is ours.

A default precision a model can't run is never its default: such a model runs float32 by default, and the
record's `precision_reason` says why (`resolve_with_reason`); asked for explicitly, that precision is a skip
record saying why (`unsupported_request`). The dynamo harness's CPU jobs run every model in float32
(`--precision=fp32` here gives that).
"""

from __future__ import annotations

from typing import Optional

# Models that fail or lose accuracy in a plain float16/bfloat16 cast: they run under autocast instead.
FORCE_AMP_FOR_FP16_BF16_MODELS = frozenset({
    "DALLE2_pytorch", "doctr_det_predictor", "doctr_reco_predictor", "Super_SloMo", "tts_angular",
    "pyhpc_turbulent_kinetic_energy", "detectron2_fcos_r_50_fpn",
})
# Models that can't run in bfloat16: float16 instead.
FORCE_FP16_FOR_BF16_MODELS = frozenset({"vision_maskrcnn"})
# Models that run in float32 whatever was asked (the default too).
ONLY_FP32_MODELS = frozenset({"timm_efficientdet"})
# Precisions that cast the model and its inputs.
CASTS = ("bf16", "fp16")
_QAT = ("its quantization-aware training modules quantize float32 tensors only (a cast model fails with "
        "\"Quantize only works on Float Tensor\")")
# Models that can't run a cast precision (bf16, fp16): name -> why (seen on a whole TorchBench sweep here).
CAST_UNSUPPORTED = {"mobilenet_v2_quantized_qat": _QAT, "resnet50_quantized_qat": _QAT}


def _autocasts(accelerator: str) -> bool:
    """Upstream PyTorch/XLA autocasts only on CUDA and TPU; on the CPU its amp is a no-op, so a model it
    would autocast runs in its cast dtype (eval) or float32 (train) there."""
    return accelerator != "cpu"


def upstream_default(model_name: str, test: str, accelerator: str) -> str:
    """Upstream PyTorch/XLA's choice: on CUDA and TPU, training and the force-amp models under autocast; on
    the CPU, training in float32. Inference otherwise cast to bfloat16, float16 for the models that need it."""
    if test == "train":
        return "amp" if _autocasts(accelerator) else "fp32"
    if model_name in FORCE_AMP_FOR_FP16_BF16_MODELS and _autocasts(accelerator):
        return "amp"
    if model_name in FORCE_FP16_FOR_BF16_MODELS:
        return "fp16"
    return "bf16"


def resolve(model_name: str, test: str, requested: Optional[str], accelerator: str) -> str:
    """The precision `model_name` runs on `accelerator` when `requested` is asked (None: the default).
    Idempotent: the child resolves again what the plan resolved."""
    return resolve_with_reason(model_name, test, requested, accelerator)[0]


def resolve_with_reason(model_name: str, test: str, requested: Optional[str], accelerator: str) -> tuple:
    """(precision, why it is not the one asked for or the suite's default; None when it is)."""
    if model_name in ONLY_FP32_MODELS:
        wanted = requested or upstream_default(model_name, test, accelerator)
        return "fp32", (None if wanted == "fp32" else
                        f"{model_name} runs in float32 only (PyTorch's torchbench.yaml only_fp32), not {wanted}")
    if requested is None:
        default = upstream_default(model_name, test, accelerator)
        if default in CASTS and model_name in CAST_UNSUPPORTED:
            return "fp32", (f"the default precision {default} (upstream PyTorch/XLA's) can't run {model_name}: "
                            f"{CAST_UNSUPPORTED[model_name]}; fp32 instead")
        return default, None
    if requested in CASTS and model_name in FORCE_AMP_FOR_FP16_BF16_MODELS and _autocasts(accelerator):
        return "amp", (f"{model_name} fails or loses accuracy in a plain {requested} cast (PyTorch's torchbench.yaml "
                       "force_amp_for_fp16_bf16_models): amp instead")
    if requested == "bf16" and model_name in FORCE_FP16_FOR_BF16_MODELS:
        return "fp16", (f"{model_name} can't run bfloat16 (PyTorch's torchbench.yaml force_fp16_for_bf16_models): "
                        "fp16 instead")
    return requested, None


def unsupported_request(model_name: str, precision: Optional[str]) -> Optional[str]:
    """Why `model_name` can't run `precision` (a skip reason), or None. Only a precision asked for reaches this
    with a cast: a default that can't run was resolved to float32 before."""
    if precision in CASTS and model_name in CAST_UNSUPPORTED:
        return f"{model_name} can't run {precision}: {CAST_UNSUPPORTED[model_name]}; run it with --precision=fp32"
    return None
