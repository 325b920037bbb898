"""TorchBench's precision per model: upstream PyTorch/XLA's default and the dynamo harness's per-model
exceptions (docs/architecture.md, "Precision"). Pure Python: the parent resolves it while planning.

The lists are the `dtype` and `only_fp32` entries of PyTorch's benchmarks/dynamo/torchbench.yaml, which both
upstream PyTorch/XLA's TorchBench runner and the dynamo harness read.
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
    if model_name in ONLY_FP32_MODELS:
        return "fp32"
    if requested is None:
        return upstream_default(model_name, test, accelerator)
    if requested in ("bf16", "fp16") and model_name in FORCE_AMP_FOR_FP16_BF16_MODELS and _autocasts(accelerator):
        return "amp"
    if requested == "bf16" and model_name in FORCE_FP16_FOR_BF16_MODELS:
        return "fp16"
    return requested
