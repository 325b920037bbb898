"""Precise timing of one callable (`do_bench`) and the runner's --pure-wall-time, built on it.

`do_bench` warms up by time, then times calls until a time budget is spent or a count is reached,
and keeps every sample. On CUDA it reads the device's own clock (CUDA events) and flushes the L2
cache before each call, so neither Python overhead nor warm caches flatter the figure; elsewhere it
times each call plus the backend's sync with `time.perf_counter_ns`.

Importing this module is cheap (torch is imported only by the functions that run on the device).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any, Callable, Optional

from benchmarks.config.pure_wall_time import pure_wall_time_reason

STATISTICS = ("min", "median", "mean")
L2_FLUSH_BYTES = 256 * 2**20  # larger than any current GPU's L2 cache
ESTIMATE_CALLS = 5  # CUDA: calls used to estimate one call's time before sizing the loops


class PureWallTimeUnsupported(RuntimeError):
    """--pure-wall-time asked of a config that has no CUDA device to time with."""


@dataclasses.dataclass
class BenchResult:
    samples: list  # seconds per timed call, in call order
    statistic: str
    value: float  # the chosen statistic of `samples`, seconds
    warmup_calls: int  # untimed calls before the samples (the first one included)
    clock: str  # "cuda_event" or "perf_counter_ns"
    output: Any = dataclasses.field(default=None, repr=False)  # what the last call returned


def summarize(samples: list, statistic: str) -> float:
    if statistic == "min":
        return min(samples)
    if statistic == "median":
        return statistics.median(samples)
    if statistic == "mean":
        return statistics.fmean(samples)
    raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, not {statistic!r}")


def do_bench(fn: Callable[[], Any], sync: Optional[Callable[[], Any]] = None, *, warmup: float = 0.025,
             budget: float = 0.1, max_calls: Optional[int] = None, min_calls: int = 1, statistic: str = "min",
             cuda: bool = False, flush_l2: bool = True) -> BenchResult:
    """Time `fn()`: one first call (compilation, allocation), warm-up for `warmup` seconds, then timed
    calls until `budget` seconds are spent or `max_calls` are made (at least `min_calls`).

    `sync` is the backend's: it is called after every call on the CPU clock (it is what makes lazy or
    asynchronous work finish inside the timed region); on CUDA the device clock needs it only at the end.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, not {statistic!r}")
    if not budget > 0 or warmup < 0:
        raise ValueError(f"budget must be positive and warmup not negative (got {budget}, {warmup})")
    if min_calls < 1 or (max_calls is not None and max_calls < min_calls):
        raise ValueError(f"need 1 <= min_calls <= max_calls (got {min_calls}, {max_calls})")
    sync = sync or (lambda: None)
    if cuda:
        return _bench_cuda(fn, sync, warmup, budget, max_calls, min_calls, statistic, flush_l2)
    return _bench_cpu(fn, sync, warmup, budget, max_calls, min_calls, statistic)


def _bench_cpu(fn, sync, warmup, budget, max_calls, min_calls, statistic) -> BenchResult:
    clock = time.perf_counter_ns
    output = fn()
    sync()
    calls = 1
    warmup_ns, budget_ns = int(warmup * 1e9), int(budget * 1e9)
    start = clock()
    while clock() - start < warmup_ns:
        output = fn()
        sync()
        calls += 1
    samples = []
    start = clock()
    while len(samples) < min_calls or (clock() - start < budget_ns and (max_calls is None or len(samples) < max_calls)):
        before = clock()
        output = fn()
        sync()
        samples.append((clock() - before) / 1e9)
    return BenchResult(samples, statistic, summarize(samples, statistic), calls, "perf_counter_ns", output)


def _bench_cuda(fn, sync, warmup, budget, max_calls, min_calls, statistic, flush_l2) -> BenchResult:
    import torch

    if not torch.cuda.is_available():
        raise PureWallTimeUnsupported("do_bench(cuda=True) needs a CUDA device; this process sees none")
    # Writing a buffer larger than L2 before each call evicts what the previous call left there.
    cache = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if flush_l2 else None

    def flush():
        if cache is not None:
            cache.zero_()

    output = fn()
    sync()
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(ESTIMATE_CALLS):
        flush()
        output = fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(begin.elapsed_time(end) / 1e3 / ESTIMATE_CALLS, 1e-7)
    warmup_calls = max(1, int(warmup / estimate))
    timed_calls = max(min_calls, int(budget / estimate))
    if max_calls is not None:
        timed_calls = min(timed_calls, max_calls)
    for _ in range(warmup_calls):
        output = fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(timed_calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(timed_calls)]
    for first, last in zip(starts, ends):
        flush()  # outside the event pair: not timed
        first.record()
        output = fn()
        last.record()
    sync()
    torch.cuda.synchronize()
    samples = [first.elapsed_time(last) / 1e3 for first, last in zip(starts, ends)]
    return BenchResult(samples, statistic, summarize(samples, statistic), 1 + ESTIMATE_CALLS + warmup_calls,
                       "cuda_event", output)


def backend_sync(experiment) -> Optional[Callable[[], None]]:
    """The sync that ends a call's work on the config's device (None for CPU eager and Inductor)."""
    if experiment.xla:
        import torch_xla
        import torch_xla.core.xla_model as xm

        def xla_sync():
            torch_xla.sync()
            xm.wait_device_ops()

        return xla_sync
    if experiment.accelerator == "cuda":
        import torch

        return torch.cuda.synchronize
    return None


# ---------------------------------------------------------------- --pure-wall-time


def pure_wall_time_problem(experiment, options) -> Optional[str]:
    """In the child: why --pure-wall-time cannot run here (the config, or no CUDA device), or None."""
    if not options.pure_wall_time:
        return None
    reason = pure_wall_time_reason(experiment)
    if reason:
        return reason
    import torch

    if not torch.cuda.is_available():
        return "--pure-wall-time times with CUDA events, and this process sees no CUDA device"
    return None


def pure_wall_time_run(step: Callable, experiment, iterations: int, hooks=()) -> tuple:
    """measured_loop.timed_run's contract, with each iteration timed by do_bench on the device clock:
    (total seconds = sum of per-iteration minima, trace seconds (the same: no lazy tracing), last output)."""
    sync = backend_sync(experiment)
    total, output = 0.0, None
    for _ in range(iterations):
        result = do_bench(step, sync, cuda=True, statistic="min")
        total += result.value
        output = result.output
        for hook in hooks:
            hook()
    return total, total, output


def tflops(flops: float, per_iter_times: list) -> list:
    """TFLOP/s for each per-iteration time (a FLOP count per iteration, e.g. a microbenchmark's)."""
    return [flops / seconds / 1e12 if seconds > 0 else 0.0 for seconds in per_iter_times]
