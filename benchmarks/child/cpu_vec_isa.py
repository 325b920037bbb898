"""Inductor's probe of the CPU's vector instruction sets, done once per process and before the clock starts.

The first time Inductor generates CPU code in a process it compiles, then loads in a fresh interpreter, a test
program per instruction set the CPU claims (AVX-512, AVX2): about 10 s on a 2-core machine with an empty cache, 6 s
with a warm one. That is a fact of the machine, not of the model, and the dynamo harness pays it once per process for
all its models. A cold-cache config here ran in its own process, so every CPU Inductor config's compile_time carried
it. Now a fork server probes once for all its children (fork_server/client.preloads_for), and a spawned child probes
in its setup phase; either way compile_time is the model's compile. The record's diagnostics.cpu_vec_isa says what
was found, where it was probed and what the probe cost (docs/runner.md, "Compile modes, Inductor settings and the
compile cache")."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Optional

from benchmarks.child import torch_internals
from benchmarks.config import backend_registry
from benchmarks.config.compile_cache_dirs import INDUCTOR_CACHE_VARIABLE
from benchmarks.plumbing import environment_variables

SOURCE = "torch._inductor.cpu_vec_isa.valid_vec_isa_list"


@contextlib.contextmanager
def machine_cache(directory: Optional[str]):
    """Inductor's cache directory set to the machine's while the probe runs (`directory`: its variable as the process
    was given it, before a cold or warm cache of the config's own replaced it; None: Inductor's default), then put
    back as it was. The probe's test programs are kept there, as any Inductor run keeps them, so the next process
    skips their compile (about 4 of its 10 s here); a config's own compile still starts from its own cache."""
    with environment_variables.changed({INDUCTOR_CACHE_VARIABLE: directory}):
        yield


def probe() -> None:
    """The fork server's preload: Inductor's list found now, its children inheriting it, the environment they
    inherit left as it was. A failure is printed; each child then probes for itself and its record says why."""
    try:
        with machine_cache(os.environ.get(INDUCTOR_CACHE_VARIABLE)):
            from torch._inductor import cpu_vec_isa

            cpu_vec_isa.valid_vec_isa_list()
    except Exception as exc:
        print(f"zygote: probing the CPU's vector instruction sets failed ({type(exc).__name__}: {exc}); each CPU "
              "Inductor child probes for itself", file=sys.stderr, flush=True)


def probe_for_config(experiment, machine_directory: Optional[str]) -> Optional[dict]:
    """In the child's setup phase, before any model is built or compiled: the record's diagnostics.cpu_vec_isa
    ({isa: [names], probed: "fork server" | "setup", seconds}), or None where the config needs no probe or this
    torch has no such list (the record's `absent` says so). `machine_directory`: see `machine_cache`."""
    if not backend_registry.generates_cpu_code(experiment):
        return None
    found: dict = {}
    with torch_internals.reading(torch_internals.CPU_VEC_ISA, SOURCE), machine_cache(machine_directory):
        from torch._inductor import cpu_vec_isa

        inherited = cpu_vec_isa.valid_vec_isa_list.cache_info().currsize > 0
        start = time.perf_counter()
        names = [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()]
        found = {"isa": names, "probed": "fork server" if inherited else "setup",
                 "seconds": 0.0 if inherited else round(time.perf_counter() - start, 3)}
    return found or None
