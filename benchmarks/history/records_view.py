"""What history reads from one record: its run, its config's labels, and its measurement.

The config's identity, labels, status and what it measured (its graph breaks too) come from the record's
Measurement (benchmarks/results/measurement.py: docs/measurement.md), so that history defines
none of them again; what is history's own stays here: the run's identity (timestamp, host, commit), the
record's digest and its verification code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Optional

from benchmarks.compare import metrics
from benchmarks.results import metric_words, roofline_figures
from benchmarks.results.measurement import Measurement


@dataclasses.dataclass(frozen=True)
class Labels:
    """The axes a config is selected and shown by, as the database keeps them (its `configs` columns). It
    has the label attributes the shared selection matches (benchmarks/results/selection.py)."""

    suite: str
    model: str
    backend: str  # Measurement.backend: upstream's name, +recipe, other axes in brackets (inductor[bf16])
    test: str
    precision: str
    accelerator: str
    accelerator_model: str
    batch_size: str

    @classmethod
    def of(cls, m: Measurement) -> "Labels":
        precision = m.axes.get("precision")
        return cls(suite=m.suite, model=m.model_name or "", backend=m.backend, test=m.test or "",
                   precision="" if precision is None else str(precision), accelerator=m.accelerator,
                   accelerator_model=m.accelerator_model,
                   batch_size="" if m.batch_size is None else str(m.batch_size))

    @property
    def model_name(self) -> str:
        return self.model

    @property
    def labels(self) -> dict:
        """The axes by name, None where a record has none (the shared selection's axis flags read these)."""
        return {name: value or None for name, value in dataclasses.asdict(self).items()}

    def text(self) -> str:
        # The backend label already names the precision and every other axis.
        return f"{self.suite}/{self.model} {self.backend} {self.test} bs={self.batch_size or '-'}"


@dataclasses.dataclass(frozen=True)
class ConfigLabels(Labels):
    """A stored config as the shared selection sees it: its label columns, and the value of every experiment axis
    its key names (the fingerprint leaves an axis at its default out, which the selection reads as the default), so
    that --channels-last, --compile-mode, ... select in history as in aggregate and compare."""

    axes: tuple = ()  # (key, value) of each experiment key of the config's fingerprint beyond the label columns

    @classmethod
    def of_config(cls, config: tuple) -> "ConfigLabels":
        """From database.configs' (id, key, labels)."""
        try:
            fingerprint, _ = json.loads(config[1])
            experiment = json.loads(fingerprint).get("experiment") or {}
        except (ValueError, TypeError, AttributeError):
            experiment = {}
        return cls(**config[2], axes=tuple(sorted((key, value) for key, value in experiment.items()
                                                  if isinstance(key, str) and key not in config[2])))

    @property
    def labels(self) -> dict:
        return {**super().labels, **dict(self.axes)}


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
    verification: str  # upstream's verification_code, as the record has it (shown, never judged by)
    accuracy: str  # the record's verdict (results/accuracy_status.py): what history's accuracy events read
    samples: Optional[list]  # per-iteration seconds, steady state (None: none usable)
    compile_s: Optional[float]
    peak_memory: Optional[float]  # bytes: the device's peak, else the host's (Measurement.peak_memory)
    graph_breaks: Optional[int]
    digest: str  # the record's identity: ingesting it again stores nothing
    torch: str = ""  # the torch it ran (environment.torch): its run's
    # A generate run's figures (metric_words.generation_figures): {metric: median over its timed runs}, and any
    # record's roofline fraction_of_attainable; None for a record without them (a failure, an older record)
    figures: Optional[dict] = None


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def view(record: dict, commit: Optional[str] = None) -> tuple:
    """(RecordView, None), or (None, why the record can't be placed in a history). `commit` overrides the
    record's own (environment.git_commit: the benchmark tool's), for CI that knows the code under test's."""
    m = Measurement(record)
    if m.config_key is None:
        return None, "no model or experiment"
    if m.timestamp is None:
        return None, "no timestamp"
    environment = record.get("environment") if isinstance(record.get("environment"), dict) else {}
    samples = compile_s = peak = figures = None
    if m.ok:
        # compare.py's samples of a process: steady state (upstream records: first sample left out), > 0.
        found, _ = metrics.metric_samples(m, metric_words.TIME)
        samples = None if found is None else [float(v) for v in found]
        compile_s, _ = metric_words.compile_seconds(m)  # the first run, compilation included, as compare's
        peak = m.peak_memory()  # the largest of metric_words.memory_samples: the device's peak, else the host's
        figures = metric_words.generation_figures(m)
        fraction = roofline_figures.fraction_of(record)  # the roofline's (docs/roofline.md): the config page's line
        if fraction is not None:
            figures = {**(figures or {}), roofline_figures.FRACTION: fraction}
    digest = hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()
    return RecordView(
        timestamp=m.timestamp, host=_text(environment.get("hostname")),
        commit=commit or _text(environment.get("git_commit")),
        # One series per config on one kind of machine: the accelerator model is part of it.
        config_key=json.dumps([m.config_key, m.accelerator_model]), labels=Labels.of(m), round=m.round,
        status=m.status, verification=_text(record.get("verification_code")), accuracy=m.accuracy, samples=samples,
        compile_s=compile_s, peak_memory=peak, graph_breaks=m.dynamo_stat("graph_breaks"), digest=digest,
        torch=_text(environment.get("torch")), figures=figures), None
