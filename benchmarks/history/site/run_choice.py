"""--newest and --baseline: which two runs the site compares, by date (YYYY-MM-DD: that day's last run),
by commit (a prefix of the run's commit: its newest run), or by run id; the baseline's default is the run
before the newest (per summary line: the line's own previous run)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Optional

import numpy as np

from benchmarks.plumbing.cli_support import UsageError

PREVIOUS = "previous"
LATEST = "latest"


def choose(runs: list, text: Optional[str], flag: str) -> int:
    """The grid row (runs oldest first) that `text` names: the newest run matching it."""
    if not runs:
        raise UsageError("the history database holds no run: ingest results first")
    if text in (None, LATEST):
        return len(runs) - 1
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            raise UsageError(f"{flag} {text}: not a date") from None
        found = [row for row, run in enumerate(runs) if run.timestamp < day + 86400]
        if not found:
            raise UsageError(f"{flag} {text}: no run on or before that day (the first is {runs[0].date})")
        return found[-1]
    found = [row for row, run in enumerate(runs) if run.commit and run.commit.startswith(text)]
    if not found and text.isdigit():
        found = [row for row, run in enumerate(runs) if run.id == int(text)]
    if not found:
        raise UsageError(f"{flag} {text}: no run has that commit, date (YYYY-MM-DD) or id")
    return found[-1]


def line_rows(present: np.ndarray, newest: int, baseline: Optional[int]) -> tuple:
    """(newest row, baseline row) of one line (present: (runs,) where it has records); None where it has none.
    baseline None: the line's run before its newest."""
    have = np.flatnonzero(present)
    mine = have[have <= newest]
    if not len(mine):
        return None, None
    last = int(mine[-1])
    before = have[have < last] if baseline is None else have[have <= baseline]
    return last, (int(before[-1]) if len(before) else None)
