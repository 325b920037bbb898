"""compare.py --expected FILE RESULTS: results checked against a CSV the user commits to their repository
(model, config, accuracy status, and dynamo's counts), as PyTorch's CI checks its expected accuracy files and
its graph-break check (check_graph_breaks.py) holds a run to them:
- `graph_breaks` and `fallbacks_to_eager` must match exactly: fewer fails too, until the file is updated (a win
  left out of the file would hide the next regression);
- `calls_captured` fails only on a drop of more than CALLS_CAPTURED_DROP_PERCENT;
- a count the file has no column for is not checked (files written before a column existed keep working).
A difference is printed with the exact lines that update the file when the change is intended;
--write-expected FILE RESULTS writes it with every column (docs/compare.md, "Expected results").
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from typing import Optional

from benchmarks.compare import gates
from benchmarks.plumbing.cli_support import UsageError, shown
from benchmarks.results import record_check
from benchmarks.results.records import results_file_problem
from benchmarks.results.measurement import Measurement

REQUIRED = ("model", "config", "accuracy")
EXACT = ("graph_breaks", "fallbacks_to_eager")  # the harness's exact counts: a rise or a fall fails
CALLS_CAPTURED = "calls_captured"
CALLS_CAPTURED_DROP_PERCENT = 5  # a fall of more than this fails; a rise, or a smaller fall, passes
COUNTS = EXACT + (CALLS_CAPTURED,)
HEADER = REQUIRED + COUNTS  # what --write-expected writes
_DIGITS = re.compile(r"[0-9]{1,19}")  # what isdigit() takes and int() refuses ("²", 5,000 digits) is no count


@dataclasses.dataclass(frozen=True)
class Expectation:
    model: str
    config: str
    accuracy: str
    counts: tuple = ()  # (name, text) per count of COUNTS it has a value for; "" for a config without one

    @property
    def key(self) -> tuple:
        return (self.model, self.config)

    def cell(self, column: str) -> str:
        return getattr(self, column) if column in REQUIRED else dict(self.counts).get(column, "")

    def line(self, columns: tuple = HEADER) -> str:
        """The file's line for it in `columns`, exactly as written (CSV quoting where a field needs it)."""
        out = io.StringIO()
        csv.writer(out, lineterminator="").writerow([self.cell(column) for column in columns])
        return out.getvalue()


def config_text(m: Measurement) -> str:
    """A config as the file names it: accelerator kind, backend label (with its axes), test and batch size;
    not the machine's model, so that the file holds on any machine of the kind."""
    batch = f" bs{m.batch_size}" if m.batch_size is not None else ""
    return f"{m.accelerator or '?'} {m.backend} {m.test or '?'}{batch}"


def from_records(found: list) -> dict:
    """(model, config) -> Expectation of the results (a config's processes: the first accuracy that is not
    pass, the largest of each count)."""
    grouped: dict = {}
    for record in found:
        m = Measurement(record)
        if m.model_name is None or not m.placeable:
            continue
        grouped.setdefault((m.model_name, config_text(m)), []).append(record)
    out = {}
    for (model, config), records in sorted(grouped.items()):
        counts = tuple((name, "" if value is None else str(value))
                       for name, value in ((name, gates.dynamo_stat(records, name)) for name in COUNTS))
        out[(model, config)] = Expectation(model, config, gates.accuracy(records), counts)
    return out


def render(expected: dict) -> str:
    """The whole file: its header, then a line per config, sorted."""
    return "\n".join([",".join(HEADER)] + [expected[k].line() for k in sorted(expected)]) + "\n"


@dataclasses.dataclass(frozen=True)
class ExpectedFile:
    columns: tuple  # its header: REQUIRED, then the counts it checks
    entries: dict  # (model, config) -> Expectation


def _columns(path: str, header: list) -> tuple:
    columns = tuple(cell.strip() for cell in header)
    counts = columns[len(REQUIRED):]
    unknown = [name for name in counts if name not in COUNTS]
    if columns[:len(REQUIRED)] != REQUIRED or unknown or len(set(counts)) != len(counts):
        what = f"column {unknown[0]!r} is not a count it checks; " if columns[:len(REQUIRED)] == REQUIRED and \
            unknown else ""
        raise UsageError(f"--expected {path}: not an expected-results file ({what}its first line must be "
                         f"{','.join(REQUIRED)}, then any of {','.join(COUNTS)} once each)")
    return columns


def read(path: str) -> ExpectedFile:
    """The file's expectations; UsageError (one line) for a file that is missing or not one."""
    refused = results_file_problem(path, "an expected-results file")  # a FIFO would block the read
    if refused:
        raise UsageError(f"--expected {refused}")
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
    except FileNotFoundError:
        raise UsageError(f"--expected {path}: no such file (write it first with --write-expected {path} RESULTS)") \
            from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UsageError(f"--expected {path}: cannot read it: {exc}") from None
    if not rows:
        raise UsageError(f"--expected {path}: empty (write it with --write-expected {path} RESULTS)")
    columns = _columns(path, rows[0])
    out = {}
    for number, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(columns):
            raise UsageError(f"--expected {path}, line {number}: {len(row)} fields, not {len(columns)}")
        cells = dict(zip(columns, (cell.strip() for cell in row)))
        for name in columns[len(REQUIRED):]:  # the record check's rules: digits 0-9 only, a count within 2**63
            if cells[name] and (not _DIGITS.fullmatch(cells[name]) or record_check.count(int(cells[name]))):
                raise UsageError(f"--expected {path}, line {number}: {name} is {cells[name][:40]!r}, not a count "
                                 "(a whole number up to 2**63, or empty for a config without dynamo)")
        for name in REQUIRED:
            if record_check.text(cells[name]):
                raise UsageError(f"--expected {path}, line {number}: {name} {record_check.text(cells[name])}")
        found = Expectation(*(cells[name] for name in REQUIRED),
                            counts=tuple((name, cells[name]) for name in columns[len(REQUIRED):]))
        out[found.key] = found
    return ExpectedFile(columns, out)


def _words(name: str) -> str:
    return name.replace("_", " ")


def count_change(name: str, old: str, new: str) -> Optional[str]:
    """Why a count fails the harness's rule ("graph breaks 0 -> 1"), or None when it passes."""
    if old == new:
        return None
    if old and new and name == CALLS_CAPTURED:
        if (int(old) - int(new)) * 100 <= int(old) * CALLS_CAPTURED_DROP_PERCENT:  # in integers: 5 % exactly passes
            return None
        return (f"{_words(name)} {old} -> {new} ({1 - int(new) / int(old):.0%} fewer: more than "
                f"{CALLS_CAPTURED_DROP_PERCENT}%)")
    if old and new and int(new) < int(old):
        return f"{_words(name)} {old} -> {new} (fewer: an improvement, fails until the file says so)"
    return f"{_words(name)} {old or 'none'} -> {new or 'none'}"


@dataclasses.dataclass(frozen=True)
class Difference:
    old: Optional[Expectation]  # None: a config the file does not list
    new: Optional[Expectation]  # None: a config the results do not have
    changes: tuple = ()  # why a config both have fails

    def describe(self) -> str:
        if self.old is None:
            return f"{self.new.model} {self.new.config}: not in the file (accuracy {self.new.accuracy})"
        if self.new is None:
            return f"{self.old.model} {self.old.config}: expected, but not in the results"
        return f"{self.new.model} {self.new.config}: " + ", ".join(self.changes)


def changes(columns: tuple, old: Expectation, new: Expectation) -> tuple:
    """Why the results' config fails the file's line: its accuracy, then each count the file has a column for."""
    out = [] if old.accuracy == new.accuracy else [f"accuracy {old.accuracy} -> {new.accuracy}"]
    for name in columns[len(REQUIRED):]:
        why = count_change(name, old.cell(name), new.cell(name))
        if why:
            out.append(why)
    return tuple(out)


def check(expected: ExpectedFile, actual: dict) -> list:
    """The differences between the file and the results, in the file's order, then the new configs."""
    out = []
    for key, old in sorted(expected.entries.items()):
        new = actual.get(key)
        why = () if new is None else changes(expected.columns, old, new)
        if new is None or why:
            out.append(Difference(old, new, why))
    return out + [Difference(None, actual[key]) for key in sorted(actual) if key not in expected.entries]


def report(path: str, columns: tuple, differences: list, checked: int) -> str:
    """What was found, then (if anything differs) the lines to remove (-) and to add (+) that update the file,
    in its own columns."""
    if not differences:
        return f"{path}: {checked} config(s) as expected\n"
    out = [f"{path}: {len(differences)} config(s) differ from the expected results:"]
    out += [f"  {shown(d.describe())}" for d in differences]  # names from records and the file: shown, never run
    out += ["", f"If the change is intended, update {path}: remove each line marked -, add each marked +:"]
    out += [f"-{shown(d.old.line(columns))}" for d in differences if d.old is not None]
    out += [f"+{shown(d.new.line(columns))}" for d in differences if d.new is not None]
    return "\n".join(out) + "\n"
