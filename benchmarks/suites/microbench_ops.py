"""The operators of the `microbench` suite (child only: imports torch).

Each builder takes (dtype, (M, K, N), device) and returns (module, example inputs); the module's
forward is the one operation timed. A new operator is a builder here plus an entry in microbench.OPS.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

SEED = 0


class MatMul(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


class LinearReLU(nn.Module):
    def __init__(self, k: int, n: int, dtype):
        super().__init__()
        self.linear = nn.Linear(k, n, bias=True, dtype=dtype)

    def forward(self, x):
        return torch.relu(self.linear(x))


class Add(nn.Module):
    """a + b into an output made once (not a buffer: it is the output, not the model's state)."""

    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, a, b):
        if self.out is None or self.out.shape != a.shape or self.out.dtype != a.dtype or self.out.device != a.device:
            self.out = torch.empty_like(a)
        return torch.add(a, b, out=self.out)


def _randn(*shape, dtype, generator):
    # Drawn in float32 so that every dtype sees the same values, rounded once.
    return torch.randn(*shape, generator=generator).to(dtype)


def build_matmul(dtype, shape, device):
    m, k, n = shape
    g = torch.Generator().manual_seed(SEED)
    return MatMul().to(device), (_randn(m, k, dtype=dtype, generator=g).to(device),
                                 _randn(k, n, dtype=dtype, generator=g).to(device))


def build_linear_relu(dtype, shape, device):
    m, k, n = shape
    torch.manual_seed(SEED)
    g = torch.Generator().manual_seed(SEED)
    return LinearReLU(k, n, dtype).to(device), (_randn(m, k, dtype=dtype, generator=g).to(device),)


def build_add(dtype, shape, device):
    m, k, n = shape
    g = torch.Generator().manual_seed(SEED)
    # uniform, not normal: a large array fills in a fraction of randn's time, and an add's speed is the same
    return Add().to(device), tuple(torch.empty(m, k * n).uniform_(-1, 1, generator=g).to(dtype).to(device)
                                   for _ in range(2))


BUILDERS = {"matmul": build_matmul, "linear_relu": build_linear_relu, "add": build_add}


def build(op: str, dtype_name: str, shape, device):
    return BUILDERS[op](getattr(torch, dtype_name), shape, device)


def dtype_skip_reason(op: str, dtype_name: str, device, cuda_bf16_native: Optional[bool] = None) -> Optional[str]:
    """Why `device` cannot run `op` in `dtype_name`, or None. Decided from facts: CUDA's own report of
    native bfloat16, then a tiny run of the operator itself (torch 2.9 runs float16 and bfloat16
    matmul on the CPU, so there the answer is None)."""
    device = torch.device(device)
    if device.type == "cuda" and dtype_name == "bfloat16":
        native = torch.cuda.is_bf16_supported(including_emulation=False) if cuda_bf16_native is None \
            else cuda_bf16_native
        if not native:
            name = torch.cuda.get_device_name(device) if torch.cuda.is_available() else "this CUDA device"
            return f"{name} has no native bfloat16 (needs compute capability 8.0 or newer)"
    try:
        module, inputs = build(op, dtype_name, (2, 2, 2), device)
        with torch.no_grad():
            module(*inputs)
    except (RuntimeError, NotImplementedError, TypeError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"{op} in {dtype_name} does not run on {device.type}: {detail}"
    return None
