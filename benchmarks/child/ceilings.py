"""The machine's ceilings, measured in the child once per machine and cached: peak FLOP/s per dtype (a large GEMM) and
peak memory bandwidth (streaming kernels), on the config's device with the threads it runs with (docs/roofline.md).
Child only: imports torch.

A ceiling is the best of a few short runs, as a roofline's ceilings are: the fastest this machine was seen to go.
Bandwidth is counted as bytes read + bytes written by the kernel (an add c = a + b: 3 × n × itemsize; a copy: 2 × n ×
itemsize), the same count a config's compulsory bytes use. Two bandwidth ceilings: `bytes_per_second` over arrays of
at least 4x the last-level cache each (STREAM's rule; the caches this process's CPUs use, plumbing/cpu_caches.py, or
the GPU's L2), so the figure is DRAM's (HBM's), not a cache's; and `cache_bytes_per_second`, the best over working
sets that fit in the caches, the ceiling of a config whose bytes per iteration fit in the last-level cache (its data
is read again from the cache each iteration, not from memory).

A dtype whose best GEMM here is slower than float32's (bfloat16 on a CPU without AVX512-BF16 or AMX: a slow
fallback) has no ceiling of its own: its figure moves to `slower_than_float32`, and its configs are held to
float32's roof (results/roofline_figures.py says so in their record), never to a roof below what they reach.

Cached as JSON under the user cache directory (plumbing/user_cache.py), one file per key: torch's version, the device
(CPU model, or GPU name), the thread count, the dtypes measured and this module's METHOD; anything that can change
the answer gives another file. A config that beat a ceiling (a ceiling cached on a busier machine) has them measured
again at once, after its timed runs, each figure kept at the better of the two (remeasured)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from typing import Callable, Optional

import torch

from benchmarks.child import device_memory
from benchmarks.plumbing import cpu_caches, disk_writes, machine_facts, safe_reads, user_cache

log = logging.getLogger("benchmarks.child.ceilings")

METHOD = 2  # this measurement's version: part of the cache key (2: arrays of 4x the cache, slow dtypes held to fp32)
CPU_DTYPES = ("float32", "bfloat16")
CUDA_DTYPES = ("float32", "tf32", "bfloat16", "float16")
GEMM_SIZES = (512, 1024, 2048, 4096, 8192, 16384)
GEMM_BUDGET_SECONDS = 0.5  # per dtype: the next size is tried while its 3 runs would fit
RUNS = 3
REMEASURE_RUNS = 8  # a config beat the ceilings: they are measured again with more runs (rarely: worth the time)
# per array: working sets inside the caches, from the first level's to the last's (a config whose bytes sit in a faster
# level than any measured could beat the cache ceiling)
CACHE_ARRAY_BYTES = (16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024)
CACHE_RUNS = 25  # per size (a few microseconds each); a remeasurement's: REMEASURE_RUNS times as many
STREAM_CACHE_MULTIPLE = 4  # STREAM's rule: each array at least 4x the last-level caches the run uses
MIN_STREAM_BYTES = 128 * 2**20  # per array, whatever the cache says (a VM may name less cache than the host has)
HOW = ("FLOP/s: best of 3 square GEMMs (2·n³ FLOPs) of the largest n in 512..16384 whose runs fit {budget} s per dtype "
       "(tf32: float32 with matmul precision high); a dtype slower than float32 gets no ceiling (slower_than_float32); "
       "bandwidth: best of 3 runs of c = a + b and c.copy_(a), bytes read + written (3n and 2n elements), arrays of "
       "{stream} MiB each, {ratio:.3g}x the last-level cache ({llc} MiB, {source}){short}: bytes_per_second; the same "
       "over arrays of 16 KiB to 4 MiB: cache_bytes_per_second; {threads} threads, torch's own kernels")


def device_of(experiment) -> Optional[str]:
    """'cpu' or 'cuda' for a config the ceilings apply to; None for XLA (its device's kernels are not torch's)."""
    if experiment.xla:
        return None
    return "cuda" if experiment.accelerator == "cuda" else "cpu"


def last_level_cache(device: str) -> tuple:
    """(bytes, where from) of the last-level cache the run uses: the GPU's L2, or the CPU's (plumbing/cpu_caches.py)."""
    if device == "cuda":
        l2 = int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) or 0)
        return l2, "the GPU's L2"
    return cpu_caches.last_level_cache()


def key_facts(device: str) -> dict:
    """What can change the answer: torch, the device, the threads, the dtypes, the method."""
    name = torch.cuda.get_device_name(torch.cuda.current_device()) if device == "cuda" else machine_facts.cpu_model()
    return {"torch": torch.__version__, "device": device, "device_name": name, "threads": torch.get_num_threads(),
            "dtypes": list(CUDA_DTYPES if device == "cuda" else CPU_DTYPES), "method": METHOD}


def cache_path(facts: dict) -> Optional[str]:
    directory = user_cache.cache_dir()
    if directory is None:
        return None
    digest = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:24]
    return os.path.join(directory, f"ceilings-{digest}.json")


def for_config(experiment) -> dict:
    """The record's environment.ceilings for this config's device: from the cache, else measured now (and cached).
    XLA configs and a failed measurement get {"why_not": ...} instead."""
    device = device_of(experiment)
    if device is None:
        return {"why_not": "XLA configs: the ceilings are measured with torch's own kernels, not XLA's"}
    try:
        facts = key_facts(device)
        path = cache_path(facts)
        cached = read(path)
        if cached is not None:
            return {**cached, "cached": True}
        return {**measured_and_kept(device, facts, path, None), "cached": False}
    except Exception as exc:  # noqa: BLE001 - a ceiling that can't be measured costs the roofline, never the config
        log.warning("ceilings not measured: %s: %s", type(exc).__name__, exc)
        return {"why_not": f"the ceilings could not be measured ({type(exc).__name__}: {exc})"}


def remeasured(experiment, beaten: dict) -> Optional[dict]:
    """A config beat `beaten` (measured on a busier machine, most likely): the ceilings measured again now, outside
    the timed runs, each figure the better of the two (a ceiling is the best the machine was seen to do), and cached
    so; None where they can't be."""
    device = device_of(experiment)
    if device is None:
        return None
    try:
        facts = key_facts(device)
        return {**measured_and_kept(device, facts, cache_path(facts), beaten, runs=REMEASURE_RUNS), "cached": False,
                "remeasured": True}
    except Exception as exc:  # noqa: BLE001 - as for_config
        log.warning("ceilings not measured again: %s: %s", type(exc).__name__, exc)
        return None


def measured_and_kept(device: str, facts: dict, path: Optional[str], before: Optional[dict], runs: int = RUNS) -> dict:
    """The ceilings measured now, each the best of `runs` (the better of them and `before`'s, figure by figure),
    written to `path`."""
    start = time.perf_counter()
    try:
        measured = {**facts, **measure(device, runs), "load_average": list(os.getloadavg()),
                    "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "seconds": round(time.perf_counter() - start, 3)}
    finally:  # its arrays are not the config's memory: the caching allocator emptied, the peak forgotten
        if device == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        device_memory.forget_peak_rss()
    if before:
        measured = best_of(before, measured)
    measured.update(held_to_float32({**(measured.get("slower_than_float32") or {}), **measured["flops_per_second"]}))
    if path:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            disk_writes.write_json(path, {k: v for k, v in measured.items() if k not in ("cached", "path", "remeasured")})
        except OSError as exc:  # a read-only home is no reason to fail the config
            log.debug("ceilings not cached (%s)", exc)
    return {**measured, "path": path}


def held_to_float32(gemm: dict) -> dict:
    """{flops_per_second, slower_than_float32} from each dtype's best GEMM: a dtype slower than float32 here is no
    ceiling (a slow fallback kernel: the dtype's configs are held to float32's roof), kept aside to say so."""
    floor = gemm.get("float32") or 0.0
    slower = {dtype: value for dtype, value in gemm.items() if dtype != "float32" and value < floor}
    return {"flops_per_second": {dtype: value for dtype, value in gemm.items() if dtype not in slower},
            "slower_than_float32": slower}


def all_gemms(ceilings: dict) -> dict:
    return {**(ceilings.get("slower_than_float32") or {}), **(ceilings.get("flops_per_second") or {})}


def best_of(before: dict, now: dict) -> dict:
    """`now`, each ceiling the higher of its value and `before`'s (every dtype's GEMM, held to float32 or not)."""
    out = dict(now)
    earlier = all_gemms(before)
    out["flops_per_second"] = {dtype: max(value, earlier.get(dtype) or 0.0) for dtype, value in all_gemms(now).items()}
    out.pop("slower_than_float32", None)
    for key in ("bytes_per_second", "cache_bytes_per_second"):
        if now.get(key) is not None or before.get(key) is not None:
            out[key] = max(now.get(key) or 0.0, before.get(key) or 0.0)
    return out


MAX_CACHE_BYTES = 1 << 20  # a ceilings file is a few hundred bytes


def read(path: Optional[str]) -> Optional[dict]:
    if not path:
        return None
    try:  # a link, FIFO, device, huge file or bad JSON at the name is no cache of ours: measured again
        facts = safe_reads.load_json(path, MAX_CACHE_BYTES, follow_links=False)
    except (OSError, ValueError):
        return None
    return {**facts, "path": path} if isinstance(facts, dict) and facts.get("flops_per_second") else None


def measure(device: str, runs: int = RUNS) -> dict:
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    gemm = {dtype: gemm_flops_per_second(device, dtype, sync, runs) for dtype in key_facts(device)["dtypes"]}
    llc, source = last_level_cache(device)
    stream = stream_array_bytes(device, llc)
    in_cache = [size for size in CACHE_ARRAY_BYTES if size * 3 <= llc]  # an add's three arrays inside the cache
    ratio = stream / llc if llc else float("inf")
    short = "" if ratio >= STREAM_CACHE_MULTIPLE else f", short of STREAM's {STREAM_CACHE_MULTIPLE}x: memory is scarce"
    return {**held_to_float32(gemm), "bytes_per_second": streaming_bytes_per_second(device, stream, sync, runs),
            "cache_bytes_per_second": max((streaming_bytes_per_second(device, size, sync,
                                                                      CACHE_RUNS * (1 if runs == RUNS else runs))
                                           for size in in_cache), default=None),
            "last_level_cache_bytes": llc, "last_level_cache_source": source, "stream_array_bytes": stream,
            "how": HOW.format(budget=GEMM_BUDGET_SECONDS, stream=stream // 2**20, ratio=ratio, llc=llc // 2**20,
                              source=source, short=short, threads=torch.get_num_threads())}


def stream_array_bytes(device: str, llc: int) -> int:
    """Each streaming array: STREAM_CACHE_MULTIPLE x the last-level cache, MIN_STREAM_BYTES at least (1 GiB on a
    GPU), within a sixteenth of the memory available (the record's `how` says when that cut it short of the rule)."""
    wanted = max(MIN_STREAM_BYTES, llc * STREAM_CACHE_MULTIPLE, 2**30 if device == "cuda" else 0)
    if device == "cuda":
        free = torch.cuda.mem_get_info()[0]
    else:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return max(2**20, min(wanted, free // 16)) // 4096 * 4096


def best_seconds(fn: Callable, sync: Callable, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def gemm_flops_per_second(device: str, dtype_name: str, sync: Callable, runs: int = RUNS) -> float:
    """The best FLOP/s of square GEMMs, growing n while the next size's runs fit the budget (RUNS of them: a
    remeasurement's extra runs are at the last size only)."""
    dtype = torch.float32 if dtype_name == "tf32" else getattr(torch, dtype_name)
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if dtype_name == "tf32" else "highest")
    try:
        best = 0.0
        for n in GEMM_SIZES:
            a = torch.randn(n, n, device=device).to(dtype)
            b = torch.randn(n, n, device=device).to(dtype)
            torch.matmul(a, b)  # first call: the library's setup, not timed
            seconds = best_seconds(lambda: torch.matmul(a, b), sync, RUNS)
            last = seconds * 8 * (RUNS + 1) > GEMM_BUDGET_SECONDS or n == GEMM_SIZES[-1]
            if last and runs > RUNS:
                seconds = min(seconds, best_seconds(lambda: torch.matmul(a, b), sync, runs - RUNS))
            best = max(best, 2.0 * n ** 3 / seconds)
            del a, b
            if last:
                break
        return best
    finally:
        torch.set_float32_matmul_precision(before)


def streaming_bytes_per_second(device: str, array_bytes: int, sync: Callable, runs: int = RUNS) -> float:
    """The best bytes/s (read + written) of an add and a copy over float32 arrays of `array_bytes` each."""
    n = array_bytes // 4
    a = torch.ones(n, device=device)
    b = torch.ones(n, device=device)
    c = torch.empty(n, device=device)
    try:
        torch.add(a, b, out=c)  # every page touched before the clock
        add = 3 * array_bytes / best_seconds(lambda: torch.add(a, b, out=c), sync, runs)
        copy = 2 * array_bytes / best_seconds(lambda: c.copy_(a), sync, runs)
        return max(add, copy)
    finally:
        del a, b, c
