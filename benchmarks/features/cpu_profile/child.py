"""--cpu-profile=dashboard in the child: memory bound to the NUMA nodes of its cores, and the record's
`environment.cpu_profile`, each piece of PyTorch's CPU dashboard setup in force or named as missing
(features/cpu_profile/__init__.py has the pieces; docs/runner.md, "The CPU dashboard's setup").

Cores and memory: numactl --physcpubind=CORES --membind=NODES is sched_setaffinity plus libnuma's strict memory
binding, then exec. A forked child can't be exec'd under numactl, and a fork server serves children of different
cores, so every child does numactl's two calls itself, before its model is built: it is already pinned to its cores
(the launcher, or the fork server, pins it) and binds its memory through libnuma (numactl's library). A forked
child's own allocations, and its copies of the server's pages it writes, follow its binding; pages it only reads
stay where the server put them (one node here: the same).
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
from typing import Optional

from benchmarks.config import backend_registry
from benchmarks.config.process_env import allocator_environment
from benchmarks.config.inductor_settings import settings_of
from benchmarks.features import allocator, cpu_profile
from benchmarks.features.allocator.child import mapped_libraries, start_environment
from benchmarks.plumbing.cpu_affinity import format_cores, parse_cores


def nodes_of(cores) -> list:
    """The NUMA nodes (sysfs) that hold any of `cores`; [0] where the kernel shows none."""
    nodes = []
    for path in sorted(glob.glob("/sys/devices/system/node/node[0-9]*/cpulist")):
        try:
            with open(path) as handle:
                text = handle.read().strip()
        except OSError:
            continue
        if text and set(parse_cores(text)) & set(cores):
            nodes.append(int(re.search(r"node(\d+)", path).group(1)))
    return nodes or [0]


def bind_memory(experiment) -> Optional[dict]:
    """(Feature method `bind_memory`.) The numa piece: this process's memory bound (strictly) to the nodes of its cores through libnuma, as
    numactl --membind does; None without the profile."""
    if experiment.cpu_profile != cpu_profile.DASHBOARD:
        return None
    cores = sorted(os.sched_getaffinity(0))
    nodes = nodes_of(cores)
    piece = {"cores": format_cores(cores), "nodes": ",".join(map(str, nodes)), "membind": False, "ok": False}
    path = allocator.find_library(cpu_profile.NUMA_LIBRARY)
    if path is None:
        piece["missing"] = cpu_profile.NUMA_MISSING
        return piece
    try:
        numa = ctypes.CDLL(path)
        numa.numa_parse_nodestring.restype = ctypes.c_void_p
        numa.numa_parse_nodestring.argtypes = [ctypes.c_char_p]
        numa.numa_set_membind.argtypes = [ctypes.c_void_p]
        numa.numa_bitmask_free.argtypes = [ctypes.c_void_p]
        if numa.numa_available() < 0:
            piece["missing"] = "numactl: the kernel offers no NUMA policy here (numa_available() < 0)"
            return piece
        mask = numa.numa_parse_nodestring(piece["nodes"].encode())
        if not mask:
            piece["missing"] = f"numactl: libnuma could not parse nodes {piece['nodes']}"
            return piece
        numa.numa_set_bind_policy(1)  # strict, as numactl --membind
        numa.numa_set_membind(mask)
        numa.numa_bitmask_free(mask)
    except (OSError, AttributeError) as exc:
        piece["missing"] = f"numactl: libnuma failed: {exc}"
        return piece
    piece["membind"] = piece["ok"] = True
    return piece


def cpu_profile_facts(experiment, wanted: dict, numa: Optional[dict], allocator_record: dict) -> Optional[dict]:
    """The record's `environment.cpu_profile` (feature method `cpu_profile_facts`): per piece whether it is in force (`ok`) and what was found; `missing`:
    a line per piece that is not, naming what to install or why; `as_dashboard`: every piece in force."""
    if experiment.cpu_profile != cpu_profile.DASHBOARD:
        return None
    import torch

    started = allocator_environment(start_environment())
    mapped = mapped_libraries()
    missing = []
    conf = started.get("MALLOC_CONF")
    alloc_ok = experiment.allocator == cpu_profile.ALLOCATOR and bool(allocator_record.get("library_mapped")) \
        and conf == cpu_profile.MALLOC_CONF
    if not alloc_ok:
        missing.append(f"allocator: jemalloc with the dashboard's MALLOC_CONF is not in force "
                       f"({allocator_record.get('problem') or f'MALLOC_CONF={conf}'})")
    openmp = cpu_profile.openmp_library()
    openmp_mapped = openmp is not None and os.path.realpath(openmp) in mapped
    variables = {k: started.get(k) for k in cpu_profile.OPENMP_VARIABLES}
    if openmp is None:
        missing.append(cpu_profile.OPENMP_MISSING)
    elif not openmp_mapped or variables != cpu_profile.OPENMP_VARIABLES:
        missing.append(f"Intel OpenMP: {openmp} {'mapped' if openmp_mapped else 'not mapped'}, started with "
                       + " ".join(f"{k}={v}" for k, v in variables.items()))
    # the cores the child was given (bind_memory read them before OpenMP started: KMP_AFFINITY then binds each of
    # its threads, the main one included, to one core)
    cores = len(parse_cores(numa["cores"])) if numa else len(os.sched_getaffinity(0))
    threads = {"cores": cores, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
               "torch_threads": torch.get_num_threads()}
    threads["ok"] = threads["OMP_NUM_THREADS"] == str(cores) and threads["torch_threads"] == cores
    if not threads["ok"]:
        missing.append(f"threads: OMP_NUM_THREADS={threads['OMP_NUM_THREADS']}, torch uses "
                       f"{threads['torch_threads']}, the child has {cores} core(s)")
    if numa is not None and not numa["ok"]:
        missing.append(numa.get("missing") or "numactl: memory not bound")
    applies = experiment.test == "eval" and backend_registry.uses_inductor(experiment.dynamo)
    frozen = bool(settings_of(experiment.inductor_config).get("freezing"))
    if applies and not frozen:
        missing.append("freezing: this Inductor inference config does not freeze (inductor_config lacks freezing=True)")
    return {
        "name": experiment.cpu_profile,
        "allocator": {"name": experiment.allocator, "malloc_conf": conf, "ok": alloc_ok},
        "openmp": {"library": openmp, "mapped": openmp_mapped, "variables": variables,
                   "ok": openmp_mapped and variables == cpu_profile.OPENMP_VARIABLES},
        "threads": threads,
        "numa": numa,
        "freezing": {"applies": applies, "ok": frozen if applies else None},
        "missing": missing,
        "as_dashboard": not missing,
    }

