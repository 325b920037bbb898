"""What the core asks of the features' child halves by a method's name, never by a feature's: a child half
(benchmarks/features/<name>/child.py) that defines one of METHODS provides it, and the core calls `provided(method)`
(the built model's cast and recipe, the step's autocast, the compile's settings and cache, the roofline's dtype,
the process's environment and its facts for the record). So no core module names a feature
(tests/child/test_feature_methods.py holds the core to it), and a new
feature that must act where every step runs or every compile starts defines the method in its child half.

A child half is imported when a method is first asked for, which may be before torch is (the compile cache's
variables, the allocator policy's restart): torch only inside its functions.

Each method has one provider at most (two would need a rule to combine them: an error names both); without one the
core gets the method's neutral default. Resolved once per process and where a step is made, never per call, so a
timed step calls the same function it would call by name.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
from typing import Callable

from benchmarks.config.compile_cache_dirs import INDUCTOR_CACHE_VARIABLE


def _no_context(experiment):
    return contextlib.nullcontext()


def _nothing(experiment):
    return None


class NoCompileCache:
    """Without a provider of `compile_cache`: the machine's cache, as the process was given it, untouched."""

    def __init__(self, experiment):
        self.machine_dir = os.environ.get(INDUCTOR_CACHE_VARIABLE)

    def warm_up(self, make_step, step) -> tuple:
        return step, None

    def close(self) -> None:
        pass


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
    "cast_dtype": ("cast_dtype(experiment): the dtype a built model is cast to, or None (kept as built)", _nothing),
    "compile_cache": ("compile_cache(experiment): the config's compile cache, made before torch is imported: "
                      "machine_dir, warm_up(make_step, step) -> (step, fill seconds or None), close()",
                      NoCompileCache),
    "before_build": ("before_build(model_config, experiment): what is set before any model is built or compiled "
                     "(cuDNN's autotuner, CUDA graphs); the record's keys it decided", lambda model_config, e: {}),
    "dynamo_stats": ("dynamo_stats(): dynamo's statistics for the record's dynamo_stats", lambda: None),
    "cudagraph_skips": ("cudagraph_skips(): the graphs Inductor ran without CUDA graphs, or None", lambda: None),
    "cuda_profile_facts": ("cuda_profile_facts(experiment, record): environment.cuda_profile, or None",
                           lambda experiment, record: None),
    "by_hand_problem": ("by_hand_problem(experiment): why this process can't run the config by hand, or None",
                        _nothing),
    "restart_under_policy": ("restart_under_policy(wanted): a config by hand restarted under the environment "
                             "`wanted` where a policy acts only from a process's start", lambda wanted: None),
    "bind_memory": ("bind_memory(experiment): the memory binding in force from here on, or None", _nothing),
    "allocator_facts": ("allocator_facts(experiment, wanted): environment.allocator, against the environment "
                        "`wanted` (its `applied`, its `problem`), or None", lambda experiment, wanted: None),
    "cpu_profile_facts": ("cpu_profile_facts(experiment, wanted, numa, allocator): environment.cpu_profile, or None",
                          lambda experiment, wanted, numa, allocator: None),
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
