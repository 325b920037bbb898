"""Where Inductor and Triton keep their compile caches: the variables a process reads them from, a cache directory's
values, and a warm start's two children. The core's as much as compile_options' (benchmarks/features/compile_options/):
the child's setup probe (child/cpu_vec_isa.py) and the runner's warm start (runner/warm_start.py) use them too."""

from __future__ import annotations

import os

# The variables Inductor and Triton read their cache directories from (before they first compile).
INDUCTOR_CACHE_VARIABLE, TRITON_CACHE_VARIABLE = "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"
CACHE_VARIABLES = (INDUCTOR_CACHE_VARIABLE, TRITON_CACHE_VARIABLE)
WARM_START_HALVES = ("cold", "warm")  # a warm start's two children, in the order they run


def cache_environment(root: str) -> dict:
    """The cache variables of a compile cache under `root`: Inductor's (its FX graph and AOTAutograd caches, the
    compiled kernels) and Triton's, side by side."""
    return {INDUCTOR_CACHE_VARIABLE: os.path.join(root, "inductor"),
            TRITON_CACHE_VARIABLE: os.path.join(root, "triton")}
