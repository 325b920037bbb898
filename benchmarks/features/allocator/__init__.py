"""--allocator: the C allocator policy of every child (docs/measurement.md; docs/runner.md).

The names, the variables each policy sets, where its preloaded library is found and the support rule. No torch:
the parent composes a child's environment from this (config/process_env.py), before the child's interpreter
starts, since glibc reads its thresholds and the dynamic loader LD_PRELOAD only then.

Why a policy at all: glibc's mmap threshold is dynamic (a large free raises it), so without fixed thresholds a
compiled model's large intermediates go through mmap/munmap (page faults every iteration) or not, depending on
what the process happened to allocate and free before: the same config measured 7-8 ms or 2 ms (issue #30).
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from typing import Optional
from benchmarks.config.axis import Axis

DEFAULT = "glibc"
# glibc: the thresholds fixed (which also turns off the dynamic threshold) and no block served by its own mapping.
# The trim threshold: with only the mmap threshold fixed, the heap's top is trimmed back to the system on frees and
# eager ran 2.7x slower. MALLOC_MMAP_MAX_=0: glibc caps the mmap threshold at 32 MiB, so a larger block (timm
# mobilenetv2_100's activations at batch 8) was still mapped and unmapped on every iteration (9,409 page faults
# each); with none mapped it comes from the heap and is reused (0 faults), as under jemalloc with the CPU
# dashboard's settings. glibc still maps a block the heap can't grow to hold, so no allocation fails for it.
GLIBC_VARIABLES = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "268435456",
                   "MALLOC_MMAP_MAX_": "0"}
# name -> (the library preloaded, the Debian package that installs it)
LIBRARIES = {"jemalloc": ("libjemalloc.so.2", "libjemalloc2"),
             "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4")}
NAMES = ("glibc", "system") + tuple(LIBRARIES)
# The variables a policy owns: a policy other than `system` removes them from the inherited environment first.
MANAGED_VARIABLES = tuple(GLIBC_VARIABLES) + ("MALLOC_CONF",)
# Replaces the standard library directories searched for the preloaded libraries (colon-separated), e.g. a
# conda environment's lib/.
DIRS_VARIABLE = "BENCHMARKS_PRELOAD_DIRS"


def parse(value) -> str:
    """The experiment key's value (None: the default); ValueError naming the choices."""
    if value is None:
        return DEFAULT
    if value not in NAMES:
        raise ValueError(f"allocator must be one of {', '.join(NAMES)}, not {value!r}")
    return value


def library_dirs() -> list:
    """Where the dynamic loader's standard directories are (Debian's multiarch ones first), and this
    interpreter's prefix's lib/ (where a wheel such as intel-openmp puts its libraries)."""
    chosen = os.environ.get(DIRS_VARIABLE)
    if chosen is not None:
        return [d for d in chosen.split(":") if d]
    arch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = []
    if arch:
        dirs += [f"/usr/local/lib/{arch}", f"/usr/lib/{arch}", f"/lib/{arch}"]
    return dirs + ["/usr/local/lib", "/usr/lib64", "/usr/lib", "/lib64", "/lib",
                   os.path.join(sys.prefix, "lib")]


@functools.lru_cache(maxsize=None)


def _find(filename: str, dirs: tuple) -> Optional[str]:
    for directory in dirs:
        path = os.path.join(directory, filename)
        if os.path.isfile(path):
            return os.path.abspath(path)
    return None


def find_library(filename: str) -> Optional[str]:
    """The absolute path of a shared library by file name in library_dirs(), or None."""
    return _find(filename, tuple(library_dirs()))


def library(name: str) -> Optional[str]:
    """The path of the library policy `name` preloads; None for glibc and system, or when not installed."""
    if name not in LIBRARIES:
        return None
    return find_library(LIBRARIES[name][0])


def missing_reason(name: str) -> Optional[str]:
    """Why policy `name` cannot run here (its library is not installed), else None."""
    if name not in LIBRARIES or library(name) is not None:
        return None
    filename, package = LIBRARIES[name]
    return (f"--allocator={name} preloads {filename}, which is not installed here (Debian: apt-get install {package}; "
            f"`make env` installs it when run as root)")


def variables(name: str, malloc_conf: Optional[str] = None) -> dict:
    """The variables policy `name` sets (LD_PRELOAD's entry apart); `malloc_conf`: jemalloc's MALLOC_CONF."""
    if name == "glibc":
        return dict(GLIBC_VARIABLES)
    if name == "jemalloc" and malloc_conf:
        return {"MALLOC_CONF": malloc_conf}
    return {}


def is_allocator_library(path: str) -> bool:
    """A jemalloc or tcmalloc library (any of their builds: libtcmalloc.so.4, libtcmalloc_minimal.so.4, ...)."""
    return os.path.basename(path).startswith(("libjemalloc", "libtcmalloc"))


def preload_list(value: Optional[str]) -> list:
    """LD_PRELOAD's entries (separated by spaces or colons, as the dynamic loader reads them)."""
    return [entry for entry in (value or "").replace(":", " ").split() if entry]


def apply(env: dict, name: str, malloc_conf: Optional[str] = None, preload_first: tuple = ()) -> None:
    """Set policy `name` in `env` (a child's environment being composed). `system` leaves it as inherited; any
    other policy first removes the variables and preloaded allocator libraries it may have inherited, then sets
    its own; `preload_first`: other libraries to preload (the CPU profile's OpenMP), kept in front of it."""
    if name == "system" and not preload_first:
        return
    entries = preload_list(env.get("LD_PRELOAD"))
    if name != "system":
        for variable in MANAGED_VARIABLES:
            env.pop(variable, None)
        env.update(variables(name, malloc_conf))
        entries = [entry for entry in entries if not is_allocator_library(entry)]
        path = library(name)
        if path:
            entries.insert(0, path)
    entries = list(preload_first) + [entry for entry in entries if entry not in preload_first]
    if entries:
        env["LD_PRELOAD"] = " ".join(entries)
    else:
        env.pop("LD_PRELOAD", None)


def compose_environment(env: dict, experiment, options) -> None:
    """(Declared hook, config/process_env.py.) The config's policy in a child's environment being composed; the CPU
    profile's hook, after this one, sets the dashboard's on top of it."""
    apply(env, experiment.allocator)


def start_variables() -> tuple:
    """(Declared hook, config/process_env.allocator_environment.) The variables a policy sets that act only from an
    interpreter's start."""
    return MANAGED_VARIABLES + ("LD_PRELOAD",)


# (name, cannot_run(experiment, capabilities), reason): runner/matrix.py's table adds it.
SUPPORT_RULES = [
    (
        "allocator-installed",
        lambda e, c: missing_reason(e.allocator) is not None,
        lambda e, c: missing_reason(e.allocator),
    ),
]


# The allocator of PyTorch's CPU dashboard (--cpu-profile=dashboard, features/cpu_profile): a sweep under it runs it
# unless --allocator says otherwise.
DASHBOARD_ALLOCATOR = "jemalloc"


def default_allocators(asked: dict) -> tuple:
    """The --allocator of a sweep that does not give one (`asked`: the axes' values asked for, by key): the
    dashboard's jemalloc under --cpu-profile=dashboard, else the default policy."""
    return (DASHBOARD_ALLOCATOR,) if "dashboard" in asked.get("cpu_profile", ()) else (DEFAULT,)


ORDER = 70  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "allocator",
        "the C allocator of every child, set before its interpreter starts: glibc (default: glibc's malloc with fixed "
        "mmap and trim thresholds, so timings don't depend on what the process freed before), system (as inherited, "
        "untouched), jemalloc, tcmalloc (preloaded; a value whose library is not installed is dropped with the "
        "package to install); experiment key `allocator`, recorded in environment.allocator",
        parse=parse, default=DEFAULT, choices=NAMES,
        sweep_default=default_allocators, support_rules=SUPPORT_RULES, slug="alloc-{}",
        example="system", meaning="the child's C allocator policy (absent: glibc)"),
)
