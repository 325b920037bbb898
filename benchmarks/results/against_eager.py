"""A config measured against eager's run of the same model and axes: which eager config is its baseline (the one
rule), the dashboard's compile latency and peak-memory compression ratio, defined as PyTorch's HUD defines them
(benchmarks/aggregate/dashboard.py), and a paired config's speedup from its own eager runs (--speedup=paired).
aggregate.py's dashboard, compare.py's gates, the runner's end-of-sweep table and scripts/bench/dashboard.py all
read them here. Pure Python over Measurements.
"""

from __future__ import annotations

import json
import statistics
from typing import Iterable, Optional

from benchmarks import features
from benchmarks.config.axes import AXES
from benchmarks.config.axis import EAGER_LACKS, EAGER_VARIES
from benchmarks.results.measurement import Measurement

# The eager baseline's backend name (Measurement.base_backend).
EAGER = "eager"
# The axes an eager config has no value of, as each declares (its Axis's on_eager): torch.compile's own (the compile
# mode, Inductor config, compile cache, AOT precompile, what an LLM row compiles).
COMPILE_ONLY_AXES = tuple(axis.key for axis in AXES if axis.on_eager == EAGER_LACKS)
# The axes an eager config never varies, so a config is compared with eager without them: torch.compile's, those eager
# always runs at their default (static shapes; --speedup: eager is the baseline, never paired), and Inductor's CUDA
# graphs (Measurement.cudagraphs: the labels' own, no axis).
BACKEND_ONLY_AXES = tuple(axis.key for axis in AXES if axis.on_eager != EAGER_VARIES) + ("cudagraphs",)


def shared_axes(m: Measurement) -> dict:
    """The axes a config shares with its baseline (precision, quantization, ...): every axis but those eager never
    has (BACKEND_ONLY_AXES: torch.compile's own, and --speedup)."""
    return {k: v for k, v in m.axes.items() if k not in BACKEND_ONLY_AXES}


def baseline_key(m: Measurement) -> str:
    """What a config shares with its eager baseline: machine, suite, model, test, batch size and shared_axes."""
    return json.dumps([m.accelerator_model, m.suite, m.model_name, m.test, m.batch_size, shared_axes(m)],
                      sort_keys=True, default=str)


def mean(values: Iterable[Optional[float]]) -> Optional[float]:
    """The mean of the values that are not None (a config's figure over its processes), or None."""
    found = [v for v in values if v is not None]
    return statistics.fmean(found) if found else None


def first_run(processes: list) -> Optional[float]:
    """The first run's time (compilation included), averaged over a config's processes (--rounds)."""
    return mean(m.first_run_time() for m in processes)


def peak_memory(processes: list) -> Optional[float]:
    """The peak memory (Measurement.peak_memory: the device's, else the host's), averaged over processes."""
    return mean(m.peak_memory() for m in processes)


def paired_speedup(processes: list) -> Optional[dict]:
    """--speedup=paired: the config's speedup from its own pairs of alternating eager and backend runs, every
    process's pairs pooled by the feature's hook `pooled_speedup` (median, interval, pairs, processes), or None
    when no process has pairs (an isolated config: its speedup divides its eager config's time by its own)."""
    found = [m.paired_ratios() for m in processes]
    found = [ratios.tolist() for ratios in found if ratios is not None]
    pool = features.declared_one("pooled_speedup")
    return pool(found) if found and pool is not None else None


def compile_latency(backend: list, eager: list) -> Optional[float]:
    """Seconds the backend's first run takes beyond eager's first run (the harness's compilation_latency)."""
    mine, theirs = first_run(backend), first_run(eager)
    return None if mine is None or theirs is None else mine - theirs


def compression_ratio(backend: list, eager: list) -> Optional[float]:
    """Eager's peak memory / the backend's (above 1: the backend needs less)."""
    mine, theirs = peak_memory(backend), peak_memory(eager)
    return None if mine is None or theirs is None or mine <= 0 else theirs / mine


class EagerIndex:
    """The eager baselines of a set of configs, by baseline_key and run: a config takes the eager result of
    its own run, else the oldest (latest=True: the newest) of any run."""

    def __init__(self, entries: Iterable[tuple], base: str = EAGER):
        """entries: (Measurement, timestamp or None, what to hand back for it); only `base` configs are kept (of
        one key and timestamp, the last)."""
        self.base = base
        self._runs: dict = {}  # key -> {timestamp: payload}
        for m, timestamp, payload in entries:
            if m.base_backend == base:
                self._runs.setdefault(baseline_key(m), {})[timestamp] = payload

    def find(self, m: Measurement, timestamp=None, latest: bool = False):
        """The payload of m's eager baseline, or None without one."""
        runs = self._runs.get(baseline_key(m))
        if not runs:
            return None
        if timestamp in runs:
            return runs[timestamp]
        stamps = sorted(runs, key=lambda t: (t is not None, t or 0.0))
        return runs[stamps[-1] if latest else stamps[0]]
