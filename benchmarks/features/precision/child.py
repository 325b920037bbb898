"""The experiment's precision applied to a model (benchmarks/features/precision/__init__.py): the cast of the model
and its floating-point inputs, the autocast context of each step, and the grad scaler of float16 autocast
training. Child only: torch inside the functions. Which dtype each precision means is features/precision/__init__.py's.
"""

from __future__ import annotations

import contextlib

from benchmarks.features import precision


def cast_dtype(experiment):
    """The dtype the built model is cast to (bf16, fp16), or None (feature method `cast_dtype`)."""
    return precision.cast_dtype(experiment.precision)


def model_cast(bm, experiment) -> None:
    """bf16/fp16: the built model's floating-point parameters and buffers, and its example inputs, in place (the
    feature method child/feature_methods.py's `model_cast`: before `model_transform`, which works on the cast weights)."""
    import torch

    from benchmarks.suites import tensor_trees  # torch: a child half is imported before torch is (feature_methods)

    name = cast_dtype(experiment)
    if name is None:
        return
    dtype = getattr(torch, name)
    bm.module = bm.module.to(dtype)
    bm.example_inputs = tensor_trees.cast_tree(tuple(bm.example_inputs), dtype)
    bm.example_kwargs = tensor_trees.cast_tree(dict(bm.example_kwargs), dtype)


def device_type(experiment) -> str:
    """autocast's and the grad scaler's device type: the tensors' device (xla for XLA configs)."""
    return "xla" if experiment.xla else ("cuda" if experiment.accelerator == "cuda" else "cpu")


def step_context(experiment):
    """A fresh context manager for one step's forward: autocast for the amp precisions, else nothing (the
    feature method child/feature_methods.py's `step_context`)."""
    import torch

    name = precision.autocast_dtype(experiment.precision, experiment.accelerator)
    if name is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type(experiment), dtype=getattr(torch, name))


def compute_dtype(experiment) -> str:
    """The dtype the config's arithmetic runs in (feature method `compute_dtype`: the roofline's ceiling)."""
    return precision.compute_dtype(experiment.precision, experiment.accelerator)


def grad_scaler(experiment):
    """The grad scaler of a float16 autocast training step, or None (feature method `grad_scaler`)."""
    import torch

    if not precision.needs_grad_scaler(experiment.precision, experiment.accelerator, experiment.test):
        return None
    return torch.amp.GradScaler(device_type(experiment))
