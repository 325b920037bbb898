"""This process made ready for its one config, before torch is imported: the environment it runs in (a sweep's
child: the one its parent composed for it, runner/sweep.py's make_job; a config by hand: the same, composed for
itself), its cores (--cpu-affinity) and its memory binding. What it found is what the record's environment is
held against (child/hand_back.describe_environment)."""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

from benchmarks.child import feature_methods
from benchmarks.config.process_env import child_environment
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing import torch_support
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.plumbing.cpu_affinity import pin_self


@dataclasses.dataclass(frozen=True)
class Started:
    """What this process was made: `wanted`, the environment the config composes; `cpu_affinity`, the cores it
    has; `numa`, its memory binding (--cpu-profile=dashboard) or None."""

    wanted: dict
    cpu_affinity: list
    numa: Optional[dict]


def environment_by_hand(options: RunOptions, model_config: dict, experiment) -> dict:
    """A config by hand: the environment a sweep's parent would compose for it (process_env.child_environment),
    after the checks that parent makes; this process restarted under it when its allocator policy needs a fresh
    start (it acts only from a process's start). UsageError when the config can't run by hand."""
    problem = (torch_support.environment_problem()  # the sweep's parent checked it for its children
               or feature_methods.provided("by_hand_problem")(experiment))  # two processes, which a sweep starts
    if problem:
        raise UsageError(problem)
    wanted = child_environment(experiment, options, dict(os.environ), model_config)
    feature_methods.provided("restart_under_policy")(wanted)
    return wanted


def start(options: RunOptions, model_config: dict, experiment) -> Started:
    """The config's environment in force (by hand: set here, before torch is imported), this process pinned to its
    cores before any thread starts (--cpu-affinity; also by hand) and, under --cpu-profile=dashboard, its memory
    bound as numactl's --membind does, before the model."""
    by_hand = options.record_fd is None
    wanted = environment_by_hand(options, model_config, experiment) if by_hand else dict(os.environ)
    cpu_affinity = pin_self(options.noise)
    numa = feature_methods.provided("bind_memory")(experiment)
    if by_hand:
        for key, value in wanted.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
    return Started(wanted, cpu_affinity, numa)
