"""result_analyzer.py's files: the report, written in file order by the worker processes as they finish
their byte ranges; the long-lived CSV database the rows are appended to (matched by column name, replaced
atomically); reading a report back."""

from __future__ import annotations

import csv
import io
import os
import shutil
from typing import Optional

from benchmarks.analyzer.cells import header_bytes
from benchmarks.analyzer.columns import ENV_COLUMNS, order_columns
from benchmarks.plumbing import disk_writes, safe_paths
from benchmarks.results import records


# The csv module refuses a cell longer than 131,072 characters by default: the analyzer must read back every cell
# it wrote (a long error text, a list of warnings), so its reader takes cells up to this size.
MAX_CELL = 1 << 30


def _csv_reader(lines):
    csv.field_size_limit(MAX_CELL)
    return csv.reader(lines)


class AnalyzeError(Exception):
    """Bad input (no file, no valid record, a database that is not one): one line, exit status 2."""


class NoRecord(AnalyzeError):
    """The inputs hold no record and nothing invalid either (empty files): nothing to report, exit status 1."""


def _append_file(out, path: str, offset: int = 0) -> None:
    """Copy a file (from `offset`) to the end of `out`, in the kernel when it can."""
    out.flush()
    with open(path, "rb") as src:
        size = os.fstat(src.fileno()).st_size
        try:
            while offset < size:
                sent = os.sendfile(out.fileno(), src.fileno(), offset, size - offset)
                if not sent:
                    break
                offset += sent
            out.seek(0, os.SEEK_END)
            return
        except (AttributeError, OSError):
            pass
        src.seek(offset)
        shutil.copyfileobj(src, out, 1 << 20)


def _append_realigned(out, source, columns, target, skip_header: bool = False) -> None:
    """Copy CSV rows written under `columns` (a file's path, or bytes) to `out`, each cell under its own name
    in `target`."""
    position = {name: i for i, name in enumerate(columns)}
    index = [position.get(name) for name in target]
    with (open(source, encoding="utf-8", newline="") if isinstance(source, str) else
          io.TextIOWrapper(io.BytesIO(source), encoding="utf-8", newline="")) as src:
        reader = _csv_reader(src)
        if skip_header:
            next(reader, None)
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for number, row in enumerate(reader, start=1):
            width = len(row)
            writer.writerow(["" if i is None or i >= width else row[i] for i in index])
            if not number % 20000:
                out.write(buffer.getvalue().encode("utf-8"))
                buffer.seek(0)
                buffer.truncate()
        out.write(buffer.getvalue().encode("utf-8"))


class OrderedReport:
    """The report, written by the workers as they finish their ranges, each range in its turn (file order),
    at the offset the ranges before it ended: the parent never touches the rows.

    The first range with rows writes the CSV header, with its columns. A later range with the same columns
    writes its rows; one with fewer is realigned first; one with others, and every range after it, waits in
    a spool file instead, and finish() (in the parent) realigns what it must: the whole report only when
    the first range lacked columns that others had. Shared with the workers as they start (fork or spawn)."""

    HEADER_ROOM = 1 << 16  # a header longer than this: every range waits in a spool file

    def __init__(self, context, csv_path: Optional[str], jsonl_path: Optional[str], spool: str):
        self.csv_path, self.jsonl_path, self.spool = csv_path, jsonl_path, spool
        self.condition = context.Condition()
        self.turn = context.RawValue("q", 0)
        self.csv_end = context.RawValue("q", 0)
        self.jsonl_end = context.RawValue("q", 0)
        self.diverted = context.RawValue("b", 0)
        self.header = context.RawArray("c", self.HEADER_ROOM)
        self.header_length = context.RawValue("q", 0)
        self._files = {}  # this process's descriptors of the outputs
        self._header_columns = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_files"], state["_header_columns"] = {}, None
        return state

    def _write(self, path: str, data: bytes, offset: int) -> None:
        descriptor = self._files.get(path)
        if descriptor is None:
            descriptor = self._files[path] = os.open(path, os.O_WRONLY)
        view = memoryview(data)
        while view:
            written = os.pwrite(descriptor, view, offset)
            view, offset = view[written:], offset + written

    def header_columns(self) -> Optional[list]:
        if not self.header_length.value:
            return None
        if self._header_columns is None:
            text = self.header.raw[:self.header_length.value].decode("utf-8")
            self._header_columns = next(_csv_reader([text]))
        return self._header_columns

    def write_in_turn(self, index: int, columns: tuple, csv_rows: bytes, jsonl_rows: bytes) -> Optional[str]:
        """Wait for the turn of range `index`, write its rows, pass the turn; the spool file its CSV rows went
        to instead, if they did."""
        with self.condition:
            self.condition.wait_for(lambda: self.turn.value == index)
            try:
                if jsonl_rows:
                    self._write(self.jsonl_path, jsonl_rows, self.jsonl_end.value)
                    self.jsonl_end.value += len(jsonl_rows)
                if csv_rows:
                    return self._write_csv(index, columns, csv_rows)
                return None
            finally:
                self.turn.value = index + 1
                self.condition.notify_all()

    def _write_csv(self, index: int, columns: tuple, rows: bytes) -> Optional[str]:
        if not self.diverted.value:
            if not self.header_length.value:
                header = header_bytes(columns)
                if len(header) <= self.HEADER_ROOM:
                    self.header[:len(header)] = header
                    self.header_length.value = len(header)
                    self._write(self.csv_path, header, 0)
                    self.csv_end.value = len(header)
            target = self.header_columns()
            if target is not None and tuple(target) == columns:
                self._write(self.csv_path, rows, self.csv_end.value)
                self.csv_end.value += len(rows)
                return None
            if target is not None and set(columns) <= set(target):
                buffer = io.BytesIO()
                _append_realigned(buffer, rows, columns, target)
                self._write(self.csv_path, buffer.getvalue(), self.csv_end.value)
                self.csv_end.value += buffer.tell()
                return None
            self.diverted.value = 1
        path = os.path.join(self.spool, f"{index:06d}.csv")
        with open(path, "wb") as out:
            out.write(rows)
        return path

    def finish(self, all_columns, spools: list) -> list:
        """(Parent) Complete the CSV report; returns its columns (the documented order of every range's).
        spools: (columns, path) of the ranges that waited, in order."""
        final = order_columns(all_columns)
        written = self.header_columns()
        if written is not None and list(written) == final:
            with open(self.csv_path, "r+b") as out:
                out.seek(self.csv_end.value)
                for columns, path in spools:
                    if tuple(columns) == tuple(final):
                        _append_file(out, path)
                    else:
                        _append_realigned(out, path, columns, final)
                out.truncate()
            return final
        with disk_writes.replacing(self.csv_path) as out:
            out.write(header_bytes(final))
            if written is not None:  # streamed, not loaded: a report can be gigabytes
                _append_realigned(out, self.csv_path, written, final, skip_header=True)
            for columns, path in spools:
                _append_realigned(out, path, columns, final)
        return final

    def close(self) -> None:
        for descriptor in self._files.values():
            os.close(descriptor)
        self._files.clear()


def check_database(path: str) -> Optional[list]:
    """The header of an existing database, None for a new (or empty) one; AnalyzeError if it is not one."""
    refused = records.results_file_problem(path, "a metric database")  # a FIFO would block, a device never end
    if refused:
        raise AnalyzeError(f"--database {refused}")
    if not os.path.exists(path) or not os.path.getsize(path):
        return None
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            header = next(_csv_reader(handle), None)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise AnalyzeError(f"--database {path}: cannot read it ({exc})")
    if not header or "model_name" not in header or "timestamp" not in header:
        raise AnalyzeError(f"--database {path} is not a metric database (its header has no timestamp and model_name "
                           "columns); refusing to change it")
    return header


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def append_to_database(path: str, report_csv: str, columns: list) -> str:
    """Append the report's rows to the long-lived CSV at `path`, every cell under its own column name.

    Columns the database lacks are added by rewriting it once (its rows keep their values, empty in the
    new columns). The new file is written beside it and renamed over it: a reader or a crash sees the
    old file or the new one, never half of one. A lock file serialises concurrent analyzers.
    """
    lock_path = f"{path}.lock"
    try:  # not through a link: "a" would create a dangling link's target, wherever it points
        lock = os.fdopen(safe_paths.open_no_follow(lock_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644), "a")
    except safe_paths.LinkRefused:
        raise AnalyzeError(f"--database {path}: its lock {lock_path} is a symbolic link; not followed") from None
    with lock:
        try:
            import fcntl

            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        except ImportError:  # no flock (Windows): one analyzer at a time is then the user's business
            pass
        header = check_database(path)
        with disk_writes.replacing(path) as out:  # the old file's permissions kept
            if header is None:
                _append_file(out, report_csv)
                action = "created"
            elif set(columns) <= set(header):
                _append_file(out, path)
                if not _ends_with_newline(path):
                    out.write(b"\n")
                if list(columns) == header:
                    _append_file(out, report_csv, offset=len(header_bytes(columns)))
                else:
                    _append_realigned(out, report_csv, columns, header, skip_header=True)
                action = "appended"
            else:
                merged = order_columns(list(header) + list(columns))
                out.write(header_bytes(merged))
                _append_realigned(out, path, header, merged, skip_header=True)
                _append_realigned(out, report_csv, columns, merged, skip_header=True)
                action = "rewritten"
    return action


def load_report(path: str):
    """A CSV report (or database) as a pandas DataFrame: text columns as strings, the rest as numbers."""
    import pandas as pd

    text = {"suite_name", "model_name", "accelerator", "accelerator_model", "xla", "xla_flags", "dynamo",
            "torch_xla2", "test", "error_message", "outputs_file", "status", "error_type", "error_phase",
            "verification_code", "accuracy", "accuracy_reference", "accuracy_message", "accuracy_reason", *ENV_COLUMNS}
    with open(path, encoding="utf-8", newline="") as handle:
        header = next(_csv_reader(handle), [])
    return pd.read_csv(path, dtype={name: "string" for name in header if name in text}, low_memory=False)
