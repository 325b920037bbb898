"""What history reads from one record: its run, its config's labels, and its measurement.

One small view built on what the other tools define (compare's samples with the warm-up rule and config
key, aggregate's backend names, the record's status), so that history computes none of it again. When
the shared measurement type exists (docs/architecture.md), `view` is the one function to point at it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from typing import Optional

from benchmarks.common import experiment_config, records
from benchmarks.compare import matching, metrics


@dataclasses.dataclass(frozen=True)
class Labels:
    """The axes a config is selected and shown by."""

    suite: str
    model: str
    backend: str
    test: str
    precision: str
    accelerator: str
    accelerator_model: str
    batch_size: str

    def text(self) -> str:
        extra = f" {self.precision}" if self.precision else ""
        return f"{self.suite}/{self.model} {self.backend} {self.test}{extra} bs={self.batch_size or '-'}"


@dataclasses.dataclass(frozen=True)
class RecordView:
    """One record, placed: its run (timestamp, host, commit), its config, and what it measured."""

    timestamp: float
    host: str
    commit: str
    config_key: str
    labels: Labels
    round: int
    status: str
    verification: str
    samples: Optional[list]  # per-iteration seconds, steady state (None: none usable)
    compile_s: Optional[float]
    peak_rss: Optional[float]
    graph_breaks: Optional[int]
    digest: str  # the record's identity: ingesting it again stores nothing


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _backend(experiment: dict) -> str:
    """aggregate.py's backend name (a quantized model is its own backend, as there)."""
    parse = lambda value: experiment_config.parse_none(value) if isinstance(value, str) else None  # noqa: E731
    name = experiment_config.backend_name(parse(experiment.get("xla")), parse(experiment.get("dynamo")))
    recipe = parse(experiment.get("quantization"))
    return f"{name}+{recipe}" if recipe else name


def _graph_breaks(record_metrics: dict) -> Optional[int]:
    """Ours: metrics.dynamo_graph_break_count (per repeat); upstream's: metrics.dynamo_counters.graph_break."""
    ours = record_metrics.get("dynamo_graph_break_count")
    if isinstance(ours, list) and ours and all(isinstance(v, (int, float)) for v in ours):
        return int(max(ours))
    counters = record_metrics.get("dynamo_counters")
    if isinstance(counters, dict) and isinstance(counters.get("graph_break"), dict):
        return int(sum(v for v in counters["graph_break"].values() if isinstance(v, (int, float))))
    return None


def _first(values) -> Optional[float]:
    return float(values[0]) if values is not None and len(values) else None


def view(record: dict, commit: Optional[str] = None) -> tuple:
    """(RecordView, None), or (None, why the record can't be placed in a history). `commit` overrides the
    record's own (environment.git_commit: the benchmark tool's), for CI that knows the code under test's."""
    key = matching.config_key(record)
    if key is None:
        return None, "no model or experiment"
    timestamp = record.get("timestamp")
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)) or not math.isfinite(timestamp):
        return None, "no timestamp"
    model, experiment = record["model"], record["experiment"]
    environment = record.get("environment") if isinstance(record.get("environment"), dict) else {}
    record_metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    labels = Labels(
        suite=_text(model.get("suite_name")), model=_text(model.get("model_name")), backend=_backend(experiment),
        test=_text(experiment.get("test")), precision=_text(experiment.get("precision")),
        accelerator=_text(experiment.get("accelerator")).lower(),
        accelerator_model=_text(experiment.get("accelerator_model")) or "unknown",
        batch_size="" if experiment.get("batch_size") is None else str(experiment.get("batch_size")))
    status = records.record_status(record)
    samples = compile_s = peak = None
    if status == records.STATUS_OK:
        found, _ = metrics.record_samples(record, "time")
        samples = None if found is None else [float(v) for v in found]
        compile_s = _first(metrics.record_samples(record, "compile")[0])
        memory, _ = metrics.record_samples(record, "memory")
        peak = float(max(memory)) if memory is not None else None
    digest = hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()
    return RecordView(
        timestamp=float(timestamp), host=_text(environment.get("hostname")),
        commit=commit or _text(environment.get("git_commit")),
        # One series per config on one kind of machine: the accelerator model is part of it.
        config_key=json.dumps([key, labels.accelerator_model]), labels=labels, round=records.record_round(record),
        status=status, verification=_text(record.get("verification_code")), samples=samples, compile_s=compile_s,
        peak_rss=peak, graph_breaks=_graph_breaks(record_metrics), digest=digest), None
