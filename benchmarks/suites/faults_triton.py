"""The Triton kernel of the `faults` suite's cuda_illegal_address (imported only by that model's forward, on a
GPU: Triton needs its own source file, and the CPU never imports it)."""

import triton
import triton.language as tl


@triton.jit
def _store_far_away(pointer):
    tl.store(pointer + (1 << 38), 1.0)  # 1 TiB past a float32 buffer: no memory of this process is there


def store_far_away(tensor) -> None:
    _store_far_away[(1,)](tensor)
