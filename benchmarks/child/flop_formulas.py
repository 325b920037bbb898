"""The FLOP formulas our count adds to torch's FlopCounterMode, and the operators it still cannot see (docs/roofline.md).
Child only: imports torch.

Attention: torch 2.9.1 counts the CUDA scaled-dot-product kernels (flash, memory-efficient, cuDNN) but has no formula
for the CPU's (`_scaled_dot_product_flash_attention_for_cpu`), the MPS one or the overrideable one, so a transformer on
the CPU was short its attention. Every one of them is counted here with the CUDA kernels' formula, B batch, H query
heads, Lq and Lk the query's and key's lengths, D the query's head dim and Dv the value's (2 FLOPs per multiply-add):

    forward:  2·B·H·Lq·Lk·D (Q·Kᵀ) + 2·B·H·Lq·Lk·Dv (P·V)                     = 4·B·H·Lq·Lk·D where Dv = D
    backward: 2·B·H·Lq·Lk·(3·D + 2·Dv)  (Q·Kᵀ again, dO·Vᵀ, Pᵀ·dO, dS·K, dSᵀ·Q) = 10·B·H·Lq·Lk·D

and is_causal halves either (the masked half of the scores is skipped, as FlashAttention's own benchmarks count it;
torch's CUDA formulas ignore the mask). An explicit attn_mask costs nothing less: the kernel computes every score.
SDPA's math fallback (dropout on the CPU, for one) runs as bmm calls, which torch counts as they are.

What no formula covers: operators that do matrix work with no formula (their names say so: mm, conv, attention,
linear, rnn...), and operators outside aten (a custom kernel). `Blind` records the ones an iteration ran, so the
record's roofline.how can name them instead of leaving them out silently."""

from __future__ import annotations

import re

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

# Every scaled-dot-product kernel, forward and backward, as its packet's name: (is it a backward?).
ATTENTION_KERNELS = {
    "_scaled_dot_product_flash_attention_for_cpu": False,
    "_scaled_dot_product_flash_attention_for_cpu_backward": True,
    "_scaled_dot_product_flash_attention": False,
    "_scaled_dot_product_flash_attention_backward": True,
    "_scaled_dot_product_efficient_attention": False,
    "_scaled_dot_product_efficient_attention_backward": True,
    "_scaled_dot_product_cudnn_attention": False,
    "_scaled_dot_product_cudnn_attention_backward": True,
    "_scaled_dot_product_fused_attention_overrideable": False,
    "_scaled_dot_product_fused_attention_overrideable_backward": True,
    "_scaled_dot_product_attention_math_for_mps": False,
}
# An aten operator whose name says it multiplies matrices (or convolves, or runs a recurrent cell): with no formula,
# its FLOPs are missing from the count.
MATRIX_WORK = re.compile(r"(^|_)(mm|bmm|addmm|baddbmm|matmul|linear|conv|convolution|attention|rnn|lstm|gru|einsum|"
                         r"tensordot)(_|$)|mm$|conv\d|_mm_")
# Namespaces whose operators are torch's own bookkeeping, never arithmetic worth a formula.
QUIET_NAMESPACES = ("aten", "prim", "prims", "profiler", "_c10d_functional", "c10d")


def attention_flops(query, key, value, is_causal: bool, backward: bool) -> int:
    """The FLOPs of one scaled-dot-product attention (module docstring), from its 4-d query, key and value shapes."""
    batch, heads, lq, d = query.shape
    lk, dv = key.shape[-2], value.shape[-1]
    flops = 2 * batch * heads * lq * lk * ((3 * d + 2 * dv) if backward else (d + dv))
    return flops // 2 if is_causal else flops


def attention_formula(packet, backward: bool):
    """A raw FlopCounterMode formula for `packet`: its arguments bound by the kernel's own schema (every kernel names
    them query, key, value and is_causal), torch's own formula kept for what ours doesn't read (nested tensors)."""
    names = [argument.name for argument in packet.default._schema.arguments]
    from torch.utils.flop_counter import flop_registry

    theirs = flop_registry.get(packet)

    def formula(*args, out_val=None, **kwargs) -> int:
        bound = {**dict(zip(names, args)), **kwargs}
        query, key, value = bound.get("query"), bound.get("key"), bound.get("value")
        if all(isinstance(t, torch.Tensor) and not t.is_nested and t.dim() == 4 for t in (query, key, value)):
            return attention_flops(query, key, value, bool(bound.get("is_causal")), backward)
        return theirs(*args, out_val=out_val, **kwargs) if theirs is not None else 0

    formula._get_raw = True  # FlopCounterMode passes the tensors themselves, not their shapes
    return formula


def custom_mapping() -> dict:
    """FlopCounterMode's custom_mapping: every attention kernel this torch has, with our formula."""
    mapping = {}
    for name, backward in ATTENTION_KERNELS.items():
        packet = getattr(aten, name, None)
        if packet is not None:
            mapping[packet] = attention_formula(packet, backward)
    return mapping


class Blind(TorchDispatchMode):
    """Records the operators an iteration ran that the counter has no formula for and that may do arithmetic: aten
    operators named for matrix work, and operators outside torch's namespaces (custom kernels). `missed` names them."""

    def __init__(self, formulas: dict):
        super().__init__()
        self.formulas = formulas
        self.missed: set = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        packet = func.overloadpacket
        if packet not in self.formulas:
            namespace = func.namespace
            if namespace not in QUIET_NAMESPACES or (namespace == "aten" and MATRIX_WORK.search(packet.__name__)):
                self.missed.add(f"{namespace}.{packet.__name__}")
        return func(*args, **(kwargs or {}))


def not_counted(missed) -> str:
    """`how`'s words for the operators a count missed ('' where it missed none)."""
    if not missed:
        return ""
    return "; not counted (no FLOP formula): " + ", ".join(sorted(missed))
