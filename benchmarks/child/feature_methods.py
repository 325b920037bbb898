"""What the core asks of the features' child halves by a method's name, never by a feature's: a child half
(benchmarks/features/<name>/child.py) that defines one of METHODS provides it, and the core calls `provided(method)`
(the built model's cast and recipe, the step's autocast, the compile's settings, the roofline's dtype). So no core module names a feature, and a new
feature that must act where every step runs or every compile starts defines the method in its child half.

Each method has one provider at most (two would need a rule to combine them: an error names both); without one the
core gets the method's neutral default. Resolved once per process and where a step is made, never per call, so a
timed step calls the same function it would call by name.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
from typing import Callable


def _no_context(experiment):
    return contextlib.nullcontext()


def _nothing(experiment):
    return None


# Method -> (what a provider does, the default without one).
METHODS = {
    "step_context": ("step_context(experiment): a fresh context manager around one step's forward (autocast)",
                     _no_context),
    "model_cast": ("model_cast(bm, experiment): a built model and its inputs cast to the config's dtype, in place",
                   lambda bm, experiment: None),
    "model_transform": ("model_transform(bm, experiment, device): a cast model changed in place (a TorchAO recipe)",
                        lambda bm, experiment, device: None),
    "grad_scaler": ("grad_scaler(experiment): a train step's loss scaler, or None", _nothing),
    "before_compile": ("before_compile(experiment): what is set before torch.compile runs (Inductor's config)",
                       _nothing),
    "compile_mode": ("compile_mode(experiment): torch.compile's mode, or None for its default", _nothing),
    "compute_dtype": ("compute_dtype(experiment): the dtype the config's arithmetic runs in (the roofline's)",
                      _nothing),
}


def feature_child(feature: str):
    """A feature's child half, benchmarks/features/<feature>/child.py (the convention of benchmarks/features/), or
    None where the feature has none."""
    name = f"benchmarks.features.{feature}.child"
    return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None


@functools.lru_cache(maxsize=None)
def provided(method: str) -> Callable:
    """The feature child half's `method`, or its default where no feature provides it; ValueError for a method
    METHODS does not declare or two features provide."""
    from benchmarks import features

    if method not in METHODS:
        raise ValueError(f"{method} is not a feature method (child/feature_methods.py METHODS)")
    providers = []
    for name in features.names():
        child = feature_child(name)
        if child is not None and callable(getattr(child, method, None)):
            providers.append((name, getattr(child, method)))
    if len(providers) > 1:
        raise ValueError(f"feature method {method} is provided by {' and '.join(name for name, _ in providers)}: "
                         "one provider each")
    return providers[0][1] if providers else METHODS[method][1]
