"""The record's `dynamo_stats` beyond its counts (docs/architecture.md, "The record"): dynamo's graph-break reasons
and the compile time by phase, as PyTorch's dynamo benchmark harness shows them (`--print-graph-breaks`, its
compilation metrics). Their shape in the record, the rule that keeps the list short, and the analyzer's cells.
No torch: the child hands in what dynamo gave, every reader reads through here."""

from __future__ import annotations

import math
import os
from typing import Iterable, Optional

# A record lists at most this many distinct reasons (the most frequent); the rest are only counted.
MAX_REASONS = 20
# An explanation is cut to this many characters: the reason's first line names it, the location finds it.
EXPLANATION_LIMIT = 300
# The analyzer's reasons cell is cut (at a reason's end) to about this many characters.
CELL_LIMIT = 500

REASONS = "graph_break_reasons"
OMITTED = "graph_break_reasons_omitted"
PHASES = "compile_seconds_by_phase"
FUNCTIONS = "compile_seconds_by_function"

# torch 2.9's coarse compile phases (torch._dynamo.utils.calculate_time_spent: dynamo_timed regions that feed
# its compilation metrics, summed over every compile of the process), each a column of the analyzer's CSV.
# Nested: total_wall_time = entire_frame_compile + entire_backward_compile; backend_compile is within
# entire_frame_compile; inductor_compile (forward and backward graphs) within backend_compile or
# entire_backward_compile; code_gen within inductor_compile. Other phases (gc, autotuning, remote caches) stay
# in the record only.
PHASE_COLUMNS = (
    ("compile_s_total", "total_wall_time"),
    ("compile_s_frame", "entire_frame_compile"),
    ("compile_s_backend", "backend_compile"),
    ("compile_s_inductor", "inductor_compile"),
    ("compile_s_code_gen", "code_gen"),
    ("compile_s_backward", "entire_backward_compile"),
)
# The counts the harness's graph-break check (check_graph_breaks.py) holds a run to, each a column after the
# phases' (compare.py's expected results check them: benchmarks/compare/expected.py).
FALLBACKS_TO_EAGER = "fallbacks_to_eager"
COUNT_COLUMNS = ("calls_captured", "graph_breaks", FALLBACKS_TO_EAGER)
COLUMNS = (REASONS,) + tuple(column for column, _ in PHASE_COLUMNS) + COUNT_COLUMNS


def fallbacks_to_eager(frames) -> int:
    """The frames dynamo started to convert but gave up on, run by Python as they are (the harness's
    `fallbacks_to_eager`: dynamo's counters["frames"] total minus ok); 0 without any."""
    return max(0, int(frames.get("total", 0)) - int(frames.get("ok", 0)))


def split_message(message: str) -> tuple:
    """(reason, explanation) of dynamo's graph-break message: its first line (torch 2.9's graph-break type, or
    an older one-line reason) and the text of its `Explanation:` line, cut short (None without one)."""
    lines = str(message).strip().splitlines() or [""]
    explanation = None
    for line in lines[1:]:
        text = line.strip()
        if text.startswith("Explanation:"):
            explanation = text[len("Explanation:"):].strip()
            if len(explanation) > EXPLANATION_LIMIT:
                explanation = explanation[:EXPLANATION_LIMIT - 3] + "..."
            break
    return lines[0].strip(), explanation


def summarize_reasons(breaks: Iterable[tuple]) -> tuple:
    """([{reason, explanation, where, count}], omitted) from (message, where) per graph break, where a
    "file:line" or None: one entry per distinct (reason, explanation, where), the most frequent first (ties in
    order of appearance), at most MAX_REASONS; omitted is how many distinct ones were left out."""
    groups: dict = {}
    for message, where in breaks:
        reason, explanation = split_message(message)
        key = (reason, explanation, where)
        groups[key] = groups.get(key, 0) + 1
    ordered = sorted(groups.items(), key=lambda item: -item[1])  # stable: ties keep their first appearance
    listed = [{"reason": reason, "explanation": explanation, "where": where, "count": count}
              for (reason, explanation, where), count in ordered[:MAX_REASONS]]
    return listed, max(0, len(ordered) - MAX_REASONS)


def seconds_by_key(times: dict) -> dict:
    """{name: seconds} with finite non-negative numbers only, rounded to microseconds (what dynamo's timers
    resolve), in the given order."""
    return {str(name): round(float(value), 6) for name, value in times.items()
            if _number(value) is not None and value >= 0}


def _number(value) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def reasons_cell(stats) -> Optional[str]:
    """One cell of a record's graph-break reasons: "reason @ file.py:line (count); ...", cut at about
    CELL_LIMIT characters with how many reasons were left out; None for a record listing none, without the
    list (older ones, non-dynamo configs) or with one that is not a list (an empty cell: a CSV can't tell them
    apart, and a JSON Lines row says the same as the CSV)."""
    if not isinstance(stats, dict) or not isinstance(stats.get(REASONS), list):
        return None
    parts = []
    for entry in stats[REASONS]:
        if not isinstance(entry, dict) or not isinstance(entry.get("reason"), str):
            continue
        text = " ".join(entry["reason"].split())
        where = entry.get("where")
        if isinstance(where, str) and where:
            text += f" @ {os.path.basename(where)}"
        count = entry.get("count")
        if isinstance(count, int) and not isinstance(count, bool):
            text += f" ({count})"
        parts.append(text)
    omitted = stats.get(OMITTED)
    left_out = omitted if isinstance(omitted, int) and not isinstance(omitted, bool) and omitted > 0 else 0
    kept, length = [], 0
    for part in parts:
        if kept and length + len(part) + 2 > CELL_LIMIT:
            break
        kept.append(part)
        length += len(part) + 2
    left_out += len(parts) - len(kept)
    if left_out:
        kept.append(f"... {left_out} more")
    return "; ".join(kept) or None


def phase_cells(stats) -> tuple:
    """The compile seconds of each PHASE_COLUMNS phase (None where the record has none)."""
    phases = stats.get(PHASES) if isinstance(stats, dict) else None
    if not isinstance(phases, dict):
        return (None,) * len(PHASE_COLUMNS)
    return tuple(_number(phases.get(phase)) for _, phase in PHASE_COLUMNS)


def count_cells(stats) -> tuple:
    """The counts of COUNT_COLUMNS (None where the record has none: older records lack fallbacks_to_eager)."""
    if not isinstance(stats, dict):
        return (None,) * len(COUNT_COLUMNS)
    return tuple(_count(stats.get(name)) for name in COUNT_COLUMNS)


def _count(value) -> Optional[int]:
    number = _number(value)
    return int(number) if number is not None and number >= 0 and number == int(number) else None


def cells(stats) -> tuple:
    """The analyzer's values of COLUMNS for a record's `dynamo_stats` (any value: None where it says nothing)."""
    return (reasons_cell(stats),) + phase_cells(stats) + count_cells(stats)
