"""`history ingest`: records of results files (ours and upstream PyTorch/XLA's) into the database.

A record is stored once however often its file is ingested (its digest is unique); ingesting it again with
another --commit than the one it was stored with is an InputError (a record belongs to one run of one commit:
no silent skip, no silent rewrite of history). Only a row stored before schema 4, which kept no generation figures,
gains them when its file is ingested again. A bad or torn line is reported and skipped
(records.iter_records), as is a record the shared validation refuses (benchmarks/results/record_check.py: a
timestamp no date can show, an infinite or huge sample, a value of the wrong type: stored, it would break every
later `show` and `site`) or one that can't be placed (no timestamp); each is counted and reported. A file with
lines but not one usable record is an InputError ("<path>: no usable record (first problem: ...)").
"""

from __future__ import annotations

import dataclasses
import logging
import os
from datetime import datetime, timezone
from typing import Optional

from benchmarks.history import database, records_view, v3_runs
from benchmarks.results import oss_v3_records, record_check, records

log = logging.getLogger("benchmarks.history")


@dataclasses.dataclass
class IngestReport:
    files: int = 0
    records: int = 0  # read, placed or not
    added: int = 0
    already: int = 0
    filled: int = 0  # of those, stored before schema 4: their generation figures filled in (database.fill_figures)
    problems: list = dataclasses.field(default_factory=list)  # one line each: bad lines, unplaceable records

    def summary(self) -> str:
        filled = f" ({self.filled} given their generation figures)" if self.filled else ""
        return (f"{self.files} file(s): {self.added} record(s) added, {self.already} already in the database{filled}, "
                f"{len(self.problems)} skipped")


def _recommit(where: str, stored: tuple, commit: str) -> str:
    timestamp, host, stored_commit = stored
    when = datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (f"{where}: this record is already in the database, in the run of {when}"
            + (f" on {host}" if host else "") + f" with commit {stored_commit or '(none)'}; --commit {commit} "
            "would give it another: ingest only the new run's files with --commit (nothing of this file was stored)")


def ingest(connection, files: list, commit: Optional[str] = None) -> IngestReport:
    """Every record of `files` into the database, one transaction per file."""
    report = IngestReport()
    for path in files:
        problems: list = []
        skipped: list = []  # records read but refused
        source = os.path.abspath(path)
        read = usable = 0
        unmatched: list = []
        try:
            with connection:
                for number, record in oss_v3_records.iter_records(path, problems):  # v3 files too
                    read += 1
                    why = record_check.problem(record)
                    found, why = (None, why) if why else records_view.view(record, commit)
                    if found is None:
                        skipped.append(records.ReadProblem(path, number, f"unusable record: {why}"))
                        continue
                    usable += 1
                    if v3_runs.from_hud(record):  # rows exported from the HUD: beside our config of the same kind
                        found = v3_runs.place(connection, found, unmatched)
                    stored = database.stored_run(connection, found.digest)
                    if stored is not None and commit and stored[2] != commit:
                        raise records.InputError(_recommit(f"{path}:{number}", stored, commit))
                    if stored is None and database.add_measurement(connection, found, source):
                        report.added += 1
                    else:
                        report.already += 1
                        report.filled += database.fill_figures(connection, found)
        except OSError as exc:
            raise records.InputError(f"cannot read {path}: {exc.strerror or exc}") from None
        if (problems or skipped) and not usable:  # lines, but not one usable record: as every tool says
            first = min(problems + skipped, key=lambda problem: problem.line)
            raise records.InputError(records.no_usable_record(path, first))
        v3_runs.report(path, unmatched)
        report.records += read
        report.problems.extend(f"skipped {p}" for p in sorted(problems + skipped, key=lambda p: p.line))
        report.files += 1
    return report
