"""The C allocator as this child finds it: the variables it was started with, the libraries mapped into it, the
record's `environment.allocator`, and a config by hand restarted under its policy (docs/measurement.md). No torch:
single_config.main calls `restart_under_policy` before torch is imported.

glibc reads its MALLOC_*_ thresholds, and the dynamic loader LD_PRELOAD, when a process starts; what counts is the
environment the process was started with (/proc/self/environ), not os.environ. A forked child's is its fork
server's, which was started under the policy (fork_server/client.py keys servers by it).
"""

from __future__ import annotations

import os
import sys
from typing import Optional

from benchmarks.config.process_env import allocator_environment
from benchmarks.features import allocator

# Set in the environment of a config by hand restarted under its policy: never restarted twice.
RESTARTED_VARIABLE = "BENCHMARKS_ALLOCATOR_RESTARTED"


def start_environment() -> dict:
    """The environment this process was started with (a forked child: its fork server's)."""
    try:
        with open("/proc/self/environ", "rb") as handle:
            data = handle.read()
    except OSError:
        return dict(os.environ)
    pairs = (item.partition(b"=") for item in data.split(b"\0") if item)
    return {name.decode(errors="replace"): value.decode(errors="replace") for name, _, value in pairs}


def mapped_libraries() -> list:
    """The files mapped into this process that are shared libraries (/proc/self/maps), resolved, in map order."""
    paths = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                if ".so" in os.path.basename(path) and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    return [os.path.realpath(p) for p in paths]


def restart_under_policy(wanted: dict) -> None:
    """A config by hand (`wanted`: the environment its parent would have composed) started without its allocator
    policy in force: replace this process with the same command under it (os.execve), before torch is imported.
    Why restart rather than record "not applied": a command printed by --dry-run, run by hand, is how a user
    reproduces one config of a sweep, and it should measure what the sweep's child measured; the cost is one
    interpreter start. Does nothing when the policy is in force, once restarted, or once torch is imported."""
    started = start_environment()
    if allocator_environment(started) == allocator_environment(wanted):
        return
    if started.get(RESTARTED_VARIABLE) or "torch" in sys.modules:
        return  # describe() records what is in force instead
    try:
        with open("/proc/self/cmdline", "rb") as handle:
            argv = [arg.decode() for arg in handle.read().split(b"\0") if arg]
    except OSError:
        return
    env = dict(os.environ)
    for name in allocator.MANAGED_VARIABLES + ("LD_PRELOAD",):
        env.pop(name, None)
    env.update(allocator_environment(wanted))
    env[RESTARTED_VARIABLE] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)


def allocator_facts(experiment, wanted: dict) -> dict:
    """The record's `environment.allocator` (feature method `allocator_facts`): the policy's name; the library it preloads (for `system`, an
    allocator library found mapped, if any) and whether it is mapped into this process; the allocator's variables
    this process was started with; `applied`: whether that is the policy (`wanted`: the environment the policy
    composes), and `problem`, one line, when it is not."""
    name = experiment.allocator
    started = allocator_environment(start_environment())
    expected = allocator_environment(wanted)
    mapped = mapped_libraries()
    library: Optional[str] = allocator.library(name)
    if name == "system":
        library = next((path for path in mapped if allocator.is_allocator_library(path)), None)
    library_mapped = None if library is None else os.path.realpath(library) in mapped
    problems = []
    if started != expected:
        problems.append("started with " + (" ".join(f"{k}={v}" for k, v in sorted(started.items())) or "none of its "
                        "variables") + "; the policy sets " + (" ".join(f"{k}={v}" for k, v in sorted(expected.items()))
                                                                or "none"))
    if library is not None and not library_mapped:
        problems.append(f"{library} is not mapped into the process")
    return {
        "name": name,
        "library": library,
        "library_mapped": library_mapped,
        "variables": {k: v for k, v in sorted(started.items()) if k in allocator.MANAGED_VARIABLES},
        "preload": started.get("LD_PRELOAD"),
        "applied": not problems,
        "problem": "; ".join(problems) or None,
    }
