"""The history as a grid for the site: runs (oldest first) x configs, one cell per config and run, read in one
pass over the measurements table (a year of nightly runs of 3,000 configs is about 1M rows).

A cell pools a run's records of a config (its --rounds): the mean of their per-iteration medians and of their
first runs (compilation included), the largest peak memory and graph breaks, and for a model run by generate the mean
of each generation figure (time to first token, decode tokens per second, ...); it failed when any record did.
Each config knows its eager baseline (against_eager.baseline_key: the same machine, suite, model, test, batch
size and axes but torch.compile's own), as aggregate's dashboard pairs them.
"""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import datetime, timezone
from typing import Optional

import numpy as np

from benchmarks.history import series
from benchmarks.results import accuracy_status, against_eager, records
from benchmarks.results.measurement import Measurement

# Cell status codes (the `status` array).
MISSING, OK, SKIPPED, FAILED = 0, 1, 2, 3


@dataclasses.dataclass(frozen=True)
class Run:
    id: int
    timestamp: float
    host: str
    commit: str
    torch: Optional[str] = None  # the torch its records ran (None: not known, a run stored before schema 3)

    @property
    def date(self) -> str:
        return datetime.fromtimestamp(self.timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M")

    def text(self) -> str:
        return (f"{self.date}{' ' + self.commit[:10] if self.commit else ''}"
                f"{' torch ' + self.torch if self.torch else ''}")


@dataclasses.dataclass
class Config:
    id: int
    column: int
    key: str
    labels: dict  # the configs table's label columns
    base_backend: str
    baseline_key: str
    experiment: dict  # the record's experiment (as its config key keeps it), for the log path and bisect's flags
    model: dict
    eager: Optional[int] = None  # the column of its eager baseline (None: none, or it is one)

    @property
    def line(self) -> tuple:
        """The summary line it belongs to: suite, backend label, test, accelerator model."""
        return (self.labels["suite"] or "", self.labels["backend"] or "", self.labels["test"] or "",
                self.labels["accelerator_model"] or "")

    @property
    def name(self) -> str:
        batch = self.labels["batch_size"]
        return f"{self.labels['model']}" + (f" bs={batch}" if batch else "")


@dataclasses.dataclass
class Grid:
    runs: list  # Run, oldest first
    configs: list  # Config, by column
    status: np.ndarray  # (runs, configs) int8: MISSING, OK, SKIPPED, FAILED
    passed: np.ndarray  # (runs, configs) bool: ran, and no accuracy failure
    unchecked: np.ndarray  # (runs, configs) bool: ran, and no record of it was checked (not_checked: no --verify)
    median: np.ndarray  # (runs, configs) seconds per iteration, nan: none
    first_run: np.ndarray  # seconds, compilation included
    peak: np.ndarray  # bytes
    breaks: np.ndarray  # graph breaks, nan: none
    failures: dict  # (row, column) -> the failed status text (error, timeout, ...) or accuracy status
    source_names: list  # the results files the records came from
    source: np.ndarray  # (runs, configs) int32: index into source_names of a record of the cell, -1: none
    # A generate run's figures (metric_catalog.generation_metrics()): metric -> (runs, configs), nan: none; only the
    # metrics some record has
    figures: dict = dataclasses.field(default_factory=dict)

    def source_of(self, row: int, column: int) -> Optional[str]:
        index = int(self.source[row, column])
        return self.source_names[index] or None if index >= 0 else None

    def row_of(self, run_id: int) -> int:
        return next(i for i, run in enumerate(self.runs) if run.id == run_id)


def _config(column: int, config_id: int, key: str, labels: dict) -> Config:
    try:
        fingerprint, accelerator_model = json.loads(key)
        parts = json.loads(fingerprint)
        model, experiment = dict(parts.get("model") or {}), dict(parts.get("experiment") or {})
    except (ValueError, TypeError, AttributeError):
        model, experiment, accelerator_model = {}, {}, labels.get("accelerator_model")
    experiment["accelerator_model"] = accelerator_model
    m = Measurement({"model": model, "experiment": experiment})
    return Config(config_id, column, key, labels, m.base_backend, against_eager.baseline_key(m), experiment, model)


def _verdict(status: str, accuracy: Optional[str], verification: Optional[str]) -> str:
    """A measurement's one verdict (series.verdict: stored, or derived for a row ingested before the column)."""
    return accuracy or series.verdict({"status": status, "accuracy": None, "verification": verification})


def load(connection) -> Grid:
    from benchmarks.history import database

    runs = [Run(*row) for row in connection.execute(
        f"SELECT id, timestamp, host, commit_sha, torch FROM runs r WHERE {database.SHOWN_RUNS} ORDER BY timestamp, id")]
    row_of = {run.id: row for row, run in enumerate(runs)}
    configs = [_config(column, config_id, key, labels)
               for column, (config_id, key, labels) in enumerate(database.configs(connection))]
    column_of = {c.id: c.column for c in configs}
    eager = {c.baseline_key: c.column for c in configs if c.base_backend == against_eager.EAGER}
    for c in configs:
        if c.base_backend != against_eager.EAGER:
            c.eager = eager.get(c.baseline_key)
    shape = (len(runs), len(configs))
    rows = connection.execute("SELECT run_id, config_id, status, accuracy, verification, median_s, compile_s, "
                              "peak_memory, graph_breaks, source, figures FROM measurements m JOIN runs r ON "
                              f"r.id = m.run_id WHERE {database.SHOWN_RUNS}").fetchall()
    columns = list(zip(*rows)) or [()] * 11
    del rows
    r = np.fromiter((row_of[x] for x in columns[0]), np.int64, len(columns[0]))
    c = np.fromiter((column_of[x] for x in columns[1]), np.int64, len(columns[1]))
    codes = {records.RecordStatus.OK: OK, records.RecordStatus.SKIP: SKIPPED}
    code = np.fromiter((codes.get(x, FAILED) for x in columns[2]), np.int8, len(columns[2]))
    verdicts = [_verdict(*x) for x in zip(columns[2], columns[3], columns[4])]
    # Ran, and its verdict is no failure: a config run without --verify (not_checked) passes by running.
    ok = np.fromiter((state == records.RecordStatus.OK and not accuracy_status.failed(verdict)
                      for state, verdict in zip(columns[2], verdicts)), bool, len(verdicts))
    status = np.zeros(shape, np.int8)
    np.maximum.at(status, (r, c), code)  # a failure in any round fails the run
    passed = np.ones(shape, bool)
    np.logical_and.at(passed, (r, c), ok)
    passed &= status != MISSING
    # Ran without --verify: no judgement either way ("not checked", as aggregate says), never a pass.
    unchecked = np.ones(shape, bool)
    np.logical_and.at(unchecked, (r, c), np.fromiter((verdict == accuracy_status.AccuracyStatus.NOT_CHECKED
                                                      for verdict in verdicts), bool, len(verdicts)))
    unchecked &= passed

    def mean(values) -> np.ndarray:  # the mean over a cell's records (rounds) that have the value
        values = np.asarray(values, dtype=np.float64)
        have = ~np.isnan(values)
        total, count = np.zeros(shape), np.zeros(shape)
        np.add.at(total, (r[have], c[have]), values[have])
        np.add.at(count, (r[have], c[have]), 1)
        with np.errstate(invalid="ignore"):
            return total / count

    def largest(values) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        out = np.full(shape, np.nan)
        have = ~np.isnan(values)
        np.fmax.at(out, (r[have], c[have]), values[have])
        return out

    failures: dict = {}
    for i in np.flatnonzero(~ok):
        state = columns[2][i]
        if state == records.RecordStatus.SKIP:
            continue
        failures.setdefault((int(r[i]), int(c[i])), state if state != records.RecordStatus.OK else verdicts[i])
    names: dict = {}
    source = np.full(shape, -1, np.int32)
    source[r, c] = np.fromiter((names.setdefault(x or "", len(names)) for x in columns[9]), np.int32, len(r))
    return Grid(runs, configs, status, passed, unchecked, mean(columns[5]), mean(columns[6]), largest(columns[7]),
                largest(columns[8]), failures, list(names), source, _figures(columns[10], code, mean))


def _figures(texts, code: np.ndarray, mean) -> dict:
    """metric -> the cells' mean over their passing records of each generation figure (JSON, null for most rows)."""
    by_metric: dict = {}
    for i, text in enumerate(texts):
        if text and code[i] == OK:
            for metric, value in json.loads(text).items():
                by_metric.setdefault(metric, {})[i] = value
    out = {}
    for metric, found in by_metric.items():
        values = np.full(len(texts), np.nan)
        values[np.fromiter(found, np.int64, len(found))] = np.fromiter(found.values(), np.float64, len(found))
        out[metric] = mean(values)
    return out


def log_path(config: Config, source: str) -> Optional[str]:
    """The config's log beside the results file `source` (safe_paths.log_path), or None when not there."""
    from benchmarks.config.experiment_config import ConfigError, ExperimentConfig
    from benchmarks.plumbing import safe_paths

    try:
        experiment = ExperimentConfig.from_dict(config.experiment)
        path = safe_paths.log_path(os.path.dirname(source), config.model, experiment)
    except (ConfigError, TypeError, ValueError, KeyError):
        return None
    return path if os.path.isfile(path) else None
