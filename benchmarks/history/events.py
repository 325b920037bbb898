"""Pass and accuracy changes between consecutive runs of a config: events beside the timing changes (their words:
results/change_words.py, HISTORY_EVENTS).

new-failure      the config ran (status ok) in the previous run and failed (error, timeout, crash, oom)
fixed            the other way round
accuracy-failure its verdict (`accuracy`: --verify's status, or the golden check's failure) passed and now doesn't
                 (results/accuracy_status.became_failing, the rule of compare's accuracy gate: a run that now
                 crashes is a new-failure and an accuracy-failure, as compare's gates say)
accuracy-fixed   its verdict failed and now passes
graph-breaks     dynamo reported more graph breaks than in the previous run
"""

from __future__ import annotations

import dataclasses

from benchmarks.results import accuracy_status, records
from benchmarks.results.change_words import Word



@dataclasses.dataclass
class Event:
    kind: str
    series: object
    before: object  # Point
    after: object  # Point
    detail: str


def _ran(point) -> bool:
    return point.status == records.RecordStatus.OK


def _failed(point) -> bool:
    return point.status in records.FAILED_STATUSES


def _accuracy_change(before, after) -> str:
    return f"accuracy {before.accuracy} -> {after.accuracy}"


def series_events(one) -> list:
    """The events of one Series, oldest first (skipped runs are neither passing nor failing)."""
    out = []
    points = [p for p in one.points if p.status != records.RecordStatus.SKIP]
    for before, after in zip(points, points[1:]):
        if _ran(before) and _failed(after):
            out.append(Event(Word.NEW_FAILURE, one, before, after, f"status {after.status}"))
        elif _failed(before) and _ran(after):
            out.append(Event(Word.FIXED, one, before, after, f"was {before.status}"))
        if accuracy_status.became_failing(before.accuracy, after.accuracy):
            out.append(Event(Word.ACCURACY_FAILURE, one, before, after, _accuracy_change(before, after)))
        elif accuracy_status.failed(before.accuracy) and accuracy_status.passed(after.accuracy):
            out.append(Event(Word.ACCURACY_FIXED, one, before, after, _accuracy_change(before, after)))
        if before.graph_breaks is not None and after.graph_breaks is not None \
                and after.graph_breaks > before.graph_breaks:
            out.append(Event(Word.GRAPH_BREAKS, one, before, after,
                             f"graph breaks {before.graph_breaks} -> {after.graph_breaks}"))
    return out
