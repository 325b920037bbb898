"""Apply a TorchAO recipe (config/quantization.py) to a freshly built model, before it is compiled or moved
to its backend (child only: imports torch and torchao)."""

from __future__ import annotations

import importlib.util
import logging

from benchmarks.config import quantization
from benchmarks.suites import ModelSkipped

log = logging.getLogger("benchmarks.child.quantize")

INSTALL = ("pip install torchao (the project's `torchao` extra: the lock's 0.14.1 pairs with torch 2.9; another torch "
           "needs the torchao release built for it)")


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
        # The default (plain) packing needs fbgemm's GPU kernels; the CPU has its own ("opaque") layout.
        if torch.device(device).type == "cpu":
            return ao.Int4WeightOnlyConfig(group_size=numbers[0], int4_packing_format="opaque")
        return ao.Int4WeightOnlyConfig(group_size=numbers[0])
    if kind == "uintx":
        return ao.UIntXWeightOnlyConfig(dtype=getattr(torch, f"uint{numbers[0]}"), group_size=numbers[1])
    raise ValueError(f"no torchao config for recipe {recipe!r}")


def apply(bm, recipe: str, device: str) -> None:
    """Quantize `bm.module`'s linear layers in place; a skip when torchao is missing or the model has none."""
    import torch

    if importlib.util.find_spec("torchao") is None:
        raise ModelSkipped(f"quantization {recipe} needs torchao, which is not installed; {INSTALL}")
    try:
        from torchao.quantization import quantize_
    except Exception as exc:  # a torchao built for another torch: its C++ operators or torch's internals it reads
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelSkipped(f"quantization {recipe} needs torchao, which does not load beside torch {torch.__version__} "
                           f"({type(exc).__name__}: {detail}); {INSTALL}") from exc
    linears = sum(isinstance(m, torch.nn.Linear) for m in bm.module.modules())
    if not linears:
        raise ModelSkipped(f"quantization {recipe}: torchao quantizes nn.Linear layers, and this model has none")
    try:
        quantize_(bm.module, torchao_config(recipe, device))
    except (AssertionError, ImportError, NotImplementedError, RuntimeError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelSkipped(f"quantization {recipe} does not run on {device}: {detail}") from exc
    bm.info = dict(bm.info, quantization={"recipe": recipe, "linear_layers": linears})
    log.info("quantized %d linear layer(s) with %s", linears, recipe)
