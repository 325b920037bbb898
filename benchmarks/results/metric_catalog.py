"""Every metric a record's `metrics` can hold, and the figures the tools compute from records, each declared once:
name, kind (time, rate, ratio, count, bytes, reading, text), unit, direction (which way is better) and a one-line
meaning. Compare's units and its rate-by-inverse rule, aggregate's and history's --metric choices and their notes,
history's "higher is better" and its dashboard's colours, and the sweep's progress table read them here. No imports:
a tool's --help lists them without loading numpy.

The one list of metrics: the record schema's `metrics` section is generated from it (results/record_schema.py,
docs/record-schema.md), and the record refuses a metric not declared here at the line that writes it
(results/record.py). A new metric is one `declare(Metric(...))` here plus the child code that measures it
(`record["metrics"].add_samples(name, values)`; a record's metric is a list, one value per timed run) and its own
test; then `python -m benchmarks.results.record_schema --write-docs`. `writer` says who writes it (core, upstream,
feature:<name>); `speedup=True` makes aggregate.py's and history.py detect's --metric take it by name;
`progress=True` shows its median on the sweep's progress line and in its speedup table.
tests/results/test_metric_catalog.py holds every stored record's metrics to this table and every consumer's
direction to its declaration.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

TIME, RATE, RATIO, COUNT, BYTES, READING, TEXT = "time", "rate", "ratio", "count", "bytes", "reading", "text"
KINDS = (TIME, RATE, RATIO, COUNT, BYTES, READING, TEXT)


@dataclasses.dataclass(frozen=True)
class Metric:
    name: str
    kind: str  # one of KINDS
    unit: str  # the record's unit: "s", "bytes", "tokens/s", "TFLOP/s", "fraction", "" ...
    meaning: str
    higher_is_better: bool = False  # a rate, a fraction of a ceiling; every other metric: less is better
    per: Optional[str] = None  # a rate's counted thing: compare shows its inverse as "ms per <per>"
    inverse: Optional[tuple] = None  # compare's (unit, factor) for a rate's inverse where "ms per ..." reads badly
    generation: bool = False  # a generate run's figure (child/generation.py): history keeps each run's median
    speedup: bool = False  # aggregate.py's and history.py detect's --metric read a speedup on it by name
    short: Optional[str] = None  # its short name on those command lines
    progress: bool = False  # the sweep's progress line (runner/progress.py) and speedup table show its median
    in_record: bool = True  # False: a figure the tools compute from records (history's dashboard), never a key
    writer: str = "core"  # who writes it: core (the child), upstream (PyTorch/XLA's tools), feature:<name>
    record_type: str = "list"  # its JSON type in a record (config/record_key.py's TYPES): samples are a list

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


CATALOG: dict = {}


def declare(metric: Metric) -> Metric:
    """Declare a metric (a second declaration of a name replaces the first: a test's throwaway one)."""
    if metric.kind not in KINDS:
        raise ValueError(f"metric {metric.name}: kind {metric.kind!r} is none of {', '.join(KINDS)}")
    CATALOG[metric.name] = metric
    return metric


# The writers of metrics that not every config writes (a Metric's `writer`).
UPSTREAM, GENERATION, PROFILE = "upstream", "feature:generation", "feature:profile_cuda_cpu"


def _time(name: str, meaning: str, **more) -> Metric:
    return declare(Metric(name, TIME, "s", meaning, **more))


# Each timed run's figures (child/measured_loop.py), the harness's and upstream's names.
_time("total_time", "each timed run's wall time (its iterations_per_run iterations, closed by the device's sync)")
_time("per_iter_time", "total_time / iterations_per_run: the time per iteration every speedup is read on")
_time("warmup_time", "each warm-up run's time; the first holds the compilation")
_time("eager_total_time", "--speedup=paired: eager's timed run just before the backend's", writer="feature:speedup")
_time("eager_per_iter_time", "--speedup=paired: eager's time per iteration in that run", writer="feature:speedup")
_time("eager_warmup_time", "--speedup=paired: eager's warm-up runs in the backend's process",
      writer="feature:speedup")
_time("profiled_total_time", "--profile: each profiled run's wall time (beside the timed runs, never one of them)",
      writer=PROFILE)
_time("profiled_per_iter_time", "--profile: a profiled run's time per iteration", writer=PROFILE)
_time("trace_total_time", "PyTorch/XLA: each run's time tracing the lazy graph", writer=UPSTREAM)
_time("trace_per_iter_time", "PyTorch/XLA: the trace time per iteration", writer=UPSTREAM)
_time("total_cpu_time_s", "--profile-cpu: the profiler's CPU time of a run", writer=PROFILE)
_time("per_iter_cpu_time_s", "--profile-cpu: its CPU time per iteration", writer=PROFILE)
_time("total_cuda_time_s", "--profile-cpu on CUDA: the profiler's device time of a run", writer=PROFILE)
_time("per_iter_cuda_time_s", "its device time per iteration", writer=PROFILE)
_time("xla_CompileTime_time_s", "PyTorch/XLA's CompileTime metric over a run (upstream's figure)", writer=UPSTREAM)
_time("xla_ExecuteTime_time_s", "PyTorch/XLA's ExecuteTime metric over a run (upstream's figure)", writer=UPSTREAM)
declare(Metric("xla_CompileTime_number", COUNT, "", "how many XLA compilations the run did (upstream's figure)",
               writer=UPSTREAM))
declare(Metric("xla_ExecuteTime_number", COUNT, "", "how many XLA executions the run did (upstream's figure)",
               writer=UPSTREAM))
declare(Metric("minor_faults_per_iter", COUNT, "", "the process's minor page faults per iteration of a run"))
declare(Metric("dynamo_graph_count", COUNT, "", "dynamo's unique graphs after a run"))
declare(Metric("dynamo_graph_break_count", COUNT, "", "dynamo's graph breaks after a run"))
declare(Metric("dynamo_counters", COUNT, "", "upstream's dynamo counters after each run, by name", writer=UPSTREAM,
               record_type="object"))
declare(Metric("error", TEXT, "", "the failure in one line (upstream's place for it), `SKIP: ...` for a skip",
               record_type="text"))
# Memory (child/device_memory.py; metric_words.MEMORY reads the peaks).
declare(Metric("peak_memory_bytes", BYTES, "bytes", "each timed run's peak of the record's memory_kind"))
declare(Metric("peak_rss_bytes", BYTES, "bytes", "the host's peak resident set (older records' peak memory)"))
declare(Metric("process_rss_bytes", BYTES, "bytes", "the whole process's resident set after a run (the harness's)"))
# Work counted (microbench's FLOPs; the roofline's, results/roofline_figures.py).
declare(Metric("tflops", RATE, "TFLOP/s", "microbench: the operation's FLOPs per second", higher_is_better=True,
               per="TFLOP", progress=True))
declare(Metric("achieved_flops_per_second", RATE, "FLOP/s", "--roofline: each run's counted FLOPs per second",
               higher_is_better=True, inverse=("ms per GFLOP", 1e12)))
declare(Metric("fraction_of_attainable", RATIO, "fraction", "--roofline: each run's share of the roofline's time",
               higher_is_better=True, inverse=("x the roofline's time", 1.0)))
# GPU telemetry (child/gpu_telemetry.py): one value per timed run, where the GPU gives it.
declare(Metric("gpu_sm_clock_mhz", READING, "MHz", "the SM clock's mean over a run"))
declare(Metric("gpu_power_watts", READING, "W", "the board's power at a run's end"))
declare(Metric("gpu_temperature_c", READING, "C", "the GPU's temperature at a run's end"))
declare(Metric("gpu_throttled_seconds", READING, "s", "the time a run was held below its clocks (power, thermal)"))
declare(Metric("gpu_energy_joules", READING, "J", "the energy a run took"))
declare(Metric("gpu_mean_watts", READING, "W", "a run's energy over its time"))
declare(Metric("gpu_energy_joules_per_iteration", READING, "J", "a run's energy per iteration"))
declare(Metric("gpu_energy_joules_per_token", READING, "J", "a generate run's energy per new token",
               writer=GENERATION))
# The AOT precompile feature's (features/aot_precompile/child.py).
_time("aot_precompile_load_time", "--aot-precompile: seconds to load the precompiled step",
      writer="feature:aot_precompile")


def _generation(name: str, meaning: str, kind: str = TIME, unit: str = "s", speedup: bool = True, **more) -> Metric:
    return declare(Metric(name, kind, unit, meaning, generation=True, speedup=speedup, writer=GENERATION, **more))


# A generate run's figures (child/generation.py; docs/generation.md). Its whole generate time is also the record's
# total_time and per_iter_time, so `time` (and every speedup) is the harness's number. In --metric's order.
_generation("decode_tokens_per_second", "new tokens after the first per second of their decoding (more is better)",
            RATE, "tokens/s", higher_is_better=True, per="token", short="decode")
_generation("time_to_first_token", "the prefill: from the generate call to the first new token's logits (seconds)",
            short="ttft")
_generation("decode_per_token_time", "the median time of each new token after the first (seconds)")
_generation("decode_per_token_p90_time", "the 90th percentile of those (seconds)")
_generation("generate_time", "the whole generate call, closed by the device's sync (seconds)", speedup=False)
_generation("compile_time", "the first generate call beyond a steady one (seconds)", speedup=False)
# vLLM's and optimum-benchmark's per-token figures (docs/generation.md has each formula), with vLLM's short names
_generation("time_per_output_token",
            "TPOT: (the whole generate call - time to first token) / (new tokens - 1) (seconds)", short="tpot")
_generation("inter_token_latency_mean", "the mean time between consecutive new tokens of one call (seconds; the "
            "tools read its median over the calls, the pooled figures are mean_itl ... p99_itl)", short="itl")
_generation("inter_token_latency_p50", "their median (seconds)")
_generation("inter_token_latency_p90", "their 90th percentile (seconds)")
_generation("inter_token_latency_p95", "their 95th percentile (seconds)")
_generation("inter_token_latency_p99", "their 99th percentile (seconds)")
_generation("inter_token_latency_stdev", "their population standard deviation (seconds)")
_generation("inter_token_latency_cv", "their coefficient of variation: stdev / mean (a fraction; less is steadier)",
            RATIO, "fraction")
_generation("time_to_first_token_p50", "the median time to first token over the record's timed calls (seconds)")
_generation("time_to_first_token_p90", "its 90th percentile over the timed calls (seconds)")
_generation("time_to_first_token_p95", "its 95th percentile over the timed calls (seconds)")
_generation("time_to_first_token_p99", "its 99th percentile over the timed calls (seconds)")
# vLLM's inter-token latencies, by vLLM's names: every gap of every timed call pooled, then its statistic (one value,
# a record's); the inter_token_latency_* above are each call's own
_generation("mean_itl", "the mean time between consecutive new tokens, every gap of every timed call pooled "
            "(vLLM's mean_itl_ms, in seconds)")
_generation("std_itl", "their population standard deviation, pooled (vLLM's std_itl_ms, in seconds)")
_generation("median_itl", "their median, pooled (vLLM's median_itl_ms, in seconds)")
_generation("p90_itl", "their 90th percentile, pooled (vLLM's p90_itl_ms, in seconds)")
_generation("p95_itl", "their 95th percentile, pooled (vLLM's p95_itl_ms, in seconds)")
_generation("p99_itl", "their 99th percentile, pooled (vLLM's p99_itl_ms, in seconds)")
_generation("decode_bytes_per_second", "bytes per decoded token x decode tokens per second: gpt-fast's GB/s (more is "
            "better)", RATE, "bytes/s", higher_is_better=True)
_generation("decode_bandwidth_fraction", "decode bytes/s over the machine's measured memory bandwidth (more is better)",
            RATIO, "fraction", higher_is_better=True)


# The metric words every tool reads a record by (results/metric_words.py): computed from the record's metrics.
declare(Metric("time", TIME, "s", "the steady-state time per iteration of each timed run", in_record=False))
declare(Metric("compile", TIME, "s", "the first run's time, compilation included", in_record=False))
declare(Metric("memory", BYTES, "bytes", "the peak memory of each timed run", in_record=False))


def _dashboard(name: str, kind: str, unit: str, meaning: str, higher_is_better: bool) -> Metric:
    return declare(Metric(name, kind, unit, meaning, higher_is_better=higher_is_better, in_record=False))


# history's dashboard (history/site/dashboard_numbers.py): figures per line and run, computed from records.
_dashboard("pass_rate", RATIO, "%", "configs that passed / configs with a record that wasn't a skip", True)
_dashboard("speedup", RATIO, "x", "the geometric mean over passing configs of eager time / backend time", True)
_dashboard("compile_latency", TIME, "s", "the mean over passing configs of the first run's time", False)
_dashboard("compression", RATIO, "x", "the mean over passing configs of eager's peak memory / the backend's", True)
_dashboard("peak_memory", BYTES, "MiB", "the mean over passing configs of the backend's peak memory", False)


def get(name: str) -> Optional[Metric]:
    return CATALOG.get(name)


def higher_is_better(name: str) -> bool:
    """Whether more of `name` is better (a rate); an undeclared name is read as a time."""
    metric = CATALOG.get(name)
    return bool(metric and metric.higher_is_better)


def direction(name: str) -> str:
    """"higher is better" or "lower is better", as history's table, CSV and JSON say it."""
    return "higher is better" if higher_is_better(name) else "lower is better"


def generation_metrics() -> tuple:
    """A generate run's figures, in declaration order."""
    return tuple(name for name, metric in CATALOG.items() if metric.generation)


def speedup_metrics() -> tuple:
    """The metrics aggregate.py's and history.py detect's --metric take by name, in declaration order."""
    return tuple(name for name, metric in CATALOG.items() if metric.speedup)


def short_names() -> dict:
    """{short name: metric} for those command lines."""
    return {metric.short: name for name, metric in CATALOG.items() if metric.short}


def progress_metrics() -> tuple:
    return tuple(name for name, metric in CATALOG.items() if metric.progress)
