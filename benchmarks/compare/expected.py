"""compare.py --expected FILE RESULTS: results checked against a CSV the user commits to their repository
(model, config, accuracy status, graph breaks), as PyTorch's CI checks its expected accuracy files. A
difference is printed with the exact lines that update the file when the change is intended;
--write-expected FILE RESULTS writes it the first time (docs/compare.md, "Expected results").
"""

from __future__ import annotations

import csv
import dataclasses
import io
from typing import Optional

from benchmarks.compare import gates
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.results.measurement import Measurement

HEADER = ("model", "config", "accuracy", "graph_breaks")


@dataclasses.dataclass(frozen=True)
class Expectation:
    model: str
    config: str
    accuracy: str
    graph_breaks: str  # "" for a config without dynamo's statistics

    @property
    def key(self) -> tuple:
        return (self.model, self.config)

    def line(self) -> str:
        """The file's line for it, exactly as written (CSV quoting where a field needs it)."""
        out = io.StringIO()
        csv.writer(out, lineterminator="").writerow([self.model, self.config, self.accuracy, self.graph_breaks])
        return out.getvalue()


def config_text(m: Measurement) -> str:
    """A config as the file names it: accelerator kind, backend label (with its axes), test and batch size;
    not the machine's model, so that the file holds on any machine of the kind."""
    batch = f" bs{m.batch_size}" if m.batch_size is not None else ""
    return f"{m.accelerator or '?'} {m.backend} {m.test or '?'}{batch}"


def from_records(found: list) -> dict:
    """(model, config) -> Expectation of the results (a config's processes: the first accuracy that is not
    pass, the most graph breaks)."""
    grouped: dict = {}
    for record in found:
        m = Measurement(record)
        if m.model_name is None or not m.placeable:
            continue
        grouped.setdefault((m.model_name, config_text(m)), []).append(record)
    out = {}
    for (model, config), records in sorted(grouped.items()):
        breaks = gates.dynamo_stat(records, "graph_breaks")
        out[(model, config)] = Expectation(model, config, gates.accuracy(records),
                                           "" if breaks is None else str(breaks))
    return out


def render(expected: dict) -> str:
    """The whole file: its header, then a line per config, sorted."""
    return "\n".join([",".join(HEADER)] + [expected[k].line() for k in sorted(expected)]) + "\n"


def read(path: str) -> dict:
    """The file's expectations; UsageError (one line) for a file that is missing or not one."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
    except FileNotFoundError:
        raise UsageError(f"--expected {path}: no such file (write it first with --write-expected {path} RESULTS)") \
            from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UsageError(f"--expected {path}: cannot read it: {exc}") from None
    if not rows or tuple(cell.strip() for cell in rows[0]) != HEADER:
        raise UsageError(f"--expected {path}: not an expected-results file (its first line must be "
                         f"{','.join(HEADER)})")
    out = {}
    for number, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(HEADER):
            raise UsageError(f"--expected {path}, line {number}: {len(row)} fields, not {len(HEADER)}")
        found = Expectation(*(cell.strip() for cell in row))
        out[found.key] = found
    return out


@dataclasses.dataclass(frozen=True)
class Difference:
    old: Optional[Expectation]  # None: a config the file does not list
    new: Optional[Expectation]  # None: a config the results do not have

    def describe(self) -> str:
        if self.old is None:
            return f"{self.new.model} {self.new.config}: not in the file (accuracy {self.new.accuracy})"
        if self.new is None:
            return f"{self.old.model} {self.old.config}: expected, but not in the results"
        changes = []
        if self.old.accuracy != self.new.accuracy:
            changes.append(f"accuracy {self.old.accuracy} -> {self.new.accuracy}")
        if self.old.graph_breaks != self.new.graph_breaks:
            changes.append(f"graph breaks {self.old.graph_breaks or 'none'} -> {self.new.graph_breaks or 'none'}")
        return f"{self.new.model} {self.new.config}: " + ", ".join(changes)


def check(expected: dict, actual: dict) -> list:
    """The differences between the file and the results, in the file's order, then the new configs."""
    out = [Difference(old, actual.get(key)) for key, old in sorted(expected.items()) if actual.get(key) != old]
    return out + [Difference(None, actual[key]) for key in sorted(actual) if key not in expected]


def report(path: str, differences: list, checked: int) -> str:
    """What was found, then (if anything differs) the lines to remove (-) and to add (+) that update the file."""
    if not differences:
        return f"{path}: {checked} config(s) as expected\n"
    out = [f"{path}: {len(differences)} config(s) differ from the expected results:"]
    out += [f"  {d.describe()}" for d in differences]
    out += ["", f"If the change is intended, update {path}: remove each line marked -, add each marked +:"]
    out += [f"-{d.old.line()}" for d in differences if d.old is not None]
    out += [f"+{d.new.line()}" for d in differences if d.new is not None]
    return "\n".join(out) + "\n"
