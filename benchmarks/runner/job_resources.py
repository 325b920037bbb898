"""What each child of a `--jobs N` sweep may use: a disjoint set of CPU cores, GPUs for CUDA configs, and the
one XLA device of a host for TPU configs (docs/architecture.md, "Executors").

The cores this process may use (or --cpu-affinity's) are split into N groups of equal size; a running child
holds one group, so at most N children run and no two share a core. A CUDA config also takes
--gpus-per-job of the visible GPUs; a TPU config takes the host's TPU, which its children can't share. A
config that needs more than is free waits for it (first come, first served: nothing overtakes it).
Pure Python, no torch: the GPU list comes from the probe.
"""

from __future__ import annotations

import dataclasses
from typing import Optional


class ResourceError(ValueError):
    """A --jobs request this machine can't meet; the message is one line for the user."""


@dataclasses.dataclass(frozen=True)
class Needs:
    """What one config's child needs beside its core group."""

    gpus: int = 0
    tpu: bool = False

    @classmethod
    def of(cls, experiment, gpus_per_job: int) -> "Needs":
        return cls(gpus=gpus_per_job if experiment.accelerator == "cuda" else 0,
                   tpu=experiment.accelerator == "tpu")


@dataclasses.dataclass(frozen=True)
class Grant:
    """What a running child holds: its cores, its GPUs (visible-device indexes), the TPU or not."""

    slot: int
    cores: tuple
    gpus: tuple = ()
    tpu: bool = False

    def child_env(self) -> dict:
        """Variables that confine the child to its grant: intra-op threads to match its cores, its GPUs only."""
        threads = str(len(self.cores))
        env = {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "TORCHINDUCTOR_COMPILE_THREADS": threads}
        if self.gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, self.gpus))
        return env


def split_cores(cores: list, jobs: int, size: Optional[int] = None) -> list:
    """`jobs` disjoint groups of equal size: `size` cores each (--cores-per-job), else an equal share (the
    remainder stays unused, so that every child is measured with the same number of cores)."""
    cores = sorted(cores)
    if jobs < 1:
        raise ResourceError(f"--jobs must be at least 1, not {jobs}")
    listed = f"{len(cores)} ({','.join(map(str, cores))})"
    if size is not None and jobs * size > len(cores):
        raise ResourceError(f"--jobs {jobs} with --cores-per-job {size} needs {jobs * size} CPU cores, and this sweep "
                            f"may use {listed}; use --jobs {max(1, len(cores) // size)} or fewer cores per job")
    if jobs > len(cores):
        raise ResourceError(f"--jobs {jobs} needs at least {jobs} CPU cores, and this sweep may use "
                            f"{listed}; use --jobs {len(cores)} or fewer")
    size = size or len(cores) // jobs
    return [tuple(cores[i * size:(i + 1) * size]) for i in range(jobs)]


class ResourcePool:
    """Hands out grants to the children of one sweep. Only the sweep's own thread takes and releases grants:
    it starts the next config of its plan when that config's grant is free, and waits for a child to end
    otherwise, so that nothing overtakes a config that waits."""

    def __init__(self, cores: list, jobs: int, gpus: Optional[list] = None, gpus_per_job: int = 1,
                 cores_per_job: Optional[int] = None):
        self.groups = split_cores(cores, jobs, cores_per_job)
        self.gpus = list(gpus or [])
        self.gpus_per_job = gpus_per_job
        self._free_slots = list(range(len(self.groups)))
        self._free_gpus = list(self.gpus)
        self._tpu_free = True

    def impossible(self, needs: Needs) -> Optional[str]:
        """Why a config can never get what it needs here (it would wait forever), or None."""
        if needs.gpus > len(self.gpus):
            return f"needs {needs.gpus} GPU(s) (--gpus-per-job) and this machine shows {len(self.gpus)}"
        return None

    def try_acquire(self, needs: Needs) -> Optional[Grant]:
        """A grant if what `needs` asks is free now, else None."""
        if not self._free_slots or len(self._free_gpus) < needs.gpus or (needs.tpu and not self._tpu_free):
            return None
        slot = self._free_slots.pop(0)
        gpus = tuple(self._free_gpus[:needs.gpus])
        del self._free_gpus[:needs.gpus]
        if needs.tpu:
            self._tpu_free = False
        return Grant(slot=slot, cores=self.groups[slot], gpus=gpus, tpu=needs.tpu)

    def release(self, grant: Grant) -> None:
        self._free_slots = sorted(self._free_slots + [grant.slot])
        self._free_gpus = sorted(self._free_gpus + list(grant.gpus))
        if grant.tpu:
            self._tpu_free = True

    def describe(self) -> str:
        groups = "; ".join(",".join(map(str, g)) for g in self.groups)
        text = f"{len(self.groups)} job(s), cores per job: {groups}"
        if self.gpus:
            text += f"; GPUs {','.join(map(str, self.gpus))}, {self.gpus_per_job} per CUDA job"
        return text
