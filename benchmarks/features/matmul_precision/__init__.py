"""--matmul-precision: float32 matmul precision as a matrix axis (experiment key `matmul_precision`), in torch_xla's
names: `highest` (full float32), `high` (TF32 on CUDA, bfloat16x3 on XLA), `default` (torch's `medium`: bfloat16 on
XLA, TF32 on CUDA). Unset (null, every record from before the key): the libraries' own defaults, or the CUDA
profile's TF32 (features/cuda_profile/__init__.py). What the child sets and records is features/matmul_precision/child.py. Pure Python, no
torch.
"""

from __future__ import annotations

from typing import Optional
from benchmarks.config.axis import Axis

NAMES = ("default", "high", "highest")
FULL = "highest"  # what --disable-tf32 asks for


def parse(value) -> Optional[str]:
    """A record's or a flag's value: one of NAMES, or None (the libraries' defaults)."""
    if value is None:
        return None
    if value not in NAMES:
        raise ValueError(f"matmul_precision must be one of {', '.join(NAMES)}, not {value!r}")
    return value


def disable_tf32_contradiction(asked: tuple, disable_tf32: bool) -> Optional[str]:
    """One line when --disable-tf32 (full float32 precision) meets a lower --matmul-precision, else None."""
    lower = [value for value in asked if value not in (None, FULL)]
    if disable_tf32 and lower:
        return (f"--disable-tf32 asks for full float32 precision, --matmul-precision={lower[0]} for less; pass one "
                "of them")
    return None


ORDER = 110  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "matmul_precision",
        "float32 matmul precision for torch and torch_xla (repeatable): highest (full float32), high (TF32 on CUDA), "
        "default (torch's medium); unset: the libraries' own (or --cuda-profile's TF32); experiment key "
        "`matmul_precision`",
        parse=parse, choices=NAMES, label="matmul-{}", slug="matmul-{}",
        contradiction=lambda options: disable_tf32_contradiction(
            tuple(options.axes.matmul_precision), options.diagnostics.disable_tf32), example="high",
        meaning="torch.set_float32_matmul_precision's value"),
)
