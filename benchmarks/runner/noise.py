"""Benchmark noise: what on this machine may disturb timings, checked once at the start of a sweep.

Checks the CPU frequency governor and boost of the cores in use (where /sys exposes them), the load
average and the busiest other processes, swap in use, and on NVIDIA GPUs the clocks (pynvml). The
facts go into every record's `environment.noise`; problems are warned about once, in one block, each
with the command that fixes it. Nothing here changes the machine's settings.

`--cpu-affinity CORES` pins each child to those cores; records say which cores each child had.
The sysfs root can be pointed elsewhere (tests) with the BENCHMARKS_SYSFS_ROOT environment variable.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Optional

from benchmarks.plumbing import machine_facts
from benchmarks.plumbing.cpu_affinity import format_cores, requested_cores, usable_cores

log = logging.getLogger("benchmarks.runner.noise")

SYSFS_ENV = "BENCHMARKS_SYSFS_ROOT"
BUSY_PROCESS_PERCENT = 10.0  # another process using more of a core than this is noise
LOAD_PER_CORE = 0.5  # a 1-minute load average above this per usable core is noise
SWAP_BYTES = 64 * 2**20  # swap in use beyond this is noise
TOP_PROCESSES = 5


# ---------------------------------------------------------------- the checks


def sysfs_root(root: Optional[str] = None) -> str:
    return root or os.environ.get(SYSFS_ENV) or "/sys"


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def cpu_governors(cores: list, root: Optional[str] = None) -> Optional[dict]:
    """Core number (as text, JSON keys) -> scaling governor; None when /sys exposes none (VMs, containers)."""
    base = os.path.join(sysfs_root(root), "devices", "system", "cpu")
    found = {str(core): _read(os.path.join(base, f"cpu{core}", "cpufreq", "scaling_governor")) for core in cores}
    found = {core: governor for core, governor in found.items() if governor}
    return found or None


def cpu_boost(root: Optional[str] = None) -> Optional[bool]:
    """True when turbo/boost is on (intel_pstate or cpufreq), False when off, None when not exposed."""
    base = os.path.join(sysfs_root(root), "devices", "system", "cpu")
    no_turbo = _read(os.path.join(base, "intel_pstate", "no_turbo"))
    if no_turbo in ("0", "1"):
        return no_turbo == "0"
    boost = _read(os.path.join(base, "cpufreq", "boost"))
    if boost in ("0", "1"):
        return boost == "1"
    return None


def busiest_processes(interval: float = 0.5, top: int = TOP_PROCESSES) -> list:
    """The other processes using the most CPU over `interval` seconds (at a sweep's start, before any child; the
    sweep's own processes, a fork server importing torch, are not others)."""
    import psutil

    own = {os.getpid(), 0} | {child.pid for child in psutil.Process().children(recursive=True)}
    watched = []
    for proc in psutil.process_iter(["pid", "name"]):
        if proc.pid in own:
            continue
        try:
            proc.cpu_percent(None)  # the first call only starts the count
            watched.append(proc)
        except psutil.Error:
            continue
    time.sleep(interval)
    busy = []
    for proc in watched:
        try:
            percent = proc.cpu_percent(None)
        except psutil.Error:
            continue
        if percent > 0:
            busy.append({"pid": proc.pid, "name": proc.info.get("name") or "?", "cpu_percent": round(percent, 1)})
    busy.sort(key=lambda p: p["cpu_percent"], reverse=True)
    return busy[:top]


def gpu_clocks() -> list:
    """Per NVIDIA GPU: SM clock now and at most, whether clocks are locked and auto-boost is on (None: unknown)."""
    try:
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver, no GPU
        return []

    def ask(fn, *args):
        try:
            return fn(*args)
        except Exception:  # NVMLError_NotSupported and friends: an unknown, not a failure
            return None

    gpus = []
    try:
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = ask(pynvml.nvmlDeviceGetName, handle)
            reasons = ask(pynvml.nvmlDeviceGetCurrentClocksEventReasons, handle)
            user_limit = getattr(pynvml, "nvmlClocksEventReasonUserDefinedClocks", None)
            boost = ask(pynvml.nvmlDeviceGetAutoBoostedClocksEnabled, handle)
            gpus.append({
                "index": index,
                "name": name.decode() if isinstance(name, bytes) else name,
                "sm_clock_mhz": ask(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_SM),
                "max_sm_clock_mhz": ask(pynvml.nvmlDeviceGetMaxClockInfo, handle, pynvml.NVML_CLOCK_SM),
                "clocks_locked": bool(reasons & user_limit) if reasons is not None and user_limit else None,
                "auto_boost": bool(boost[0]) if boost else None,
            })
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    return gpus


def problems(facts: dict) -> list:
    """(what is wrong, the command that fixes it) for each noise source in `facts`."""
    found = []
    governors = facts.get("cpu_governor") or {}
    slow = sorted((int(core) for core, governor in governors.items() if governor != "performance"))
    if slow:
        names = sorted({governors[str(core)] for core in slow})
        found.append((f"CPU frequency governor is {'/'.join(names)} on core(s) {format_cores(slow)}",
                      "sudo cpupower frequency-set --governor performance"))
    if facts.get("cpu_boost"):
        found.append(("CPU turbo boost is on (the clock follows temperature and load)",
                      "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo"
                      "  (acpi-cpufreq: echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost)"))
    load = facts.get("load_average")
    cores = max(1, len(facts.get("cores") or [1]))
    if load and load[0] > LOAD_PER_CORE * cores:
        found.append((f"load average {load[0]:.2f} on {cores} core(s)",
                      "wait for other work to finish, or run on idle cores (--cpu-affinity)"))
    busy = [p for p in facts.get("busiest_processes") or [] if p["cpu_percent"] >= BUSY_PROCESS_PERCENT]
    if busy:
        names = ", ".join(f"{p['name']} (pid {p['pid']}, {p['cpu_percent']:.0f}%)" for p in busy[:3])
        found.append((f"other processes are busy: {names}",
                      "stop them, or keep the benchmark on other cores with --cpu-affinity"))
    swap = facts.get("swap_used_bytes") or 0
    if swap > SWAP_BYTES:
        found.append((f"{swap / 2**20:.0f} MiB of swap in use",
                      "sudo swapoff -a && sudo swapon -a  (brings swapped pages back into memory)"))
    for gpu in facts.get("gpus") or []:
        index = gpu["index"]
        if gpu.get("clocks_locked") is False:
            top = gpu.get("max_sm_clock_mhz") or "F"
            found.append((f"GPU {index} clocks are not locked",
                          f"sudo nvidia-smi -i {index} --lock-gpu-clocks={top},{top}"))
        if gpu.get("auto_boost"):
            found.append((f"GPU {index} auto-boost is on",
                          f"sudo nvidia-smi -i {index} --auto-boost-default=0"))
    return found


def check(cores: Optional[list] = None, root: Optional[str] = None, interval: float = 0.5) -> dict:
    """The noise facts for `environment.noise` (cores: those the benchmark will use)."""
    import psutil

    cores = sorted(cores) if cores else usable_cores()
    facts = {
        "cores": cores,
        "cpu_governor": cpu_governors(cores, root),
        "cpu_boost": cpu_boost(root),
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "busiest_processes": busiest_processes(interval),
        "swap_used_bytes": psutil.swap_memory().used,
        "gpus": gpu_clocks(),
    }
    facts["problems"] = [f"{what} (fix: {fix})" for what, fix in problems(facts)]
    return facts


def warning_text(facts: dict) -> Optional[str]:
    """One short block: each problem and the command that fixes it; None when there is none."""
    found = problems(facts)
    if not found:
        return None
    lines = [f"benchmark noise: {len(found)} problem(s) on this machine may make timings vary "
             "(settings left unchanged; recorded in environment.noise):"]
    for what, fix in found:
        lines.append(f"  - {what}\n      fix: {fix}")
    return "\n".join(lines)


def sweep_check(options) -> dict:
    """At the start of a sweep: check, warn once, and return the facts for every record."""
    started = time.monotonic()
    facts = check(requested_cores(options))
    text = warning_text(facts)
    if text:
        log.warning("%s", text)
    log.debug("noise check took %.2f s", time.monotonic() - started)
    return facts


def sweep_environment(options) -> dict:
    """The environment every record of a sweep carries: the machine's facts with the noise check's (sweep_check,
    run once here)."""
    return annotate({"environment": machine_facts.collect()}, sweep_check(options))["environment"]


def annotate(record: dict, noise_facts: dict, cpu_affinity: Optional[list] = None) -> dict:
    """Put the sweep's noise facts (and a child's cores) into a record's environment (a copy of it)."""
    environment = dict(record.get("environment") or {})
    environment["noise"] = noise_facts
    if cpu_affinity is not None:
        environment["cpu_affinity"] = cpu_affinity
    record["environment"] = environment
    return record
