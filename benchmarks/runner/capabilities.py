"""What torch can do here, as the parent learns it without importing torch: one probe child
(`python -m benchmarks.runner.probe`), asked only what the configs need, its answer cached per environment.

The cache key holds everything that could change the answer: the interpreter (its path and version), the versions, install paths
and modification times of torch, torch_xla and torchvision, the probe's own source, the variables that
choose devices (CUDA_VISIBLE_DEVICES, PJRT_DEVICE, TPU_*, ...), PYTHONPATH (where a backend may be imported from),
the dynamo backends installed as entry points (`torch_dynamo_backends`: name, target, distribution and version, as
config/backend_registry.plugins lists them) when the question is about backends, the device files present (/dev/nvidia*, /dev/accel*, /dev/vfio/*), and the question
asked. A stale entry can't hide a device or a backend change:
any of those changing gives another key. BENCHMARKS_PROBE_CACHE names the cache directory (default
$XDG_CACHE_HOME/ptbench-matrix, else ~/.cache/ptbench-matrix); "off" disables the cache.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
from typing import Optional

from benchmarks.config import backend_registry
from benchmarks.plumbing import disk_writes, machine_facts, safe_reads, torch_support
from benchmarks.plumbing.user_cache import cache_dir  # the probe's cache: shared with the ceilings
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.results import records

log = logging.getLogger("benchmarks.runner.capabilities")

DEVICE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "PJRT_DEVICE", "XLA_FLAGS", "TPU_ACCELERATOR_TYPE",
                    "TPU_VISIBLE_CHIPS", "TPU_PROCESS_BOUNDS", "TPU_CHIPS_PER_PROCESS_BOUNDS", "LD_LIBRARY_PATH")
DEVICE_FILES = ("/dev/nvidia*", "/dev/accel*", "/dev/vfio/*")
MAX_CACHE_BYTES = 16 * 1024 * 1024  # a probe's answer is a few kilobytes (Inductor's settings the most)


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What the probe child learned from torch on this machine."""

    dynamo_backends: tuple = ()
    torch_xla_error: Optional[str] = "not probed"  # None when torch_xla imports
    xla_devices: tuple = ()  # device kinds with at least one XLA device, e.g. ("CPU",)
    cuda_devices: tuple = ()  # CUDA device names
    tpu_type: Optional[str] = None
    inductor_settings: tuple = ()  # (name, type name) of torch._inductor.config, when a config sets one
    inductor_settings_error: Optional[str] = None  # why this torch's Inductor settings could not be listed

    @classmethod
    def from_dict(cls, data: dict) -> "Capabilities":
        return cls(
            dynamo_backends=tuple(data.get("dynamo_backends", ())),
            torch_xla_error=data.get("torch_xla_error"),
            xla_devices=tuple(data.get("xla_devices", ())),
            cuda_devices=tuple(data.get("cuda_devices", ())),
            tpu_type=data.get("tpu_type"),
            inductor_settings=tuple(sorted(data.get("inductor_settings", {}).items())),
            inductor_settings_error=data.get("inductor_settings_error"),
        )


def probe_argv(experiments: list) -> Optional[list]:
    """The probe's command line for what these configs need, or None when they need nothing probed."""
    kinds = sorted({e.accelerator.upper() for e in experiments if e.xla})
    need_dynamo = any(e.dynamo for e in experiments)
    need_cuda = any(e.accelerator == "cuda" for e in experiments)
    need_inductor = any(e.inductor_config for e in experiments)
    if not (kinds or need_dynamo or need_cuda):
        return None
    argv = [sys.executable, "-m", "benchmarks.runner.probe"] + [f"--xla-kind={k}" for k in kinds]
    return argv + ["--dynamo"] * need_dynamo + ["--cuda"] * need_cuda + ["--inductor-settings"] * need_inductor


def _package_stamp(name: str) -> list:
    """Where a package is installed and when it last changed, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return [name, None]
    folder = os.path.dirname(spec.origin)
    try:
        stamp = max(os.stat(path).st_mtime_ns for path in [folder, spec.origin, os.path.join(folder, "version.py")]
                    if os.path.exists(path))
    except OSError:
        stamp = None
    return [name, folder, stamp]


def cache_key(argv: list, environ: Optional[dict] = None) -> str:
    environ = os.environ if environ is None else environ
    facts = {
        "argv": argv[1:],
        "python": [sys.executable, sys.version, sys.implementation.cache_tag],
        "packages": [_package_stamp(name) for name in ("torch", "torch_xla", "torchvision")],
        "probe": _package_stamp("benchmarks.runner.probe"),
        "variables": {name: environ.get(name) for name in DEVICE_VARIABLES + ("PYTHONPATH",)},
        "backend_plugins": backend_registry.plugins() if "--dynamo" in argv else None,  # one installed after: a new key
        "device_files": sorted(path for pattern in DEVICE_FILES for path in glob.glob(pattern)),
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _read_cache(path: str) -> Optional[dict]:
    """The cached answer, or None (probe again) for none, or for what is no file we wrote: a link at its name (its
    target is never read), a FIFO or device (it would block the sweep for ever), a huge file, or not JSON."""
    try:
        facts = safe_reads.load_json(path, MAX_CACHE_BYTES, follow_links=False)
    except (OSError, ValueError) as exc:  # NotRegularFile is an OSError, DamagedFile a ValueError
        if not isinstance(exc, FileNotFoundError):
            log.debug("probe cache %s ignored (%s)", path, exc)
        return None
    return facts if isinstance(facts, dict) else None


def _write_cache(path: str, facts: dict) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        disk_writes.write_json(path, facts)
    except OSError as exc:  # a read-only home is no reason to fail a sweep
        log.debug("probe cache not written (%s)", exc)


def run_probe(argv: list) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [machine_facts.PROJECT_ROOT,
                                                                    os.environ.get("PYTHONPATH")])))
    started = time.monotonic()
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    log.debug("probe took %.1f s", time.monotonic() - started)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        detail = records.short_message(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "no output")
        raise UsageError(f"cannot start torch in a child process ({detail}); is the environment built? (make)")


def probe_capabilities(experiments: list) -> Capabilities:
    """What these configs need to know of torch here: from the cache when this environment was probed for
    the same question, else from one probe child (whose answer is then cached)."""
    argv = probe_argv(experiments)
    if argv is None:
        return Capabilities()
    directory = cache_dir()
    path = os.path.join(directory, f"probe-{cache_key(argv)}.json") if directory else None
    cached = _read_cache(path) if path else None
    facts = cached if cached is not None else run_probe(argv)
    caps = Capabilities.from_dict(facts)
    if cached is not None:
        log.debug("probe answer from %s", path)
    elif path:
        _write_cache(path, facts)
    problem = torch_support.unsupported_reason(facts.get("torch"))  # what torch says of itself, if its files did not
    if problem:
        raise UsageError(problem)
    return caps
