"""compare.py's outcomes: one per config (and one for the geomean), with what would settle an unsure one. The words
and --fail-on's list are results/change_words.py's (history says the same ones); the output names the outcome `verdict`.

A ratio above 1 is worse whatever the metric (time, compile time, memory): the treatment costs more.
"""

from __future__ import annotations

from typing import Optional

from benchmarks.plumbing.cli_support import choice_list
from benchmarks.results import accuracy_status, records
from benchmarks.results.change_words import COMPARE_FAIL_ON, Word

# The relative change of compression ratio or compile latency past which their gates count.
DEFAULT_GATE_LIMIT = 0.10
# With one process on a side, the variation between processes (a few percent on a quiet machine, tens of percent on
# a busy one: the README's quickstart, eager against itself, moved by +-30%) is unknown, and no interval drawn from
# within one process covers it: such a config gets no slower/faster verdict, only what would give one.
ONE_PROCESS_NOTE = "1 process on {which}: variation between processes unknown, no verdict; run both with --rounds 3"


def failure(found: list) -> Optional[str]:
    """Why a side's records count as failed (any of them: a failing round is a failure), or None."""
    for record in found:
        status = records.record_status(record)
        if status in records.FAILED_STATUSES:
            error = record.get("error")
            message = error.get("message") if isinstance(error, dict) else (record.get("metrics") or {}).get("error")
            return f"{status}: {_error_line(str(message))}" if message else status
        verdict = accuracy_status.derive(record)  # the record's one verdict: --verify's and the golden check's
        if accuracy_status.failed(verdict):
            return f"accuracy {verdict}"
    return None


def _error_line(text: str) -> str:
    """The line of an error text that says what went wrong (upstream kept a child's whole traceback)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("Traceback"):
        return records.short_message(lines[-1], 120)
    return records.short_message(text, 120)


def correctness(control: list, treatment: list) -> Optional[tuple]:
    """(outcome, note) when the configs differ in what ran at all, else None (compare the numbers)."""
    if not treatment:
        return Word.ONLY_CONTROL, "no treatment record"
    if not control:
        return Word.ONLY_TREATMENT, "no control record"
    control_failed, treatment_failed = failure(control), failure(treatment)
    if treatment_failed and not control_failed:
        return Word.NEW_FAILURE, f"treatment {treatment_failed}"
    if control_failed and not treatment_failed:
        return Word.FIXED, f"control {control_failed}"
    if control_failed and treatment_failed:
        return Word.FAILING, f"control {control_failed}; treatment {treatment_failed}"
    return None


def timing(value: float, ci: tuple, threshold: float, n_control: int, n_treatment: int) -> tuple:
    """(outcome, note) of a ratio and its interval."""
    low, high = ci
    if min(n_control, n_treatment) < 2:
        which = "each side" if max(n_control, n_treatment) < 2 else \
            "the control side" if n_control < 2 else "the treatment side"
        return Word.UNSURE, ONE_PROCESS_NOTE.format(which=which)
    if low > 1 and value > 1 + threshold:
        return Word.SLOWER, ""
    if high < 1 and value < 1 - threshold:
        return Word.FASTER, ""
    if low >= 1 - threshold and high <= 1 + threshold:
        return Word.SAME, ""
    fewest = min(n_control, n_treatment)
    if fewest < 5:
        return Word.UNSURE, f"interval wider than ±{threshold:.0%}: more --rounds ({fewest} processes now) narrow it"
    return Word.UNSURE, f"interval wider than ±{threshold:.0%}: more --rounds or --repeat, or a quieter machine"


def parse_fail_on(text: str) -> tuple:
    """--fail-on's value: a comma list of outcomes, gates and/or "geomean", or "none". ValueError with the reason."""
    return choice_list(text, COMPARE_FAIL_ON)
