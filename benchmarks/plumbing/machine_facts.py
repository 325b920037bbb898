"""Versions and hardware facts for the record. Cheap, and never imports torch."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
from importlib import metadata
from typing import Optional

PACKAGES = ("torch", "torch_xla", "torchvision", "numpy")
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # plumbing/ -> the repo


def package_version(name: str) -> Optional[str]:
    for candidate in (name, name.replace("_", "-")):
        try:
            return metadata.version(candidate)
        except metadata.PackageNotFoundError:
            continue
    return None


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (not locale-dependent lscpu text)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def available_memory(meminfo: str = "/proc/meminfo") -> Optional[int]:
    """Bytes of memory the kernel says could be given to a new process now (MemAvailable), None where unknown."""
    try:
        with open(meminfo, encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return None


@functools.lru_cache(maxsize=1)
def gpu_names() -> tuple:
    """NVIDIA GPU names through NVML; empty where there is no driver or no pynvml."""
    try:
        import pynvml
    except ImportError:
        return ()
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...: no NVIDIA GPU here
        return ()
    try:
        names = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(index))
            names.append(name.decode() if isinstance(name, bytes) else name)
        return tuple(names)
    finally:
        pynvml.nvmlShutdown()


@functools.lru_cache(maxsize=1)
def git_commit(root: str = PROJECT_ROOT) -> Optional[str]:
    if not os.path.exists(os.path.join(root, ".git")):
        return None
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def accelerator_model(accelerator: str, cuda_names: tuple = (), tpu_type: Optional[str] = None) -> str:
    """Human text for the record's `accelerator_model`, as upstream writes it."""
    if accelerator == "cpu":
        return cpu_model()
    if accelerator == "cuda":
        names = list(cuda_names or gpu_names())
        if not names:
            return "unknown CUDA device"
        return names[0] if len(names) == 1 else "One of " + ", ".join(names)
    if accelerator == "tpu":
        return tpu_type or os.environ.get("TPU_ACCELERATOR_TYPE") or "unknown TPU"
    return accelerator


def collect() -> dict:
    """The record's `environment`. torch is named as it names itself (its version.py: a local build's +cu130, a build
    from source's git hash, also where it has no installed metadata), else by its metadata."""
    from benchmarks.plumbing import torch_support

    return {
        "python": platform.python_version(),
        **{name: package_version(name) for name in PACKAGES},
        "torch": torch_support.installed_torch()[0] or package_version("torch"),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "usable_cores": usable_cores(),
        "gpu_names": list(gpu_names()),
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "git_commit": git_commit(),
    }
