"""The record: schema constants, resume fingerprint, atomic append, tolerant reader.

The parent is the only writer of a results file (single-config mode run by hand is the exception,
through this same writer). Readers survive old records, nulls, blank lines and a torn last line.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import stat
from typing import Iterator, Optional

from benchmarks.config import axes, experiment_config
from benchmarks.plumbing import disk_writes, folder_walk
from benchmarks.results.record import Record
from benchmarks.results.str_enum import StrEnum

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1


class RecordStatus(StrEnum):
    """Our `status`: how the config's child ended (docs/architecture.md, "The record")."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CRASH = "crash"
    OOM = "oom"
    SKIP = "skip"


STATUSES = tuple(RecordStatus)
# Statuses that --retry-failed runs again (a skip is a decision, not a failure).
FAILED_STATUSES = (RecordStatus.ERROR, RecordStatus.TIMEOUT, RecordStatus.CRASH, RecordStatus.OOM)


class VerificationCode(StrEnum):
    """Upstream PyTorch/XLA's `verification_code`, as upstream names it: --verify's comparison with eager in
    upstream's terms (child/accuracy/eager_comparison.py), kept for upstream's tools; our verdict is `accuracy`."""

    PASS = "PASS"
    FAIL = "FAIL"
    EAGER_FAILED = "EAGER_FAILED"
    EXCEPTION_RAISED = "EXCEPTION_RAISED"
    NONDETERMINISTIC_EAGER_RUN = "NONDETERMINISTIC_EAGER_RUN"
    VERIFIER_SKIPPED = "VERIFIER_SKIPPED"
    VERIFIER_DIDNT_RUN = "VERIFIER_DIDNT_RUN"


# Model-config keys that name what was requested (labels are derived from the file, not requested).
FINGERPRINT_MODEL_KEYS = ("suite_name", "model_name", "params")


def record_status(record: dict) -> str:
    """Our `status` (a RecordStatus value), or one inferred for upstream records (which have none)."""
    status = record.get("status")
    if status in STATUSES:
        return status  # as read (a plain string equal to its member): resume and the analyzer ask this per record
    metrics = record.get("metrics") or {}
    error = metrics.get("error") if isinstance(metrics, dict) else None
    if error is None:
        return RecordStatus.OK
    if str(error).strip() == "SKIP":
        return RecordStatus.SKIP
    if "timed out" in str(error) or str(error).startswith("TIMEOUT"):
        return RecordStatus.TIMEOUT
    return RecordStatus.ERROR


def fingerprint(model: dict, experiment: dict, requested_batch_size: Optional[int], verify: bool,
                round_index: int = 0, golden: Optional[dict] = None) -> str:
    """The config as requested: not the real batch size, not accelerator_model, not the environment.
    A round past the first (--rounds) is its own run: its index is part of it (round 0 keeps the fingerprint
    records had before rounds existed, so their results files resume unchanged). So are the golden flags
    (`golden_request`): a check, or a save, is another run than a plain one; without them, the old text."""
    model_part = {k: model.get(k) for k in FINGERPRINT_MODEL_KEYS if model.get(k) is not None}
    exp_part = {k: v for k, v in experiment.items() if k not in ("accelerator_model", "batch_size")}
    # Old records lack these keys; their absence means the default.
    exp_part.setdefault("torch_xla2", None)
    exp_part.setdefault("enable_functionalization", False)
    exp_part.setdefault("xla_flags", None)
    for key in experiment_config.OWN_KEYS:  # newer than the fingerprint: at its default, the old text (resume)
        if axes.at_default(key, exp_part.get(key)):
            exp_part.pop(key, None)
    exp_part["batch_size"] = requested_batch_size
    key = {"model": model_part, "experiment": exp_part, "verify": bool(verify)}
    if round_index:
        key["round"] = round_index
    if golden:
        key["golden"] = golden
    return json.dumps(key, sort_keys=True)


def _record_golden_request(record: dict) -> Optional[dict]:
    found = record.get("golden_request")
    return found if isinstance(found, dict) and found else None


def record_fingerprint(record: dict) -> Optional[str]:
    model, experiment = record.get("model"), record.get("experiment")
    if not isinstance(model, dict) or not isinstance(experiment, dict):
        return None
    # Upstream records hold only the real batch size; like upstream's resume, treat them as "no request".
    return fingerprint(model, experiment, record.get("requested_batch_size"), record.get("verify", False),
                       record_round(record), _record_golden_request(record))


class RecordFingerprints:
    """record_fingerprint of many records of fewer configs (a resume reads every sweep's records of each):
    each distinct (model, experiment, batch size, verify, round, golden flags) is fingerprinted once."""

    LIMIT = 500_000  # distinct configs remembered at most (memory stays bounded on any file)

    def __init__(self):
        self._known: dict = {}

    def __call__(self, record: dict) -> Optional[str]:
        import orjson  # as in _loads

        try:  # orjson: a few microseconds, against the fingerprint's sorted json.dumps
            key = orjson.dumps((record.get("model"), record.get("experiment"), record.get("requested_batch_size"),
                                record.get("verify", False), record.get("round"), record.get("golden_request")))
        except TypeError:  # what orjson can't write (integers beyond 64 bits)
            return record_fingerprint(record)
        try:
            return self._known[key]
        except KeyError:
            if len(self._known) >= self.LIMIT:
                self._known.clear()
            found = self._known[key] = record_fingerprint(record)
            return found


def record_round(record: dict) -> int:
    """The record's --rounds index (0-based); 0 for records from before rounds, or with a bad value."""
    value = record.get("round")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclasses.dataclass
class ReadProblem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def _loads(raw: bytes):
    """json.loads' answer for one line, from orjson (several times faster: a resume reads millions of lines)
    unless orjson refuses what json reads (NaN, Infinity, integers beyond 64 bits, lone surrogates)."""
    import orjson  # here, not at the top: a tool's --help imports this module and stays light

    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            return json.loads(raw)
        except RecursionError:  # nested deeper than orjson reads (1024): no record, never a crash
            raise ValueError("nested too deeply") from None


# A surrogate's escape, or its bytes (which Python's json decodes too): the line may hold a lone surrogate (the
# analyzer's reader skips a record with one where a row shows it; record_check refuses one in a text it checks).
SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def has_lone_surrogate(value) -> bool:
    """Whether a value read by Python's json holds text with a lone surrogate (orjson refuses those lines)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif kind is dict:
            stack.extend(item)
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return False


_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular(path: str, mode: int, what: str = "a results file") -> Optional[str]:
    """InputError's line for a path whose (stat) `mode` is not a regular file's (`what` it should be), else None."""
    for test, kind in _NOT_REGULAR:
        if test(mode):
            return f"{path} is {kind}, not {what}"
    return None if stat.S_ISREG(mode) else f"{path} is not a regular file, not {what}"


def open_results(path: str):
    """The results file at `path`, opened to read, if it is a regular file; InputError for anything else. A FIFO
    or a device would block the reader, or never end: it is opened without blocking and refused unread."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        refused = not_regular(path, os.fstat(fd).st_mode)
        if refused:
            raise InputError(refused)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def iter_records(path: str, problems: Optional[list] = None) -> Iterator[tuple]:
    """Yield (line_number, record) for every valid JSON object line; note every other line. A path that is no
    regular file (a FIFO, a device) is an InputError."""
    with open_results(path) as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            torn = not raw.endswith(b"\n")
            try:
                record = _loads(raw)
            except ValueError as exc:
                what = "torn last line (the writer was interrupted)" if torn else f"invalid JSON ({exc})"
                if problems is not None:
                    problems.append(ReadProblem(path, number, what))
                continue
            if not isinstance(record, dict):
                if problems is not None:
                    problems.append(ReadProblem(path, number, "not a JSON object"))
                continue
            yield number, record


def read_records(path: str, warn: bool = True) -> list:
    return list(stream_records(path, warn))


def stream_records(path: str, warn: bool = True) -> Iterator[dict]:
    """read_records one record at a time, for a reader that keeps little of each (a file may hold millions);
    the skipped lines, and the records the shared validation refuses (record_check.py), are logged at the end."""
    problems: list = []
    yield from usable_records(path, iter_records(path, problems), problems)
    if warn:
        for problem in problems:
            log.warning("skipped %s", problem)


def usable_records(path: str, numbered: Iterator[tuple], problems: list) -> Iterator[dict]:
    """The records of (line number, record) pairs that record_check accepts; each refused one is a ReadProblem."""
    from benchmarks.results import record_check

    for number, record in numbered:
        refused = record_check.problem(record)
        if refused:
            problems.append(ReadProblem(path, number, f"unusable record: {refused}"))
        else:
            yield record


class ResultsWriter:
    """Appends one whole record per line: one write, then fsync (or one fsync for a batch: `sync=False`, then
    `sync()`). Safe across crashes and resumes: a killed writer never tears a line it wrote. A full disk (any
    refusal: disk_writes.WriteFailed, naming the file) leaves the file as it was before the refused record, or
    before the refused batch when its fsync fails: a partial line is cut off, so the file stays JSON Lines."""

    def __init__(self, path: str):
        self.path = path
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        try:  # without blocking: a FIFO would wait for a reader here (it is refused below)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            raise disk_writes.WriteFailed.of(path, exc) from None
        refused = not_regular(path, os.fstat(self._fd).st_mode)
        if refused:
            os.close(self._fd)
            raise InputError(refused)
        os.set_blocking(self._fd, True)
        self._unsynced = False
        # A torn last line (a writer killed mid-write) must not swallow the next record.
        size = os.fstat(self._fd).st_size
        if size:
            with open(path, "rb") as handle:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    log.warning("%s ends with a torn line; it is kept and skipped by readers", path)
                    self._append_or_cut(b"\n")
        self._synced_size = os.fstat(self._fd).st_size  # what is on disk: a failed fsync cuts back to it

    def _append_or_cut(self, data: bytes) -> None:
        """Append `data` whole, or (WriteFailed) cut the file back to where it ended before."""
        end = os.lseek(self._fd, 0, os.SEEK_END)  # O_APPEND writes here
        try:
            disk_writes.write_all(self._fd, data, self.path)
        except disk_writes.WriteFailed:
            self._cut(end)
            raise

    def _cut(self, size: int) -> None:
        try:
            os.ftruncate(self._fd, size)
        except OSError as exc:  # the next writer's open still ends the torn line (above)
            log.warning("could not cut %s back to its last whole record: %s", self.path, exc.strerror)

    def append(self, record: dict, sync: bool = True) -> None:
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        self._append_or_cut(data)
        self._unsynced = True
        if sync:
            self.sync()

    def sync(self) -> None:
        """Records appended so far reach the disk (one fsync: milliseconds, whatever the batch)."""
        if self._unsynced and self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError as exc:  # the batch may not be on disk: it is not kept (its configs run again)
                self._cut(self._synced_size)
                raise disk_writes.WriteFailed.of(self.path, exc) from None
            self._unsynced = False
            self._synced_size = os.fstat(self._fd).st_size

    def close(self) -> None:
        if self._fd is not None:
            try:
                self.sync()
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> "ResultsWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def results_file_problem(path: str, what: str = "a results file") -> Optional[str]:
    """None if `path` is a regular file or nothing yet, else the one line that refuses it as `what` (a FIFO or a
    device: reading it would block, or never end)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror}"
    return not_regular(path, mode, what)


def check_writable_dir(directory: str) -> Optional[str]:
    """None if results can be written under `directory`, else a one-line reason."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        return f"cannot create output directory {directory}: {exc.strerror}"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"output directory {directory} is not writable"
    return None


def new_record(model: dict, experiment: dict, *, repeat: int, iterations_per_run: int, warmup: int,
               timestamp: float, verify: bool, requested_batch_size: Optional[int], environment: dict,
               golden: Optional[dict] = None) -> Record:
    """A record in the declared key order (results/record_schema.py): upstream's keys first, then ours; a Record,
    so every key set on it from here on is checked (results/record.py). `golden`: GoldenOptions.request()'s (the key
    only when a golden flag is set, so other records stay as they were)."""
    record = Record({
        "model": model,
        "experiment": experiment,
        "repeat": repeat,
        "iterations_per_run": iterations_per_run,
        "metrics": {},
        "timestamp": timestamp,
        "verification_code": VerificationCode.VERIFIER_SKIPPED,
        "accuracy": None,  # results/accuracy_status.py's name, set once the record is final
        "schema_version": SCHEMA_VERSION,
        "status": RecordStatus.OK,
        "error": None,
        "warmup": warmup,
        "requested_batch_size": requested_batch_size,
        "verify": bool(verify),
    })
    if golden:
        record["golden_request"] = golden
    record.update(diagnostics={}, artifacts={}, environment=environment)
    return record



def config_record(model: dict, experiment, options, environment: dict) -> Record:
    """The new record of one config (an ExperimentConfig) run with `options` (RunOptions): where every record
    of the parent (failure, skip) and of the child starts."""
    return new_record(model, experiment.to_dict(), repeat=options.repeat, iterations_per_run=options.iterations_per_run,
                      warmup=options.warmup, timestamp=options.timestamp, verify=options.verify.enabled,
                      requested_batch_size=experiment.batch_size, environment=environment,
                      golden=options.golden.request())

def short_message(text: str, limit: int = 400) -> str:
    """One readable line: the first non-empty line of `text`, cut to `limit` characters."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def mark_failed(record: dict, status: RecordStatus, error_type: str, message: str, phase: str,
                log_path: Optional[str] = None,
                verification_code: VerificationCode = VerificationCode.VERIFIER_DIDNT_RUN) -> dict:
    """Turn `record` into a failure record; metrics already measured are kept beside upstream's error text."""
    message = short_message(message) or error_type
    record["status"] = status
    record["error"] = {"type": error_type, "message": message, "phase": phase, "log": log_path}
    record["metrics"]["error"] = f"{error_type}: {message}" if status != RecordStatus.SKIP else f"SKIP: {message}"
    record["verification_code"] = verification_code
    return record


class InputError(ValueError):
    """A results path that names nothing readable; the message is one line for the user."""


def expand_input_paths(paths: list, recursive: bool = False, skip_basename: Optional[str] = None) -> list:
    """Results files named by files, directories (their *.jsonl; all below with `recursive`) and glob
    patterns, in the order given, each file once (by its real path)."""
    import glob

    found = []
    for arg in paths:
        if os.path.isdir(arg):
            below = folder_walk.files_below(arg, ".jsonl", folder_walk.MAX_DEPTH if recursive else 0)
            matches = [p for p in below if os.path.basename(p) != skip_basename]  # each folder once: links can loop
            if not matches:
                raise InputError(f"no *.jsonl results file in {arg}")
        elif os.path.exists(arg):
            refused = not_regular(arg, os.stat(arg).st_mode)  # a FIFO or device: read, it blocks or never ends
            if refused:
                raise InputError(refused)
            matches = [arg]
        elif any(char in arg for char in "*?["):
            matches = sorted(p for p in glob.glob(arg, recursive=True) if os.path.isfile(p))
            if not matches:
                raise InputError(f"{arg} matches no file")
        else:
            raise InputError(f"no such file: {arg}")
        found.extend(matches)
    seen, unique = set(), []
    for path in found:  # a file named twice (by itself and by its directory) is read once
        if os.path.realpath(path) not in seen:
            seen.add(os.path.realpath(path))
            unique.append(path)
    return unique


def read_results_files(files: list, label: str = "", reader=None) -> list:
    """Every usable record of every file, in order. Bad lines and records the shared validation refuses
    (record_check.py) are logged and skipped; a file that can't be read, or that has lines but no usable record
    at all, is an InputError ("<path>: no usable record (first problem: ...)"). An empty file holds no records
    (logged): the caller says whether that leaves anything to report. `reader`: iter_records' stand-in (one that
    reads other files too: results/oss_v3_records.iter_records)."""
    prefix = f"{label}: " if label else ""
    out = []
    for path in files:
        problems: list = []
        try:
            found = list(usable_records(path, (reader or iter_records)(path, problems), problems))
        except OSError as exc:
            raise InputError(f"{prefix}cannot read {path}: {exc.strerror or exc}") from None
        if problems and not found:
            raise InputError(no_usable_record(path, problems[0], prefix))
        for problem in problems:
            log.warning("%sskipped %s", prefix, problem)
        if not found:
            log.warning("%s%s holds no records", prefix, path)
        out.extend(found)
    return out


def no_usable_record(path: str, first: "ReadProblem", prefix: str = "") -> str:
    """The one line of every tool for a file with lines but not one usable record (docs/command-line.md, exit 2)."""
    return f"{prefix}{path}: no usable record (first problem: line {first.line}: {first.message})"
