"""A record's roofline figures from its counted work, its times and the machine's ceilings (docs/roofline.md). No
torch: the child computes them (child/work_count.py), and the tools read the record's `roofline` by these key names.

    arithmetic_intensity      = FLOPs / bytes
    achieved FLOP/s, bytes/s  = FLOPs / t, bytes / t                      (t: the median per-iteration time)
    attainable FLOP/s         = min(peak FLOP/s of the dtype, intensity x peak bytes/s)
                                (a dtype slower than float32 here: float32's peak, `ceiling_dtype` and `held_to_float32`)
    fraction_of_attainable    = achieved FLOP/s / attainable = max(FLOPs / peak FLOP/s, bytes / peak bytes/s) / t
    bound                     = "compute" where FLOPs / peak FLOP/s >= bytes / peak bytes/s, else "memory"

The second form of the fraction (the time the ceilings allow over the time taken) is the same number, and also holds
for work without counted FLOPs (a copy: its fraction is its share of the bandwidth ceiling). A fraction above 1 means
the counts or the ceilings are wrong: it is not given (`why_not` says so); a single timed run above 1 under a median
below it costs the per-run fractions only (`per_repeat_why_not`)."""

from __future__ import annotations

import math
import statistics
from typing import Optional

# The record's `roofline` keys the tools read.
FRACTION = "fraction_of_attainable"
ACHIEVED_FLOPS = "achieved_flops_per_second"
INTENSITY = "arithmetic_intensity"
WHY_NOT = "why_not"
ABOVE_ONE = "a fraction above 1"  # how why_not starts when a config beat its ceilings
BEATEN = "beaten"  # figures()'s mark of ceilings that a timed run (or the median) beat: the child measures them again
CEILING_DTYPE = "ceiling_dtype"  # the FLOP ceiling's dtype where it is not the config's own (`dtype`)
HELD = "held_to_float32"  # why: the config's dtype has no ceiling of its own here
PER_RUN_WHY_NOT = "per_repeat_why_not"  # why metrics.fraction_of_attainable is absent while the fraction is given
# Its per-repeat metrics (compare's and the analyzer's by name: more is better).
METRICS = (FRACTION, ACHIEVED_FLOPS)
# The config's dtype -> the ceiling's name (environment.ceilings.flops_per_second's keys).
CEILING_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}


def ceiling_dtype(compute_dtype: str, accelerator: str, float32_matmul_precision: str = "highest") -> str:
    """Which FLOP ceiling a config's arithmetic runs against: its compute dtype; float32 on CUDA at a matmul precision
    below highest runs on TF32 units (`tf32`)."""
    if compute_dtype == "float32" and accelerator == "cuda" and float32_matmul_precision != "highest":
        return "tf32"
    return compute_dtype


def flop_ceiling(ceilings: dict, dtype: str) -> tuple:
    """(peak FLOP/s, why it is float32's or None) of a config in `dtype`: the dtype's own ceiling; float32's where the
    dtype's best GEMM here was slower than float32's (child/ceilings.py: a slow fallback kernel is no roof)."""
    peaks = ceilings.get("flops_per_second") or {}
    slower = (ceilings.get("slower_than_float32") or {}).get(dtype)
    if peaks.get(dtype) or not slower or not peaks.get("float32"):
        return peaks.get(dtype), None
    return peaks["float32"], (f"{dtype}'s best GEMM here ({slower / 1e9:.3g} GFLOP/s) is slower than float32's "
                              f"({peaks['float32'] / 1e9:.3g} GFLOP/s): no {dtype} ceiling, held to float32's roof")


def memory_ceiling(ceilings: dict, bytes_moved: float) -> tuple:
    """(bytes/s, level): the last-level cache's ceiling where the bytes of one iteration fit in it (they are read
    again from the cache each iteration), else the memory's."""
    llc = ceilings.get("last_level_cache_bytes") or 0
    cache = ceilings.get("cache_bytes_per_second")
    if cache and bytes_moved <= llc:
        return float(cache), "cache"
    return float(ceilings["bytes_per_second"]), "memory"


def figures(flops: float, bytes_moved: float, seconds: list, ceilings: Optional[dict], dtype: str) -> dict:
    """The roofline figures of work (`flops`, `bytes_moved` per unit) done in each of `seconds` (one per timed
    run; the median is used): achieved rates, intensity, attainable, fraction, bound; `why_not` instead of a
    fraction where there is none to give. Also `per_repeat`: each run's fraction and FLOP/s (the record's metrics)."""
    out: dict = {"dtype": dtype}
    times = [s for s in seconds if s and s > 0]
    if not times:
        return {**out, WHY_NOT: "no positive timed run"}
    t = statistics.median(times)
    out.update({ACHIEVED_FLOPS: flops / t, "achieved_bytes_per_second": bytes_moved / t,
                INTENSITY: flops / bytes_moved if bytes_moved else None})
    if not ceilings or ceilings.get(WHY_NOT):
        return {**out, WHY_NOT: (ceilings or {}).get(WHY_NOT) or "no ceilings measured"}
    peak, held = flop_ceiling(ceilings, dtype)
    if not peak:
        return {**out, WHY_NOT: f"no FLOP ceiling measured for {dtype} on this device"}
    if held:
        out.update({CEILING_DTYPE: "float32", HELD: held})
    if not bytes_moved and not flops:
        return {**out, WHY_NOT: "no work counted (0 FLOPs and 0 bytes)"}
    bandwidth, level = memory_ceiling(ceilings, bytes_moved)
    compute_time, memory_time = flops / peak, bytes_moved / bandwidth
    out.update({"peak_flops_per_second": peak, "peak_bytes_per_second": bandwidth, "memory_level": level,
                "attainable_flops_per_second": min(peak, out[INTENSITY] * bandwidth) if out[INTENSITY] is not None
                else peak, "bound": "compute" if compute_time >= memory_time else "memory"})
    best = max(compute_time, memory_time)
    fraction = best / t
    per_run = [best / s for s in times]
    out["per_repeat"] = {ACHIEVED_FLOPS: [flops / s for s in times]}
    if max(fraction, max(per_run)) > 1:
        out[BEATEN] = max(fraction, max(per_run))  # the ceilings are too low (or the counts wrong): measure again
    if fraction > 1:
        out[WHY_NOT] = (f"{ABOVE_ONE} ({fraction:.3g}): the counts or the ceilings are wrong (bytes that stay in a "
                        "cache, or ceilings measured on a busier machine); not shown")
        return out
    out[FRACTION] = fraction
    if max(per_run) > 1:  # the median is under the roofline, a lucky run above it: no run's fraction is given
        out[PER_RUN_WHY_NOT] = (f"a timed run's fraction above 1 ({max(per_run):.3g}): the ceilings are the best of a "
                                "few short runs, and this run beat them; the median's fraction is given, no run's")
    else:
        out["per_repeat"][FRACTION] = per_run
    return out


def fraction_of(record: dict) -> Optional[float]:
    """A record's fraction of attainable, None where it has none."""
    found = record.get("roofline") if isinstance(record, dict) else None
    value = found.get(FRACTION) if isinstance(found, dict) else None  # a record from elsewhere: any shape
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None
