"""Every --dynamo backend in one table: what the parent's support rules and the probe's cache read, and what the child
compiles with. Pure Python, no torch: the parent imports it; child/backends.py reads `compiles_with` to call
torch.compile and child/exporting.py runs the ones that export.

A backend is one `register(Backend(...))` line here (its tests beside it): its name on --dynamo (and in the record's
`dynamo` key), the torch.compile backend it compiles with (torch must list that one: the probe asks), the devices it
runs on, whether it exports instead of compiling (eval only, static shapes), whether it takes torch.compile's mode
and Inductor's config. A name not registered here is a dynamo backend torch lists as is (aot_eager, cudagraphs, a
user's plugin): `get` gives it the defaults. A user's plugin is a `torch_dynamo_backends` entry point of an installed
distribution (how torch finds it); `plugins()` lists those from the installed metadata, without importing them, and
`names()` lists both kinds.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Optional

ANY, XLA_ONLY, NATIVE_ONLY = "any", "xla", "native"  # the devices a backend runs on: XLA tensors, native ones, both
PLUGIN_GROUP = "torch_dynamo_backends"  # the entry-point group torch._dynamo lists backends from


@dataclasses.dataclass(frozen=True)
class Backend:
    name: str
    compiles_with: Optional[str] = None  # torch.compile's backend=; None: its own name
    devices: str = ANY
    exports: bool = False  # torch.export / AOTInductor instead of torch.compile (child/exporting.py): eval only
    inductor: bool = False  # takes torch.compile's mode and Inductor's config (--compile-mode, --inductor-config)
    generates_code: bool = False  # Inductor writes its kernels (the CPU's vector instruction sets are probed first)
    meaning: str = ""

    @property
    def torch_name(self) -> Optional[str]:
        """The name torch._dynamo must list for this backend to run; None for an export (no dynamo backend)."""
        return None if self.exports else (self.compiles_with or self.name)


REGISTRY: dict = {}


def register(backend: Backend) -> Backend:
    """Declare a backend (a second declaration of a name replaces the first: a test's throwaway one)."""
    REGISTRY[backend.name] = backend
    return backend


register(Backend("inductor", devices=NATIVE_ONLY, inductor=True, generates_code=True, meaning="TorchInductor: Triton or C++ kernels"))
register(Backend("aot_eager", meaning="AOTAutograd's graphs run by eager kernels (no code generated)"))
register(Backend("openxla", devices=XLA_ONLY, meaning="dynamo's graphs compiled by PyTorch/XLA"))
register(Backend("openxla_eval", devices=XLA_ONLY, meaning="openxla for inference (older torch_xla)"))
register(Backend("export", exports=True, devices=NATIVE_ONLY, meaning="torch.export, strict, then the program run"))
register(Backend("export_nonstrict", exports=True, devices=NATIVE_ONLY, meaning="torch.export with strict=False"))
register(Backend("aot_inductor", exports=True, devices=NATIVE_ONLY, generates_code=True,
                 meaning="torch.export, then AOTInductor's compiled package loaded and run"))


def get(name: Optional[str]) -> Optional[Backend]:
    """The backend of a --dynamo value: its declaration, or a dynamo backend torch lists as is; None for eager."""
    if name is None:
        return None
    return REGISTRY.get(name) or Backend(name)


def exports(name: Optional[str]) -> bool:
    return name is not None and get(name).exports


def uses_inductor(name: Optional[str]) -> bool:
    return name is not None and get(name).inductor


def generates_code(name: Optional[str]) -> bool:
    return name is not None and get(name).generates_code


def runs_on(name: Optional[str]) -> str:
    return ANY if name is None else get(name).devices


def available(name: str, torch_listed: Iterable) -> bool:
    """Whether --dynamo=`name` can run with the dynamo backends torch lists here (the probe's answer)."""
    torch_name = get(name).torch_name
    return torch_name is None or torch_name in set(torch_listed)


def known(torch_listed: Iterable) -> list:
    """Every --dynamo value that can run here: torch's backends, and the declared ones torch can run."""
    listed = set(torch_listed)
    return sorted(listed | {name for name in REGISTRY if available(name, listed)})


def plugins() -> list:
    """The dynamo backends installed as `torch_dynamo_backends` entry points (torch lists them beside its own): [name,
    target, distribution, version] each, read from the installed metadata without importing anything."""
    import importlib.metadata

    found = []
    for entry in importlib.metadata.entry_points(group=PLUGIN_GROUP):
        dist = getattr(entry, "dist", None)
        found.append([entry.name, entry.value, getattr(dist, "name", None), getattr(dist, "version", None)])
    return sorted(found, key=lambda item: [str(part) for part in item])


def names() -> list:
    """The backends this registry knows without asking torch: the declared ones and the installed plugins."""
    return sorted(set(REGISTRY) | {plugin[0] for plugin in plugins()})


def generates_cpu_code(experiment) -> bool:
    """Inductor (inductor, aot_inductor) compiling for the CPU, not for XLA's devices: the configs whose process
    probes the CPU's vector instruction sets first (child/cpu_vec_isa.py)."""
    return experiment.accelerator == "cpu" and not experiment.xla and generates_code(experiment.dynamo)
