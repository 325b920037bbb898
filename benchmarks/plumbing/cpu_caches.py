"""The CPU's last-level cache as the machine describes it, for the bandwidth ceiling's array size (child/ceilings.py):
STREAM's rule asks each array to be at least 4x the sum of the last-level caches the run uses. Never imports torch.

Read from sysfs (/sys/devices/system/cpu/cpuN/cache/indexM: level, type, size, shared_cpu_list): the highest level
of data or unified cache of every CPU this process may run on, each instance (a set of CPUs that share it) once, so a
machine with several L3 slices (AMD's CCXs, two sockets) counts them all. Where sysfs says nothing, lscpu's total
(`lscpu -B -C=LEVEL,ALL-SIZE`); where neither does, ASSUMED_BYTES, named as assumed."""

from __future__ import annotations

import os
import subprocess
from typing import Optional

SYSFS = "/sys/devices/system/cpu"
ASSUMED_BYTES = 32 * 2**20  # a server CPU's L3 slice: the guess where the machine names none (arrays 4x it)
UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def size_bytes(text: str) -> Optional[int]:
    """'32768K', '8M', '1048576' (bytes) -> bytes; None where it is no size."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    factor = UNITS.get(text[-1:], 1)
    digits = text.rstrip("KMG")
    return int(digits) * factor if digits.isdigit() else None


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def cpus() -> list:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return list(range(os.cpu_count() or 1))


def sysfs_instances(root: str = SYSFS, cpu_list: Optional[list] = None) -> dict:
    """{(level, shared CPUs): bytes} of the last level's caches the CPUs use (each instance once)."""
    found: dict = {}
    for cpu in cpu_list if cpu_list is not None else cpus():
        best = None
        for index in range(16):
            base = f"{root}/cpu{cpu}/cache/index{index}"
            level, kind, size = _read(f"{base}/level"), _read(f"{base}/type"), _read(f"{base}/size")
            if level is None or kind not in ("Data", "Unified") or not level.isdigit() or size is None:
                continue
            nbytes = size_bytes(size)
            if nbytes and (best is None or int(level) > best[0]):
                best = (int(level), _read(f"{base}/shared_cpu_list") or str(cpu), nbytes)
        if best is not None:
            found[best[:2]] = best[2]
    top = max((level for level, _ in found), default=None)
    return {key: value for key, value in found.items() if key[0] == top}


def lscpu_bytes() -> Optional[int]:
    """lscpu's total of its highest cache level, None where it can't say."""
    try:
        text = subprocess.run(["lscpu", "-B", "-C=LEVEL,ALL-SIZE"], capture_output=True, text=True, timeout=10,
                              env={**os.environ, "LC_ALL": "C"}).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [line.split() for line in text.splitlines()[1:] if len(line.split()) == 2]
    sizes = [(level, size_bytes(size)) for level, size in rows if level.isdigit()]
    sizes = [(int(level), size) for level, size in sizes if size]
    return max(sizes)[1] if sizes else None


def last_level_cache(root: str = SYSFS) -> tuple:
    """(bytes, where from): the sum of the last-level caches this process's CPUs use."""
    instances = sysfs_instances(root)
    if instances:
        level = next(iter(instances))[0]
        return sum(instances.values()), f"sysfs: L{level}, {len(instances)} instance(s)"
    total = lscpu_bytes()
    if total:
        return total, "lscpu"
    return ASSUMED_BYTES, "assumed (neither sysfs nor lscpu names the caches)"
