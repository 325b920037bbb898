"""aggregate.py's inputs: read results files, place each record (a Row over its Measurement), select the
rows the flags ask for (benchmarks/results/selection.py), and name and order the backends."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from datetime import datetime, timezone
from typing import Optional

from benchmarks.plumbing.cli_support import UsageError, shown
from benchmarks.results import record_check, records
from benchmarks.results.measurement import Measurement
from benchmarks.results.selection import Selection

log = logging.getLogger("benchmarks.aggregate")

# Upstream's names for its backends; any other name is shown as it is.
TITLES = {
    "eager": "Eager",
    "inductor": "Inductor",
    "openxla+dynamo": "XLA+Dynamo",
    "openxla+lazytensor": "XLA+LazyTensor",
    "openxla_eval+dynamo": "XLA_Eval+Dynamo",
}
# Default --backends order: eager first, as the natural baseline, then upstream's, then others by name.
CANONICAL_ORDER = ("eager", "inductor", "openxla+dynamo", "openxla+lazytensor", "openxla_eval+dynamo")
# A backend label (results/measurement.py): a backend name, then a quantization recipe, then other axes in
# brackets: eager, openxla+dynamo, inductor+int8wo, openxla+dynamo+int8dq, inductor[max-autotune,bf16].
BACKEND_NAME = re.compile(r"^[A-Za-z0-9_.\-]+(\+[A-Za-z0-9_.\-]+){0,2}(\[[A-Za-z0-9_.,=\-]+\])?$")


class NoData(Exception):
    """Nothing to report: one line on stderr (plus the notes that say why), exit status 1."""

    def __init__(self, message: str, notes: tuple = ()):
        super().__init__(message)
        self.notes = list(notes)


def backend_title(name: str) -> str:
    base, bracket, axes = name.partition("[")  # inductor[bf16]: the base's title, then the axes as labelled
    if bracket:
        return backend_title(base) + bracket + axes
    if name in TITLES:
        return TITLES[name]
    if name.endswith("+dynamo"):
        return name[: -len("+dynamo")] + "+Dynamo"
    return name


def utc_text(timestamp: float) -> str:
    """As upstream prints a run's time: naive UTC `str(datetime)`, microseconds only when non-zero."""
    return str(datetime.fromtimestamp(timestamp, timezone.utc).replace(tzinfo=None))


def order_backends(names) -> list:
    names = set(names)
    return [n for n in CANONICAL_ORDER if n in names] + sorted(names - set(CANONICAL_ORDER))


def split_backends(text: str) -> list:
    """--backends' value: names separated by commas (a comma inside a label's [...] is the label's own)."""
    return [name.strip() for name in re.split(r",(?![^\[]*\])", text) if name.strip()]


def looks_like_backend(token: str) -> bool:
    """A word after --backends that is meant as a backend's name, not an input (a path that exists, a .jsonl, a
    path with a directory, a glob); a bad name stays a name, for check_backends to refuse."""
    return not (os.path.exists(token) or token.endswith(".jsonl") or os.sep in token or any(c in token for c in "*?"))


def check_backends(names: list) -> list:
    for name in names:
        if not BACKEND_NAME.match(name):
            raise UsageError(f"--backends: {name!r} is not a backend name (e.g. eager, inductor, "
                             "openxla+dynamo, openxla+lazytensor, openxla_eval+dynamo, aot_eager)")
    seen = set()
    for name in names:
        if name in seen:
            raise UsageError(f"--backends: {name} is given twice")
        seen.add(name)
    return list(names)


# ---------------------------------------------------------------- reading


def expand_inputs(paths: list) -> list:
    """Files, directories (every *.jsonl below) and glob patterns -> existing files, in order, once each."""
    try:
        return records.expand_input_paths(paths, recursive=True)
    except records.InputError as exc:
        raise UsageError(str(exc)) from None


def read_inputs(files: list) -> list:
    """Every record of every file, in order. Bad lines are skipped with a warning; a file with no
    JSON object line at all is not a results file (UsageError)."""
    try:
        return records.read_results_files(files)
    except records.InputError as exc:
        raise UsageError(str(exc)) from None


@dataclasses.dataclass
class Row:
    """One record, placed: which run, workload, backend and batch size it measures, and its outcome."""

    timestamp: float
    accelerator: str
    accelerator_model: str
    suite: str
    model: str
    backend: str
    test: str
    batch_size: object
    status: str
    variant: str
    measurement: Measurement
    pooled: list = dataclasses.field(default_factory=list)  # the ok measurements pooled together (`deduplicate`)
    value: Optional[float] = None  # the time (s), once measured by `datapoint`
    spread: Optional[float] = None
    why: Optional[str] = None  # why an ok record has no value
    paired: Optional[tuple] = None  # (speedup, spread) from its own eager runs (--speedup=paired), by `datapoint`'s estimator

    @property
    def record(self) -> dict:
        return self.measurement.record

    @property
    def workload(self) -> tuple:
        return (self.accelerator_model, self.suite, self.model)

    @property
    def batch_key(self):
        return "" if self.batch_size is None else self.batch_size


def record_row(record: dict) -> tuple:
    """(Row, None) for a record aggregate can place, or (None, why not): the shared validation's reason
    (benchmarks/results/record_check.py: types, finite numbers, a timestamp a date can show), or what aggregate
    needs beyond it."""
    refused = record_check.problem(record)
    if refused:
        return None, refused
    m = Measurement(record)
    if not m.model_name:
        return None, "no model name"
    if m.timestamp is None:
        return None, "no timestamp"
    if not m.test:
        return None, "no test"
    return Row(timestamp=m.timestamp, accelerator=m.accelerator, accelerator_model=m.accelerator_model,
               suite=m.suite, model=m.model_name, backend=m.backend, test=m.test, batch_size=m.batch_size,
               status=m.status, variant=m.variant, measurement=m), None


def load_rows(files: list) -> list:
    """One Row per placeable record, in input order."""
    rows, unplaced = [], {}
    for record in read_inputs(files):
        row, why = record_row(record)
        if row is None:
            unplaced[why] = unplaced.get(why, 0) + 1
        else:
            rows.append(row)
    for why, count in unplaced.items():
        log.warning("skipped %d record(s): %s", count, why)
    return rows


def list_accelerators(rows: list) -> str:
    """What --list-accelerators prints: one line per accelerator model."""
    if not rows:
        raise NoData("no records in the input files")
    lines = []
    for accel_model in sorted({r.accelerator_model for r in rows}):
        group = [r for r in rows if r.accelerator_model == accel_model]
        kinds = ",".join(sorted({r.accelerator for r in group if r.accelerator})) or "?"
        tests = ",".join(sorted({r.test for r in group}))
        runs = len({r.timestamp for r in group})
        lines.append(f"{shown(accel_model)}\t{shown(kinds)}\t{len(group)} records\t{runs} run{'s' if runs != 1 else ''}\t"
                     f"tests: {tests}\tbackends: {', '.join(order_backends({r.backend for r in group}))}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- selecting


def select_accelerator(rows: list, pattern: Optional[str]) -> tuple:
    """(rows of the chosen accelerator(s), description for titles). Without --accelerator the files must
    hold one accelerator."""
    found = sorted({r.accelerator_model for r in rows})
    if pattern is None:
        if len(found) > 1:
            raise UsageError("the input holds several accelerators (" + "; ".join(found)
                             + "): choose one with --accelerator NAME, or --accelerator=all")
        return rows, found[0] if found else "no accelerator"
    chosen = Selection(accelerator=pattern).select(rows, view=lambda row: row.measurement)
    if not chosen:
        raise NoData(f"no records for accelerator {pattern!r}; the input holds: " + "; ".join(found))
    models = sorted({r.accelerator_model for r in chosen})
    if len(models) == 1:
        return chosen, models[0]
    return chosen, f"{len(models)} accelerators" + ("" if pattern.lower() == "all" else f" matching {pattern!r}")
