"""One record, read: a typed, read-only view that every tool measures through (definitions once).

The config's identity and labels (suite, model, accelerator, backend, test, batch size and every other
experiment axis), its status, run and round, and what it measured: a metric's samples under a named
warm-up policy, the per-iteration time, the compile time (one definition, with upstream's named
alternatives for records that have no warm-up), the first run's time, the peak memory and, for --speedup=paired
records, the per-pair speedups. The rules and
why: docs/measurement.md. numpy (through `stats`), never torch.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Optional

import numpy as np

from benchmarks import features
from benchmarks.config import experiment_config
from benchmarks.config.axes import AXES, at_default, label_text
from benchmarks.results import accuracy_status, records, stats

TOTAL_TIME, PER_ITER_TIME, WARMUP_TIME = "total_time", "per_iter_time", "warmup_time"
# The host's resident set at its peak (the whole process): older records' only memory figure.
HOST_PEAK_RSS = "peak_rss_bytes"
# The device's own peak (CUDA allocator, XLA runtime, CPU resident above the pre-model baseline); its kind is
# the record's `memory_kind`. Older records have only the host's resident set (HOST_PEAK_RSS).
DEVICE_PEAK_MEMORY = "peak_memory_bytes"
# --aot-precompile's metric: the seconds its artifact took to load (metric_catalog.py: written by the feature).
AOT_LOAD_TIME = "aot_precompile_load_time"
# Upstream's obsolete experiment key (always "run_all"): never part of a config.
NOT_CONFIG = ("experiment_name",)
# Keys the labels name on their own (the rest of upstream's keys are variants of one backend).
_LABELLED = ("accelerator", "accelerator_model", "xla", "dynamo", "torch_xla2", "test", "batch_size")
# The value a record without an axis's key ran, where it is not null (config/axes.py: each axis's `default`).
AXIS_DEFAULTS: dict = dict(experiment_config.AXIS_DEFAULTS)
# Axes shown as backend+value (quantization's "+recipe" label, older than the brackets): config/axes.py.
_PLUS_AXES = tuple(axis.key for axis in AXES if axis.label_plus)


@dataclasses.dataclass(frozen=True)
class WarmupPolicy:
    """Which leading timed samples hold warm-up and are left out: `ours` for records that kept their
    warm-up apart (`warmup`, `metrics.warmup_time`), `upstream` for records without (their first samples
    hold compilation)."""

    name: str
    upstream: int
    ours: int = 0

    def skip(self, measurement: "Measurement") -> int:
        return self.ours if measurement.has_warmup else self.upstream


# Upstream result_analyzer.py: the first sample holds compilation (the analyzer, compare, the OSS rows).
FIRST_SAMPLE = WarmupPolicy("upstream records: first sample skipped", 1)
# Upstream aggregate.py: the first three (compilation, then caches warming up; pytorch/xla#6210).
FIRST_THREE = WarmupPolicy("upstream records: first 3 samples skipped", 3)
# Every sample (memory, counters: not times that warm-up inflates).
EVERY_SAMPLE = WarmupPolicy("every sample", 0)


def skip_exactly(count: int) -> WarmupPolicy:
    """--skip-samples N: the first N samples of every record, ours too."""
    return WarmupPolicy(f"first {count} samples skipped", count, count)




def _text(value) -> Optional[str]:
    return experiment_config.parse_none(value) if isinstance(value, str) else None


def _int(value) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value) -> Optional[float]:
    """A finite number as a float, else None (a bool is not a number here)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class Measurement:
    """A read-only view of one record (a dict as read from a results file; never changed)."""

    __slots__ = ("record", "model", "experiment", "metrics", "__dict__")

    def __init__(self, record: dict):
        self.record = record
        model, experiment, metrics = record.get("model"), record.get("experiment"), record.get("metrics")
        self.model = model if isinstance(model, dict) else {}
        self.experiment = experiment if isinstance(experiment, dict) else {}
        self.metrics = metrics if isinstance(metrics, dict) else {}

    # ---------------------------------------------------------------- identity and labels

    @property
    def placeable(self) -> bool:
        """Whether the record names a model and an experiment config."""
        return isinstance(self.record.get("model"), dict) and isinstance(self.record.get("experiment"), dict)

    @property
    def suite(self) -> str:
        return str(self.model.get("suite_name") or "")

    @property
    def model_name(self) -> Optional[str]:
        name = self.model.get("model_name")
        return name if isinstance(name, str) and name else None

    @property
    def accelerator(self) -> str:
        return str(self.experiment.get("accelerator") or "").lower()

    @property
    def accelerator_model(self) -> str:
        return str(self.experiment.get("accelerator_model") or "unknown")

    @property
    def test(self) -> Optional[str]:
        test = self.experiment.get("test")
        return test if isinstance(test, str) and test else None

    @property
    def batch_size(self):
        """The real batch size (an int, upstream's text, or None)."""
        value = self.experiment.get("batch_size")
        return None if isinstance(value, bool) or not isinstance(value, (int, str, type(None))) else value

    @property
    def base_backend(self) -> str:
        """The backend as upstream names it (eager, inductor, openxla+dynamo, ...); torch_xla2+X for torch_xla2."""
        torch_xla2 = _text(self.experiment.get("torch_xla2"))
        if torch_xla2:
            return f"torch_xla2+{torch_xla2}"  # upstream would call these eager
        return experiment_config.backend_name(_text(self.experiment.get("xla")), _text(self.experiment.get("dynamo")))

    @property
    def axes(self) -> dict:
        """Our experiment axes beyond upstream's nine that are not at their default, by key."""
        out = {}
        for key in sorted(self.experiment):
            if key in experiment_config.EXPERIMENT_KEYS or key in NOT_CONFIG:
                continue
            value = self.experiment[key]
            value = _text(value) if isinstance(value, str) else value
            if at_default(key, value):
                continue
            out[key] = value
        if self.cudagraphs:  # not a key of its own: what the config's keys (or the child) say of Inductor's graphs
            out = dict(sorted({**out, "cudagraphs": True}.items()))
        return out

    @property
    def cudagraphs(self) -> bool:
        """Whether the config ran Inductor with CUDA graphs: the record's own word (`cudagraphs`, the child's), else
        what its keys imply (a feature's hook `runs_cudagraphs`, the CUDA profile's: plain inductor on CUDA runs
        without them)."""
        fact = self.record.get("cudagraphs")
        if isinstance(fact, bool):
            return fact
        return any(runs(self.model, self.experiment) for runs in features.declared("runs_cudagraphs"))

    @property
    def backend(self) -> str:
        """The backend label: upstream's name, "+recipe" for quantization, then the other axes in brackets:
        eager, inductor+int8wo, inductor[max-autotune,bf16]."""
        return self.backend_label()

    def backend_label(self, omit=(), base: Optional[str] = None) -> str:
        """`backend` without the axes in `omit` (a table whose every row shares them), on `base` if given (the
        eager label that matches this config)."""
        axes = {k: v for k, v in self.axes.items() if k not in omit}
        label = (base or self.base_backend) + "".join(f"+{axes[k]}" for k in _PLUS_AXES if k in axes)
        others = [label_text(k, v) for k, v in axes.items() if k not in _PLUS_AXES]
        return label + (f"[{','.join(others)}]" if others else "")

    @property
    def labels(self) -> dict:
        """What tells this config from others, for people: suite, model, accelerator, backend, test, batch
        size, and every axis."""
        return dict({"suite": self.suite, "model": self.model_name, "accelerator": self.accelerator,
                     "accelerator_model": self.accelerator_model, "backend": self.backend, "test": self.test,
                     "batch_size": self.batch_size}, **self.axes)

    @property
    def variant(self) -> str:
        """The config's keys the labels leave out (xla_flags, functionalization on): two records with one
        label and different variants measure different configs."""
        variant = {k: v for k, v in self.experiment.items()
                   if k not in _LABELLED and k not in NOT_CONFIG and k not in experiment_config.OWN_KEYS
                   and k in experiment_config.EXPERIMENT_KEYS}
        if variant.get("enable_functionalization") is False:
            del variant["enable_functionalization"]
        return json.dumps({k: v for k, v in variant.items() if v is not None}, sort_keys=True, default=str)

    @property
    def config_key(self) -> Optional[str]:
        """The real config's identity (the resume fingerprint on the real batch size, without the round,
        accelerator_model, environment or timestamp), or None for a record that names no model."""
        if not self.placeable or not self.model.get("model_name"):
            return None
        experiment = {k: v for k, v in self.experiment.items() if k not in NOT_CONFIG}
        return records.fingerprint(self.model, experiment, experiment.get("batch_size"), False)

    # ---------------------------------------------------------------- the run

    @property
    def status(self) -> str:
        return records.record_status(self.record)

    @property
    def ok(self) -> bool:
        return self.status == records.RecordStatus.OK

    @property
    def accuracy(self) -> str:
        """The harness's accuracy status (`accuracy_status`): the record's own, or derived for older records."""
        return accuracy_status.derive(self.record)

    @property
    def timestamp(self) -> Optional[float]:
        """The sweep's start (seconds), or None when missing or not a finite number."""
        value = self.record.get("timestamp")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        return float(value)

    @property
    def round(self) -> int:
        return records.record_round(self.record)

    @property
    def iterations(self) -> int:
        """Iterations per timed run (1 when missing or not a positive integer)."""
        value = _int(self.record.get("iterations_per_run"))
        return value if value and value > 1 else 1

    @property
    def has_warmup(self) -> bool:
        """Ours: warm-up recorded apart, so every timed sample is steady state."""
        return stats.has_warmup(self.record)

    # ---------------------------------------------------------------- what it measured

    def raw(self, metric: str) -> Optional[np.ndarray]:
        """Every sample of a metric as float64, or None when it is not a list of numbers."""
        return stats.samples(self.metrics.get(metric))

    def why_none(self, metric: str) -> str:
        """Why raw(metric) is None: 'no X', 'X is null', 'X is empty', 'X is not a list of numbers'."""
        if metric not in self.metrics:
            return f"no {metric}"
        value = self.metrics[metric]
        if value is None:
            return f"{metric} is null"
        return f"{metric} is empty" if value == [] else f"{metric} is not a list of numbers"

    def samples(self, metric: str, policy: WarmupPolicy = FIRST_SAMPLE) -> Optional[np.ndarray]:
        """A metric's steady-state samples: the raw ones minus the warm-up the policy names; None when it
        has none, or when every sample is warm-up."""
        return self._steady(self.raw(metric), policy)

    def _steady(self, values: Optional[np.ndarray], policy: WarmupPolicy) -> Optional[np.ndarray]:
        if values is None:
            return None
        skip = policy.skip(self)
        return values[skip:] if skip < len(values) else None

    def median(self, metric: str, policy: WarmupPolicy = FIRST_SAMPLE) -> Optional[float]:
        """The median of a named metric over the record's timed runs (its finite steady-state samples under the
        policy), or None when it has none: one figure of a metric any tool reads by name (time to first token,
        decode tokens per second: results/metric_words.py)."""
        values = self.samples(metric, policy)
        values = None if values is None else values[np.isfinite(values)]
        return float(np.median(values)) if values is not None and len(values) else None

    def per_iteration_raw(self) -> Optional[np.ndarray]:
        """Every timed run's time per iteration: `per_iter_time`, else `total_time` / iterations_per_run."""
        values = self.raw(PER_ITER_TIME)
        if values is not None:
            return values
        total = self.raw(TOTAL_TIME)
        return total / self.iterations if total is not None and self.iterations > 1 else total

    def per_iter_time(self, policy: WarmupPolicy = FIRST_SAMPLE) -> Optional[np.ndarray]:
        """The steady-state per-iteration times (seconds)."""
        return self._steady(self.per_iteration_raw(), policy)

    def compile_time(self) -> Optional[float]:
        """Seconds the first run took beyond a steady one, the analyzer's `compile_time` column (not the metric
        word `compile`, which is first_run_time): first warm-up run - median timed run; for records without
        warm-up, upstream result_analyzer.py's max(total_time) - median(total_time). None without total_time."""
        return stats.compile_time(self.record, self.raw(TOTAL_TIME))

    def first_run_time(self) -> Optional[float]:
        """The first run's time, compilation included (what a user waits): our first warm-up run, upstream's
        first timed run."""
        values = self.raw(WARMUP_TIME)
        values = values if values is not None else self.raw(TOTAL_TIME)
        return None if values is None else float(values[0])

    def warm_start(self) -> Optional[tuple]:
        """--compile-cache=warm-start: (the cold child's first run, the warm child's: seconds, compilation included)
        from the record's `warm_start`, or None where it has not both (another cache, a failed half, an older
        record)."""
        found = self.record.get("warm_start")
        if not isinstance(found, dict):
            return None
        cold, warm = (_number(found.get(k)) for k in ("cold_first_run_seconds", "warm_first_run_seconds"))
        return None if cold is None or warm is None else (cold, warm)

    def aot_load_time(self) -> Optional[float]:
        """--aot-precompile: the seconds the precompiled artifact took to load (the metric
        `aot_precompile_load_time`), or None for a record without it."""
        values = self.raw(AOT_LOAD_TIME)
        values = None if values is None else values[np.isfinite(values)]
        return float(values.mean()) if values is not None and len(values) else None

    def peak_memory_samples(self) -> Optional[np.ndarray]:
        """Each timed run's peak memory (bytes): the device's (`peak_memory_bytes`), else, for records without
        it, the host's resident set (`peak_rss_bytes`); None with neither. The metric word `memory`
        (results/metric_words.py)."""
        values = self.raw(DEVICE_PEAK_MEMORY)
        return values if values is not None else self.raw(HOST_PEAK_RSS)

    def peak_memory(self) -> Optional[float]:
        """Peak memory (bytes): the largest finite sample of peak_memory_samples."""
        values = self.peak_memory_samples()
        values = None if values is None else values[np.isfinite(values)]
        return float(values.max()) if values is not None and len(values) else None

    def dynamo_stat(self, name: str) -> Optional[int]:
        """One of dynamo's statistics (`dynamo_stats`: graphs, graph_breaks, unique_graph_breaks, recompiles,
        ...), or None for a record without them (not a dynamo config). Records written before `dynamo_stats`
        existed still say their graph breaks: ours per timed run (`metrics.dynamo_graph_break_count`, the
        largest), upstream's in `metrics.dynamo_counters.graph_break` (summed, as dynamo_stats sums them)."""
        found = self.record.get("dynamo_stats")
        if isinstance(found, dict):
            return _int(found.get(name))
        return self._older_graph_breaks() if name == "graph_breaks" else None

    def _older_graph_breaks(self) -> Optional[int]:
        ours = self.raw("dynamo_graph_break_count")
        if ours is not None:
            ours = ours[np.isfinite(ours)]
            return int(ours.max()) if len(ours) else None
        counters = self.metrics.get("dynamo_counters")
        breaks = counters.get("graph_break") if isinstance(counters, dict) else None
        if not isinstance(breaks, dict):
            return None
        return int(sum(v for v in breaks.values() if isinstance(v, (int, float)) and math.isfinite(v)))

    def paired_ratios(self) -> Optional[np.ndarray]:
        """--speedup=paired: eager time / backend time of each pair of alternating runs in this process (the
        record's `paired_speedup.ratios`, positive and finite), or None for a record without them (an isolated
        run, eager, a failure, an older record). Every pair counts: both series come after warm-up."""
        found = self.record.get("paired_speedup")
        values = stats.samples(found.get("ratios")) if isinstance(found, dict) else None
        if values is None:
            return None
        values = values[np.isfinite(values) & (values > 0)]
        return values if len(values) else None

    def paired_speedup(self) -> Optional[dict]:
        """The record's `paired_speedup` summary (median of the pair ratios, its interval, the harness's ratio of
        medians, both medians) when it has pair ratios, else None."""
        return self.record["paired_speedup"] if self.paired_ratios() is not None else None

    def summary(self, metric: str, policy: WarmupPolicy = FIRST_SAMPLE) -> Optional[dict]:
        """result_analyzer.py's statistics of a metric: min/median/max of every sample, mean/std (ddof 0) of
        the steady ones (keeping the last sample when the policy would leave none, so a column is never
        empty)."""
        values = self.raw(metric)
        if values is None:
            return None
        skip = policy.skip(self)
        return stats.summary(values, values[min(skip, len(values) - 1):])
