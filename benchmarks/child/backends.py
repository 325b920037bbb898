"""Where a config runs and how it is compiled and synced: eager, any dynamo backend, PyTorch/XLA
lazy tensors (PJRT) and PyTorch/XLA with a dynamo backend (openxla). Child only: imports torch. Which torch.compile
backend a --dynamo value compiles with is its declaration's (config/backend_registry.py)."""

from __future__ import annotations

import random

import numpy as np
import torch

from benchmarks.child import feature_methods
from benchmarks.config import backend_registry

SEED = 1337


def base_device(experiment) -> str:
    """The device a suite builds on: the plain accelerator (XLA configs are moved over afterwards,
    so that XLA and non-XLA configs of one model get the same model and batch size)."""
    return "cuda" if experiment.accelerator == "cuda" else "cpu"


def target_device(experiment):
    if experiment.xla:
        import torch_xla

        return torch_xla.device()
    return torch.device(base_device(experiment))


def module_on(bm, device):
    """`bm.module` on `device`, with the suite's after-move fix (a move to XLA makes new parameters, which
    unties shared weights: Hugging Face models tie them again)."""
    module = bm.module.to(device)
    if bm.after_move is not None:
        bm.after_move(module)
    return module


def seed_everything(experiment) -> None:
    torch.manual_seed(SEED)
    random.seed(SEED)
    np.random.seed(SEED)
    if experiment.xla:
        import torch_xla.core.xla_model as xm

        xm.set_rng_state(SEED)


def compile_fn(fn, experiment, fullgraph: bool = False):
    if experiment.dynamo is None:
        return fn
    feature_methods.provided("before_compile")(experiment)
    # --dynamic=all: every dimension symbolic from the first compile; otherwise dynamo's default (static,
    # then automatic dynamic on a recompile; --dynamic=batch marks the batch dimension on the inputs).
    dynamic = True if experiment.dynamic == "all" else None
    return torch.compile(fn, backend=backend_registry.get(experiment.dynamo).torch_name, fullgraph=fullgraph,
                         mode=feature_methods.provided("compile_mode")(experiment), dynamic=dynamic)


def sync(experiment) -> None:
    """Cut and launch the pending lazy graph (XLA); a no-op elsewhere."""
    if experiment.xla:
        import torch_xla

        torch_xla.sync()


def wait(experiment) -> None:
    """Block until the device has finished everything launched."""
    if experiment.xla:
        import torch_xla.core.xla_model as xm

        xm.wait_device_ops()
    elif experiment.accelerator == "cuda":
        torch.cuda.synchronize()


def reset_xla_metrics(experiment) -> None:
    if experiment.xla:
        import torch_xla.debug.metrics as met

        met.clear_all()


def xla_metrics(experiment) -> dict:
    """Upstream's per-repeat XLA figures: CompileTime and ExecuteTime, seconds and counts."""
    if not experiment.xla:
        return {}
    import torch_xla.debug.metrics as met

    out = {}
    for name in ("CompileTime", "ExecuteTime"):
        data = met.metric_data(name)
        count, total_ns = (data[0], data[1]) if data else (0, 0.0)
        out[f"xla_{name}_time_s"] = total_ns / 1e9
        out[f"xla_{name}_number"] = count
    return out


# --matmul-precision names torch_xla's levels; torch calls the fastest one "medium".
TORCH_MATMUL_PRECISION = {"default": "medium", "high": "high", "highest": "highest"}


def set_matmul_precision(experiment, precision=None, disable_tf32: bool = False) -> dict:
    """Apply --matmul-precision / --disable-tf32 to torch (and torch_xla on XLA configs), nothing else
    (upstream forced "high" unless --disable-tf32). Returns the settings in effect, for the record."""
    if disable_tf32:
        precision = "highest"
        torch.backends.cudnn.allow_tf32 = False
    if precision is not None:
        torch.set_float32_matmul_precision(TORCH_MATMUL_PRECISION[precision])
    effective = {"torch": torch.get_float32_matmul_precision(), "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32}
    if experiment.xla:
        import torch_xla.backends

        if precision is not None:
            torch_xla.backends.set_mat_mul_precision(precision)
        effective["torch_xla"] = torch_xla.backends.get_mat_mul_precision()
    return effective
