"""--cpu-profile=dashboard: PyTorch's CPU dashboard setup as one named choice (docs/runner.md, "The CPU dashboard's
setup"). Its pieces, the environment they need before a child's interpreter starts, the Inductor setting they add
and the flag combination that contradicts them. No torch: the parent composes a child's environment from this
(config/process_env.py); the child applies the memory binding and records each piece (features/cpu_profile/child.py).

What PyTorch's Inductor CPU dashboard jobs do (facts: the team's notes on the dynamo harness): jemalloc preloaded
with a fixed MALLOC_CONF; Intel OpenMP preloaded with KMP_AFFINITY and KMP_BLOCKTIME; OMP_NUM_THREADS = the cores
used; cores and memory pinned with numactl; inference with Inductor's freezing.
"""

from __future__ import annotations

from typing import Optional

from benchmarks.config import backend_registry, inductor_settings
from benchmarks.config.axis import Axis, ONE_PER_SWEEP
from benchmarks.features import allocator, compile_options
from benchmarks.plumbing.cpu_affinity import requested_cores, usable_cores

KEY = "cpu_profile"
DASHBOARD = "dashboard"
NAMES = (DASHBOARD,)
ALLOCATOR = allocator.DASHBOARD_ALLOCATOR
MALLOC_CONF = "oversize_threshold:1,background_thread:true,metadata_thp:auto,dirty_decay_ms:-1,muzzy_decay_ms:-1"
OPENMP_LIBRARY = "libiomp5.so"
OPENMP_VARIABLES = {"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}
OPENMP_MISSING = ("Intel OpenMP (libiomp5.so): not installed (pip install intel-openmp==2026.2.0, the project's "
                  "`cpu-dashboard` extra, which `make env` installs on x86-64)")
NUMA_LIBRARY = "libnuma.so.1"
NUMA_MISSING = "numactl: not installed (libnuma.so.1; Debian: apt-get install numactl, which `make env` does as root)"


def parse(value) -> Optional[str]:
    if value is None:
        return None
    if value not in NAMES:
        raise ValueError(f"cpu_profile must be null or one of {', '.join(NAMES)}, not {value!r}")
    return value


def openmp_library() -> Optional[str]:
    return allocator.find_library(OPENMP_LIBRARY)


def contradiction(profile: Optional[str], allocators) -> Optional[str]:
    """One line when --allocator values contradict the profile's allocator, else None."""
    other = [name for name in allocators if name != ALLOCATOR]
    if profile == DASHBOARD and other:
        return (f"--cpu-profile=dashboard runs jemalloc with the dashboard's MALLOC_CONF; --allocator={other[0]} "
                f"contradicts it: pass one of them (or --allocator=jemalloc)")
    return None


def settle(experiment):
    """The config as the profile runs it: the dashboard's inference on Inductor freezes (freezing=True added to
    the config's Inductor settings; training keeps its own, freezing being inference-only)."""
    if experiment.cpu_profile != DASHBOARD or experiment.test != "eval" \
            or not backend_registry.uses_inductor(experiment.dynamo):
        return experiment
    settings = inductor_settings.settings_of(experiment.inductor_config)
    pairs = [(k, str(v)) for k, v in settings.items()] + [compile_options.SHORTHANDS["freezing"]]
    return experiment.with_(inductor_config=inductor_settings.config_text(pairs))


def apply_environment(env: dict, experiment, cores: int) -> None:
    """The profile's variables in a child's environment being composed (after its allocator policy): jemalloc's
    MALLOC_CONF, Intel OpenMP preloaded in front of it with its settings, OMP_NUM_THREADS = `cores` (a --jobs grant
    replaces it with its own share)."""
    if experiment.cpu_profile != DASHBOARD:
        return
    openmp = openmp_library()
    allocator.apply(env, experiment.allocator, malloc_conf=MALLOC_CONF if experiment.allocator == ALLOCATOR else None,
                    preload_first=(openmp,) if openmp else ())
    env.update(OPENMP_VARIABLES)
    env["OMP_NUM_THREADS"] = str(cores)


def compose_environment(env: dict, experiment, options) -> None:
    """(Declared hook, config/process_env.py.) The profile's environment, with OMP_NUM_THREADS = the cores the child
    is given (--cpu-affinity's, or this process's)."""
    if experiment.cpu_profile:
        apply_environment(env, experiment, len(requested_cores(options.noise) or usable_cores()))


def start_variables() -> tuple:
    """(Declared hook, config/process_env.allocator_environment.) OpenMP's variables, read when its runtime loads."""
    return tuple(OPENMP_VARIABLES)


ORDER = 80  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "cpu_profile",
        "dashboard: PyTorch's CPU dashboard setup for every config: jemalloc with its MALLOC_CONF, Intel "
        "OpenMP preloaded (KMP_AFFINITY, KMP_BLOCKTIME=1), OMP_NUM_THREADS = the child's cores, cores and memory "
        "pinned (numactl's libnuma), freezing for Inductor inference; each piece, or why it is missing, in the "
        "record's environment.cpu_profile; experiment key `cpu_profile`",
        parse=parse, kind=ONE_PER_SWEEP, choices=NAMES, settle=settle,
        contradiction=lambda options: contradiction(options.axes.cpu_profile, options.axes.allocator),
        slug="profile-{}", example="dashboard", meaning="the dashboard's CPU profile (null: none)"),
)
