"""A config's history: one point per run (its records pooled: one per --rounds round), oldest first."""

from __future__ import annotations

import dataclasses
import json
import statistics
from datetime import datetime, timezone
from typing import Optional

from benchmarks.history import database, records_view
from benchmarks.results import accuracy_status, metric_catalog, records
from benchmarks.results.records import RecordStatus, VerificationCode


@dataclasses.dataclass
class Point:
    """One config in one run."""

    run_id: int
    timestamp: float
    host: str
    commit: str
    status: str  # ok when every record of the run is; else the first failure's status
    verification: str  # upstream's verification code (shown): a FAIL in any round, else the first record's
    accuracy: Optional[str]  # the run's verdict: the first round's that isn't a pass, else the first's (events.py)
    processes: list  # per record (process): its per-iteration samples, seconds
    compile_s: Optional[float]
    peak_memory: Optional[float]
    graph_breaks: Optional[int]
    # A generate run's figures (records_view.RecordView.figures): per metric, the median over the run's rounds of
    # each round's median; empty for a forward model's run or one without a passing round
    figures: dict = dataclasses.field(default_factory=dict)

    @property
    def median(self) -> Optional[float]:
        """The per-iteration median over the run's pooled samples (None: nothing measured)."""
        pooled = [value for process in self.processes for value in process]
        return statistics.median(pooled) if pooled else None

    def when(self) -> str:
        return datetime.fromtimestamp(self.timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")

    def run_text(self) -> str:
        commit = f" {self.commit[:10]}" if self.commit else ""
        return f"{self.when()}{commit}"


@dataclasses.dataclass
class Series:
    config_id: int
    key: str
    labels: dict
    points: list

    @property
    def label(self) -> str:
        return records_view.Labels(**self.labels).text()

    def measured(self) -> list:
        """The points with samples: the numeric series change points are found in."""
        return [point for point in self.points if point.processes]


def on_figure(one: Series, metric: str) -> Series:
    """The series measured by a generate figure instead of the per-iteration time (history detect --metric): each
    run's figure is its one value, a rate by its inverse so that a larger value is still worse; a run without it is
    not measured."""
    points = []
    for point in one.points:
        value = point.figures.get(metric)
        if value is not None and value > 0 and metric_catalog.higher_is_better(metric):
            value = 1 / value
        points.append(dataclasses.replace(point, processes=[[value]] if value is not None and value > 0 else []))
    return dataclasses.replace(one, points=points)


def _point(rows: list) -> Point:
    failed = [row["status"] for row in rows if row["status"] in records.FAILED_STATUSES]
    codes = [row["verification"] for row in rows if row["verification"]]
    status = failed[0] if failed else (RecordStatus.SKIP if all(r["status"] == RecordStatus.SKIP for r in rows)
                                       else RecordStatus.OK)
    # The run's verification: a FAIL in any round is a FAIL; else the first record's code.
    verification = VerificationCode.FAIL if VerificationCode.FAIL in codes else (codes[0] if codes else "")
    verdicts = [verdict(row) for row in rows]
    compiles = [row["compile_s"] for row in rows if row["compile_s"] is not None]
    peaks = [row["peak_memory"] for row in rows if row["peak_memory"] is not None]
    breaks = [row["graph_breaks"] for row in rows if row["graph_breaks"] is not None]
    first = rows[0]
    return Point(run_id=first["id"], timestamp=first["timestamp"], host=first["host"], commit=first["commit_sha"],
                 status=status, verification=verification, accuracy=accuracy_status.first_not_passing(verdicts),
                 processes=[json.loads(row["samples"]) for row in rows
                            if row["samples"] and row["status"] == RecordStatus.OK],
                 compile_s=statistics.median(compiles) if compiles else None, peak_memory=max(peaks) if peaks else None,
                 graph_breaks=max(breaks) if breaks else None, figures=_figures(rows))


def _figures(rows: list) -> dict:
    """The run's generation figures: per metric, the median over its passing rounds that have it."""
    by_metric: dict = {}
    for row in rows:
        if row.get("figures") and row["status"] == RecordStatus.OK:
            for metric, value in json.loads(row["figures"]).items():
                by_metric.setdefault(metric, []).append(value)
    return {metric: statistics.median(values) for metric, values in by_metric.items()}


def verdict(row: dict) -> str:
    """A measurement's verdict: stored, or (a row ingested before the column existed) derived as for any record."""
    return row.get("accuracy") or accuracy_status.derive({"status": row["status"],
                                                          "verification_code": row["verification"] or None})


def load(connection, configs: list) -> list:
    """The Series of the given (id, key, labels) configs."""
    out = []
    for config, key, labels in configs:
        by_run: dict = {}
        for row in database.measurements(connection, config):
            by_run.setdefault(row["id"], []).append(row)
        out.append(Series(config, key, labels, [_point(rows) for rows in by_run.values()]))
    return out
