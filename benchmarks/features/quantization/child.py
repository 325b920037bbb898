"""Apply a TorchAO recipe (features/quantization/__init__.py) to a freshly built model, before it is compiled or moved
to its backend (child only: imports torch and torchao)."""

from __future__ import annotations

import importlib.util
import logging
from typing import Optional

from benchmarks.child import torch_internals
from benchmarks.features import quantization
from benchmarks.suites import ModelSkipped

log = logging.getLogger("benchmarks.features.quantization.child")

INSTALL = ("pip install torchao (the project's `torchao` extra: the lock's 0.14.1 pairs with torch 2.9; another torch "
           "needs the torchao release built for it)")
# What torchao changed in Inductor's settings (and torch's float32 matmul precision) in this process so far, setting ->
# its new value: its recipes' set_inductor_config (on by default, as TorchAO measures) and what importing its kernels
# registers (0.14.1: a CPU post-grad pass). Every recipe applied here adds to it (--verify's eager reference is
# quantized too), and each record carries all of it.
CHANGED: dict = {}
INDUCTOR_SETTINGS = "torchao_inductor_settings"  # the feature torch_internals names when they can't be read
MATMUL_PRECISION = "float32_matmul_precision"


def torchao_config(recipe: str, device: str):
    """The torchao config object of `recipe` for weights on `device`."""
    import torch
    import torchao.quantization as ao

    kind, numbers = quantization.family(recipe), [int(n) for n in recipe.split("-")[1:] if n.isdigit()]
    if kind == "int8wo":
        return ao.Int8WeightOnlyConfig()
    if kind == "int8dq":
        return ao.Int8DynamicActivationInt8WeightConfig()
    if kind == "float8wo":
        return ao.Float8WeightOnlyConfig()
    if kind == "float8dq":
        granularity = ao.PerRow() if recipe.endswith("-row") else ao.PerTensor()
        return ao.Float8DynamicActivationFloat8WeightConfig(granularity=granularity)
    if kind == "int4wo":
        # torch's own int4 kernels: tile_packed_to_4d on CUDA (aten._weight_int4pack_mm), opaque on the CPU; torchao's
        # default (plain) packing would need fbgemm-gpu-genai.
        packing = quantization.INT4_PACKING.get(torch.device(device).type, quantization.INT4_PACKING["cpu"])
        return ao.Int4WeightOnlyConfig(group_size=numbers[0], int4_packing_format=packing)
    if kind == "uintx":
        return ao.UIntXWeightOnlyConfig(dtype=getattr(torch, f"uint{numbers[0]}"), group_size=numbers[1])
    raise ValueError(f"no torchao config for recipe {recipe!r}")


def card_problem(recipe: str, device: str) -> Optional[str]:
    """Why this CUDA card can't run `recipe` (its compute capability, config/quantization.CUDA_CAPABILITY), or None
    (off CUDA too)."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return None
    return quantization.card_reason(recipe, torch.cuda.get_device_capability(device))


def int4_kernel_problem(recipe: str, device: str, aten=None) -> Optional[str]:
    """Why int4 weights can't run on CUDA here: this torch lacks its own int4 kernel (`aten`: torch.ops.aten)."""
    import torch

    if quantization.family(recipe) != "int4wo" or torch.device(device).type != "cuda":
        return None
    aten = torch.ops.aten if aten is None else aten
    if hasattr(aten, "_weight_int4pack_mm"):
        return None
    return (f"quantization {recipe} on CUDA packs int4 weights for torch's own kernel (tile_packed_to_4d), and torch "
            f"{torch.__version__} has no aten._weight_int4pack_mm (fbgemm-gpu-genai's kernels, torchao's default, "
            "are not used)")


def inductor_settings() -> dict:
    """Inductor's settings and torch's float32 matmul precision, as they are now ({} when they can't be read)."""
    import torch

    def read() -> dict:
        import torch._inductor.config as config

        found = dict(config.get_config_copy())
        found[MATMUL_PRECISION] = torch.get_float32_matmul_precision()
        return found

    return torch_internals.read(INDUCTOR_SETTINGS, "torch._inductor.config.get_config_copy", read, {}) or {}


def changed_settings(before: dict, after: dict) -> dict:
    """The settings whose value differs after a recipe was applied: setting -> new value (JSON-safe)."""
    out = {}
    for key in sorted(set(before) | set(after)):
        if key in after and (key not in before or before[key] != after[key]):
            value = after[key]
            plain = isinstance(value, (bool, int, float, str, type(None)))
            out[key] = value if plain else f"{type(value).__module__}.{type(value).__qualname__}"  # no address
    return out


def model_transform(bm, experiment, device: str) -> None:
    """The config's TorchAO recipe on a built (and cast) model, if it has one (the feature method
    child/feature_methods.py's `model_transform`: before the backend sees it; --verify's eager reference alike)."""
    if experiment.quantization:
        apply(bm, experiment.quantization, device)


def apply(bm, recipe: str, device: str) -> None:
    """Quantize `bm.module`'s linear layers in place; a skip when torchao is missing, the card or this torch can't run
    the recipe, or the model has no linear layer. The record's model_info.quantization says what ran: the recipe, the
    linear layers, int4's packing, and what torchao changed in Inductor's settings in this process."""
    import torch

    for problem in (card_problem(recipe, device), int4_kernel_problem(recipe, device)):
        if problem:
            raise ModelSkipped(problem)
    # the rules that need no torchao first, so a config that can't run says why whether or not torchao is installed
    layers = [m for m in bm.module.modules() if isinstance(m, torch.nn.Linear)]
    if not layers:
        raise ModelSkipped(f"quantization {recipe}: torchao quantizes nn.Linear layers, and this model has none")
    dtypes = {str(m.weight.dtype).replace("torch.", "") for m in layers}
    problem = quantization.weight_dtype_reason(recipe, torch.device(device).type, dtypes)
    if problem:
        raise ModelSkipped(problem)
    before = inductor_settings()  # before torchao is imported: importing its kernels registers passes too
    if importlib.util.find_spec("torchao") is None:
        raise ModelSkipped(f"quantization {recipe} needs torchao, which is not installed; {INSTALL}")
    try:
        from torchao.quantization import quantize_
    except Exception as exc:  # a torchao built for another torch: its C++ operators or torch's internals it reads
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelSkipped(f"quantization {recipe} needs torchao, which does not load beside torch {torch.__version__} "
                           f"({type(exc).__name__}: {detail}); {INSTALL}") from exc
    try:
        quantize_(bm.module, torchao_config(recipe, device))
    except (AssertionError, ImportError, NotImplementedError, RuntimeError, ValueError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelSkipped(f"quantization {recipe} does not run on {device}: {detail}") from exc
    after = inductor_settings()
    if before and after:
        CHANGED.update(changed_settings(before, after))
    # null where this torch's settings could not be read (the record's `absent` says why)
    info = {"recipe": recipe, "linear_layers": len(layers),
            "inductor_settings_changed": dict(CHANGED) if before and after else None}
    if quantization.family(recipe) == "int4wo":
        info["packing"] = quantization.INT4_PACKING.get(torch.device(device).type, quantization.INT4_PACKING["cpu"])
    bm.info = dict(bm.info, quantization=info)
    log.info("quantized %d linear layer(s) with %s; torchao changed Inductor's settings in this process: %s",
             len(layers), recipe, ", ".join(f"{k}={v}" for k, v in CHANGED.items()) or "nothing")
