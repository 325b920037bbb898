"""compare.py's gates: what a CI owner fails a change on besides time (docs/compare.md, "Gates"). Per config:
its accuracy went from a passing status (pass, pass_due_to_skip) to anything else, dynamo's graph breaks or recompiles went up, the compression
ratio fell or the compile latency rose past a relative limit (both against each side's own eager run of the
same model and axes, results/against_eager.py). Every record is read through its Measurement.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from benchmarks.compare.outcomes import DEFAULT_GATE_LIMIT
from benchmarks.results import accuracy_status, against_eager
from benchmarks.results.change_words import Word
from benchmarks.results.measurement import Measurement


@dataclasses.dataclass(frozen=True)
class Limits:
    compression: float = DEFAULT_GATE_LIMIT  # a treatment ratio below control x (1 - this) fails
    compile_latency: float = DEFAULT_GATE_LIMIT  # a treatment latency above control x (1 + this) fails


def accuracy(found: list) -> Optional[str]:
    """A side's accuracy: the first of its processes that did not pass, else pass (None without records)."""
    return accuracy_status.first_not_passing(Measurement(r).accuracy for r in found)


def dynamo_stat(found: list, name: str) -> Optional[int]:
    """The largest value of one of dynamo's statistics over a side's processes, None when none has it."""
    values = [v for v in (Measurement(r).dynamo_stat(name) for r in found) if v is not None]
    return max(values) if values else None


def eager_index(found: list) -> against_eager.EagerIndex:
    """One side's eager configs (their ok processes), to measure its backend configs against."""
    grouped: dict = {}
    for record in found:
        m = Measurement(record)
        if m.placeable and m.ok and m.base_backend == against_eager.EAGER:
            grouped.setdefault(against_eager.baseline_key(m), []).append(m)
    return against_eager.EagerIndex((ms[0], None, ms) for ms in grouped.values())


def _ok(found: list) -> list:
    return [m for m in map(Measurement, found) if m.ok]


def relative_to_eager(found: list, index: Optional[against_eager.EagerIndex]) -> tuple:
    """(compression ratio, compile latency) of a side's config against its eager run; (None, None) without one."""
    processes = _ok(found)
    if not processes or index is None or processes[0].base_backend == index.base:
        return None, None
    eager = index.find(processes[0])
    if not eager:
        return None, None
    return against_eager.compression_ratio(processes, eager), against_eager.compile_latency(processes, eager)


def findings(control: list, treatment: list, indexes: tuple, limits: Limits) -> list:
    """[(gate, what changed)] of one config's two sides (lists of records)."""
    out = []
    before, after = accuracy(control), accuracy(treatment)
    if accuracy_status.became_failing(before, after):
        out.append((Word.ACCURACY, f"accuracy pass -> {after}"))
    for gate, stat in ((Word.GRAPH_BREAKS, "graph_breaks"), (Word.RECOMPILES, "recompiles")):
        old, new = dynamo_stat(control, stat), dynamo_stat(treatment, stat)
        if old is not None and new is not None and new > old:
            out.append((gate, f"{stat.replace('_', ' ')} {old} -> {new}"))
    (old_ratio, old_latency), (new_ratio, new_latency) = (relative_to_eager(control, indexes[0]),
                                                          relative_to_eager(treatment, indexes[1]))
    if old_ratio and new_ratio is not None and new_ratio < old_ratio * (1 - limits.compression):
        out.append((Word.COMPRESSION, f"compression ratio {old_ratio:.2f} -> {new_ratio:.2f}"))
    if old_latency and old_latency > 0 and new_latency is not None \
            and new_latency > old_latency * (1 + limits.compile_latency):
        out.append((Word.COMPILE_LATENCY, f"compile latency {old_latency:.2f} s -> {new_latency:.2f} s"))
    return out
