"""Generation as a way to run a model: the huggingface suite's LLM rows are timed by `generate`, as the dynamo
harness times them, and what an LLM user reads is measured apart (docs/generation.md). Child only: imports torch.

`generate` runs as the harness runs it: greedy, the static KV cache, the pad token set to the end token; and as we
fix it: exactly the asked number of new tokens (min_new_tokens = max_new_tokens, so random weights never stop early),
an explicit attention mask, and transformers' own compile of the decode step off unless the config asks for it
(`generation_compile`: `forward`), so that eager is eager.

Each timed run is one `generate` call. A logits processor (TokenClock) notes when each new token's logits are ready:
a CUDA event on the GPU (recorded in stream order: no host synchronisation inside the loop), the host's clock on
the CPU. From those: the time to first token (the prefill, from the call to the first token's logits), the decode
time of each later token (its median and 90th percentile per run), decode tokens per second, the inter-token
latencies per call and pooled over every call (vLLM's mean_itl ... p99_itl); beside them the whole
generate time (the harness's number, also the run's total_time and per_iter_time, so every tool's speedup is the
harness's) and each run's peak memory, the static KV cache included.
"""

from __future__ import annotations

import functools
import gc
import statistics
import time
from typing import Callable, Optional

from benchmarks.child import backends, device_memory, feature_methods
from benchmarks.config.generation_modes import COMPILE_FORWARD, COMPILE_GENERATE
from benchmarks.results.record import Samples

# What each `generation_compile` value compiles, for the record.
COMPILED = {
    None: "nothing: eager (transformers' own compile of the decode step turned off)",
    COMPILE_GENERATE: "the whole generate call under dynamo, as the dynamo harness compiles it",
    COMPILE_FORWARD: "the model's forward at each decode step, as transformers' static-cache path "
                                        "compiles it (the prefill runs eager)",
}
# PyTorch/XLA without dynamo: its lazy tensors are traced at each step and their graphs compiled (then cached).
LAZY_TENSORS = "nothing by dynamo: PyTorch/XLA's lazy tensors trace each step; its graphs are compiled once, then cached"
# What we do that the harness does not (the record's generation.known_differences).
KNOWN_DIFFERENCES = (
    "min_new_tokens = max_new_tokens: random weights never stop early at an end token (the harness sets no minimum)",
    "an explicit attention mask (the harness passes input_ids alone)",
    "prompt ids drawn over the configuration's whole vocabulary under our seed (the harness: its tokenizer's)",
    "a logits processor notes each new token's time (a graph break of its own when dynamo compiles generate)",
)
# On PyTorch/XLA the token clock runs the pending graph at each token (lazy tensors run only when read).
XLA_DIFFERENCE = ("on PyTorch/XLA the token clock syncs the device at each new token (torch_xla.sync, then a wait), "
                  "so that its time is the token's: the step's graph is cut at the logits")


def generate_options(generation) -> dict:
    """generate's keyword arguments for a `suites.Generation` request."""
    return {"do_sample": False, "use_cache": True, "cache_implementation": "static",
            "max_new_tokens": generation.new_tokens, "min_new_tokens": generation.new_tokens,
            "pad_token_id": generation.pad_token_id}


def compiled_part(experiment) -> Optional[str]:
    """What the config compiles (generation_compile, the harness's whole generate where unset), None for eager."""
    if experiment.dynamo is None:
        return None
    return getattr(experiment, "generation_compile", None) or COMPILE_GENERATE


class GenerateStep:
    """One `generate` call on the example inputs, compiled as the config says; `step(clock)` passes a TokenClock."""

    def __init__(self, bm, experiment, module, kwargs: dict):
        self.experiment, self.module, self.kwargs = experiment, module, kwargs
        self.step_context = feature_methods.provided("step_context")  # the forward's autocast, found once
        self.options = generate_options(bm.generation)
        self.compiled = compiled_part(experiment)
        config = module.generation_config
        config.disable_compile = self.compiled != COMPILE_FORWARD
        if self.compiled == COMPILE_FORWARD:
            self._compile_decode_step(config)
        self.call = self._generate
        if self.compiled == COMPILE_GENERATE:
            self.call = backends.compile_fn(self._generate, experiment)

    def _compile_decode_step(self, config) -> None:
        """transformers' own compile of the decode step, with the config's backend, mode and dynamic setting (on
        every device: transformers would compile on GPUs only)."""
        from transformers import CompileConfig

        feature_methods.provided("before_compile")(self.experiment)
        compile_config = CompileConfig(backend=self.experiment.dynamo,
                                       mode=feature_methods.provided("compile_mode")(self.experiment) or "default",
                                       dynamic=True if self.experiment.dynamic == "all" else None)
        compile_config._compile_all_devices = True
        config.compile_config = compile_config

    def _generate(self, logits_processor=None, **kwargs):
        with self.step_context(self.experiment):
            return self.module.generate(**kwargs, logits_processor=logits_processor)

    def __call__(self, clock=None):
        from transformers import LogitsProcessorList

        processors = LogitsProcessorList([clock] if clock is not None else [])
        return self.call(logits_processor=processors, **self.kwargs, **self.options)


@functools.lru_cache(maxsize=None)
def token_clock_class():
    """The TokenClock class, made once per process: dynamo guards on a processor's type, so a class made per call
    would fail its guards at every call and recompile (seconds a call) where it compiles the whole generate."""
    import torch
    from transformers import LogitsProcessor

    class TokenClock(LogitsProcessor):
        """Notes when each new token's logits are ready (generate calls it once per new token): CUDA events on the
        GPU, the host's clock on the CPU; on PyTorch/XLA the host's clock after the device ran the step (lazy
        tensors are only traced until read). Dynamo never traces it (it must run, not be folded into a graph)."""

        def __init__(self, experiment, capacity: int):
            self.experiment, self.capacity, self.count = experiment, capacity, 0
            self.on_gpu = experiment.accelerator == "cuda" and not experiment.xla
            self.on_xla = bool(experiment.xla)
            self.events = [torch.cuda.Event(enable_timing=True) for _ in range(capacity + 1)] if self.on_gpu else None
            self.stamps = []

        def start(self) -> None:
            if self.on_gpu:
                self.events[0].record()
            else:
                self.stamps = [time.perf_counter()]

        @torch.compiler.disable
        def __call__(self, input_ids, scores):
            self.count += 1
            if self.on_gpu:
                if self.count <= self.capacity:
                    self.events[self.count].record()
                return scores
            if self.on_xla:
                backends.sync(self.experiment)
                backends.wait(self.experiment)
            self.stamps.append(time.perf_counter())
            return scores

        def seconds(self) -> list:
            """Each new token's time since start() (after the device finished: the caller synchronises)."""
            if self.on_gpu:
                marks = self.events[1:min(self.count, self.capacity) + 1]
                return [self.events[0].elapsed_time(event) / 1e3 for event in marks]
            return [stamp - self.stamps[0] for stamp in self.stamps[1:]]

    return TokenClock


def token_clock(experiment, capacity: int):
    """A fresh TokenClock for one generate call of at most `capacity` new tokens."""
    return token_clock_class()(experiment, capacity)


def percentile(values: list, fraction: float) -> float:
    """The `fraction` quantile by linear interpolation (numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def token_figures(token_seconds: list, total: Optional[float] = None) -> dict:
    """One run's figures from each new token's time since the call (and the whole call's time, `total`): time to
    first token; the inter-token latencies (each later token's time after the one before: the decode steps) as
    their median and 90th percentile (the original figures), their mean, 95th and 99th percentiles, population
    standard deviation and coefficient of variation (stdev / mean, as optimum-benchmark's per-token statistics);
    decode tokens per second over the span from the first token to the last; and vLLM's TPOT, (total - TTFT) /
    (n - 1), where the whole call is given. A single new token has no decode figure."""
    figures = {"time_to_first_token": token_seconds[0]}
    steps = [later - earlier for earlier, later in zip(token_seconds, token_seconds[1:])]
    if not steps:
        return figures
    mean = statistics.fmean(steps)
    stdev = statistics.pstdev(steps)
    figures.update({
        "decode_per_token_time": statistics.median(steps),
        "decode_per_token_p90_time": percentile(steps, 0.9),
        "decode_tokens_per_second": len(steps) / (token_seconds[-1] - token_seconds[0]),
        "inter_token_latency_mean": mean,
        "inter_token_latency_p50": percentile(steps, 0.5),
        "inter_token_latency_p90": percentile(steps, 0.9),
        "inter_token_latency_p95": percentile(steps, 0.95),
        "inter_token_latency_p99": percentile(steps, 0.99),
        "inter_token_latency_stdev": stdev,
        "inter_token_latency_cv": stdev / mean if mean > 0 else float("nan"),
    })
    if total is not None:
        figures["time_per_output_token"] = (total - token_seconds[0]) / len(steps)
    return figures


# The percentiles of the time to first token over a record's timed calls (one value each: a record's, not a run's).
TTFT_PERCENTILES = {"time_to_first_token_p50": 0.5, "time_to_first_token_p90": 0.9, "time_to_first_token_p95": 0.95,
                    "time_to_first_token_p99": 0.99}


def across_runs(ttfts: list) -> dict:
    """The time to first token's percentiles over the timed calls (vLLM's and MLPerf's TTFT percentiles), each a
    one-value list as compile_time is (a metric's values stay a list of numbers)."""
    return {name: [percentile(ttfts, fraction)] for name, fraction in TTFT_PERCENTILES.items()} if ttfts else {}


# The inter-token latencies pooled over every timed call, as vLLM takes them (its mean_itl_ms, std_itl_ms and
# p{N}_itl_ms over every gap of every request, here in seconds): one value each, a record's. Beside them, the per-call
# inter_token_latency_* figures keep their meaning (one per call; the tools read their median over the calls).
POOLED_ITL_PERCENTILES = {"median_itl": 0.5, "p90_itl": 0.9, "p95_itl": 0.95, "p99_itl": 0.99}


def pooled_itl(calls: list) -> dict:
    """vLLM's inter-token latency figures over every gap of every timed call pooled (each call's token times since
    the call, generation.token_seconds): their mean, population stdev and percentiles, each a one-value list."""
    gaps = [later - earlier for times in calls for earlier, later in zip(times, times[1:])]
    if not gaps:
        return {}
    return {"mean_itl": [statistics.fmean(gaps)], "std_itl": [statistics.pstdev(gaps)],
            **{name: [percentile(gaps, fraction)] for name, fraction in POOLED_ITL_PERCENTILES.items()}}


def first_call_excess(experiment, warmup_times: list, generate_times: list) -> dict:
    """{"compile_time": [the first call's seconds beyond a steady one's]} of a config that compiles (dynamo or
    PyTorch/XLA), never below 0 (a first call as fast as a steady one compiled nothing that took time); {} for eager,
    which compiles nothing (its first call minus the median is only noise, and was negative on a busy machine)."""
    if not (experiment.dynamo or experiment.xla) or not warmup_times or not generate_times:
        return {}
    return {"compile_time": [max(0.0, warmup_times[0] - statistics.median(generate_times))]}


class TokenCountError(RuntimeError):
    """generate made another number of new tokens than was asked."""


def timed_generate(step: Callable, experiment, generation) -> tuple:
    """One clocked generate call: (its wall seconds, closed by the device's sync; each new token's seconds since the
    call; the output)."""
    clock = token_clock(experiment, generation.new_tokens)
    backends.wait(experiment)
    start = time.perf_counter()
    clock.start()
    output = step(clock)
    backends.sync(experiment)  # PyTorch/XLA: the last step's pending graph runs before the clock stops
    backends.wait(experiment)
    total = time.perf_counter() - start
    if clock.count != generation.new_tokens:
        raise TokenCountError(f"generate made {clock.count} new tokens; {generation.new_tokens} were asked")
    return total, clock.seconds(), output


def measure(step: Callable, bm, experiment, repeat: int, warmup: int,
            on_phase: Callable[[str], None] = lambda phase: None, memory=None, gpu=None) -> dict:
    """Warm-up generate calls (metrics.warmup_time; the first compiles), then `repeat` timed ones, each clocked per
    token: (the metrics: the figures of each run (lists per run), the time to first token's percentiles over the runs
    and compile_time (the first call beyond a steady one); each timed call's token times since the call).
    `memory` (a device_memory.PeakMemory) gives each call's peak memory; `gpu` (a gpu_telemetry.GpuTelemetry) its
    GPU figures, energy per new token among them (metrics.gpu_*)."""
    import torch

    generation, metrics = bm.generation, Samples()  # each name checked (results/record.py)
    raw = []  # each timed call's token times: the record's generation.token_seconds (nested: not a metric)
    gc.collect()
    try:
        on_phase("compile")
        for index in range(warmup):
            metrics["warmup_time"].append(timed_generate(step, experiment, generation)[0])
            if index == 0:
                on_phase("run")
        on_phase("run")
        for _ in range(repeat):
            if memory is not None:
                memory.start_run()
            if gpu is not None:
                gpu.start_run()
            total, token_seconds, output = timed_generate(step, experiment, generation)
            if gpu is not None:
                for name, value in gpu.end_run(tokens=generation.new_tokens).items():
                    metrics[name].append(value)
            if memory is not None:
                metrics["peak_memory_bytes"].append(memory.end_run())
            del output
            raw.append(token_seconds)
            for name, value in token_figures(token_seconds, total).items():
                metrics[name].append(value)
            for name in ("generate_time", "total_time", "per_iter_time"):
                metrics[name].append(total)
            metrics["process_rss_bytes"].append(device_memory.process_rss())
            metrics["peak_rss_bytes"].append(memory.lifetime_peak_rss() if memory is not None
                                             else device_memory.process_peak_rss())
    except (MemoryError, torch.OutOfMemoryError) as exc:
        raise generation.out_of_memory(exc, bm.batch_size) from None
    metrics.update(first_call_excess(experiment, metrics["warmup_time"], metrics["generate_time"]))
    metrics.update(across_runs(metrics.get("time_to_first_token") or []))
    metrics.update(pooled_itl(raw))
    return dict(metrics), raw


def facts(bm, experiment) -> dict:
    """The record's `generation`: the lengths, how generate ran, what was compiled, the token count, and what
    differs from the harness."""
    generation = bm.generation
    on_gpu = experiment.accelerator == "cuda" and not experiment.xla
    compiled = compiled_part(experiment)
    if experiment.xla:
        clock = "the host's perf_counter after a device sync at each token (PyTorch/XLA)"
    else:
        clock = "CUDA events (no host sync inside the loop)" if on_gpu else "the host's perf_counter"
    return {**generation.facts, "generated_tokens": generation.new_tokens,
            "decoding": "greedy, static KV cache, pad token = end token, min_new_tokens = max_new_tokens",
            "compiled": compiled,
            "compiled_means": LAZY_TENSORS if experiment.xla and compiled is None else COMPILED[compiled],
            "token_clock": clock, "timed_run": "one generate call",
            "known_differences": list(KNOWN_DIFFERENCES) + ([XLA_DIFFERENCE] if experiment.xla else [])}
