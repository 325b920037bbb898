"""result_analyzer.py's library: results files -> one report row per record, as CSV or JSON Lines, and the
long-lived CSV database the rows are appended to.

Row layout (README, "result_analyzer.py"): upstream PyTorch/XLA's 20 columns, then ours, then
min_/median_/max_/mean_/std_ per metric in METRIC_ORDER (then other metrics by name), then the numeric
entries of dict-valued metrics as `name.key` columns, then the environment. Statistics come from
benchmarks.stats, the module aggregate.py uses too.

Speed (scripts/bench_analyzer.py measures it): a file is cut into byte ranges that worker processes read
on their own. Each range is parsed with orjson, record by record; every few hundred records their metrics
become 2-D numpy arrays (one per metric and sample count) while the parsed objects are still in the CPU's
cache, then the objects are freed. Statistics are computed per column, for a whole range at once, and
rows are formatted by orjson (pandas' to_csv spends microseconds on each float cell). Each range's rows
go to a spool file; the report is the header plus the spool files in order. Memory is bounded by the
range size times the number of workers, whatever the number of records.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import gc
import io
import itertools
import json
import logging
import mmap
import os
import re
import shutil
import tempfile
from operator import itemgetter
from typing import Optional

import numpy as np
import orjson

from benchmarks import records, stats

try:  # built by `pip install -e .` (setup.py) when a C compiler is there; the Python reader otherwise
    from benchmarks import _jsonl_scan
except ImportError:
    _jsonl_scan = None

log = logging.getLogger("benchmarks.analyze")

# Upstream's result_analyzer.py columns: same names, same order, so its readers keep working.
UPSTREAM_COLUMNS = (
    "timestamp", "suite_name", "model_name", "accelerator", "accelerator_model", "xla", "xla_flags", "dynamo",
    "torch_xla2", "test", "batch_size", "repeat", "iterations_per_run", "error_message", "median_total_time",
    "median_per_iter_time", "xla_median_trace_per_iter_time", "xla_compile_time", "dynamo_compile_time",
    "outputs_file",
)
OUR_COLUMNS = ("status", "error_type", "error_phase", "verification_code", "verification_mean_rel_error", "warmup")
# --verify's other figures (benchmarks/verify.py), after ours: mean_rel_error alone does not say how far off.
VERIFICATION_COLUMNS = ("verification_max_abs_error", "verification_cosine_similarity", "verification_tolerance",
                        "verification_message")
FIXED_COLUMNS = UPSTREAM_COLUMNS + OUR_COLUMNS + VERIFICATION_COLUMNS
# A config's keys beyond the eight above (enable_functionalization, a suite's own matrix axes such as
# microbench's dtype) become experiment_<key> columns after the fixed ones: rows of two configs always
# differ somewhere. Upstream's obsolete experiment_name (always "run_all") does not.
EXPERIMENT_PREFIX = "experiment_"
# The record's `environment` keys, and their columns (last in a row).
ENV_KEYS = ("python", "torch", "torch_xla", "torchvision", "numpy", "git_commit", "hostname")
ENV_COLUMNS = ("python_version", "torch_version", "torch_xla_version", "torchvision_version", "numpy_version",
               "git_commit", "hostname")
# Metrics in the order of their statistics columns; metrics not named here follow, sorted by name.
METRIC_ORDER = (
    "total_time", "per_iter_time", "trace_total_time", "trace_per_iter_time", "xla_CompileTime_time_s",
    "xla_CompileTime_number", "xla_ExecuteTime_time_s", "xla_ExecuteTime_number", "warmup_time", "peak_rss_bytes",
    "total_cpu_time_s", "total_cuda_time_s", "per_iter_cpu_time_s", "per_iter_cuda_time_s",
)
STATISTICS = stats.STATISTICS
# Upstream's analyzer drops one sample from mean/std of records without a warm-up (ours have one).
SKIP_WITHOUT_WARMUP = 1
REPORT_BASENAME = "metric_report"
DEFAULT_CHUNK_BYTES = 8 << 20
MIN_CHUNK_BYTES = 1 << 20

# A row is these segments, in this order (the numeric ones are formatted for many rows at once).
_HEADLINE = UPSTREAM_COLUMNS[14:19]  # median_total_time .. dynamo_compile_time
_SEGMENT_B = UPSTREAM_COLUMNS[19:] + OUR_COLUMNS  # outputs_file, status .. warmup
_FIXED_INDEX = {name: i for i, name in enumerate(FIXED_COLUMNS)}
_ENV_INDEX = {name: i for i, name in enumerate(ENV_COLUMNS)}
_METRIC_INDEX = {name: i for i, name in enumerate(METRIC_ORDER)}
_STAT_COLUMN = re.compile(r"^(min|median|max|mean|std)_(.+)$")
# The line of a Python traceback (or of any stderr) that names what went wrong: "SomeError: message".
_EXCEPTION_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failed|Failure"
                             r"|Timeout|Expired))(?::\s|:?$)")
_FLATTEN_DEPTH = 4


class AnalyzeError(Exception):
    """Bad input (no file, no valid record, a database that is not one): one line, exit status 2."""


# ---------------------------------------------------------------- columns


def _metric_rank(metric: str) -> tuple:
    return (0, _METRIC_INDEX[metric]) if metric in _METRIC_INDEX else (1, metric)


def metric_columns(metric: str) -> list:
    """A metric's statistics columns; a median already among the fixed columns is not repeated."""
    return [name for name in (f"{s}_{metric}" for s in STATISTICS) if name not in _FIXED_INDEX]


def _column_key(name: str) -> tuple:
    if name in _FIXED_INDEX:
        return (0, _FIXED_INDEX[name])
    if name.startswith(EXPERIMENT_PREFIX):
        return (0, len(FIXED_COLUMNS), name)
    if name in _ENV_INDEX:
        return (4, _ENV_INDEX[name])
    if "." in name:  # a dict-valued metric's entry
        return (2, name)
    match = _STAT_COLUMN.match(name)
    if match:
        return (1, _metric_rank(match.group(2)), STATISTICS.index(match.group(1)))
    return (3,)  # a column we did not make (a database's own): kept, in its order, before the environment


def order_columns(names) -> list:
    """The documented column order for any set of column names (stable for names it does not know)."""
    return sorted(dict.fromkeys(names), key=_column_key)


# ---------------------------------------------------------------- cells


def _cell(value) -> str:
    """One CSV cell: empty for null, Python's spelling of numbers and booleans, one line of text, quoted
    only when it must be."""
    if value is None:
        return ""
    kind = type(value)
    if kind is str:
        text = value
    elif kind is bool:
        return "True" if value else "False"
    elif kind is int or kind is float:
        return repr(value)
    else:  # a list or object where a scalar belongs: its JSON text
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    if "\n" in text or "\r" in text:
        text = " ".join(text.split())
    if "," in text or '"' in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def _cells(values) -> str:
    return ",".join(map(_cell, values))


def _numbers_piece(matrix: np.ndarray):
    """A float matrix as a piece of _join_rows: orjson's text of it (NaN cells empty), or its rows one by one
    when it holds an infinity (orjson writes null for it, and it must stay visible)."""
    if not matrix.shape[1]:
        return b""
    text = orjson.dumps(np.ascontiguousarray(matrix), option=orjson.OPT_SERIALIZE_NUMPY)
    if not np.isinf(matrix).any():
        return (text,)
    rows = _matrix_rows(text)
    for r in np.flatnonzero(np.isinf(matrix).any(axis=1)).tolist():
        rows[r] = ",".join("" if v != v else repr(v) for v in matrix[r].tolist()).encode()
    return rows


def _matrix_rows(text: bytes) -> list:
    """The rows of orjson's text of a float matrix, as CSV cells (null empty)."""
    return text[2:-2].replace(b"null", b"").split(b"],[")


def _join_rows(pieces: list, n_rows: int, as_list: bool, compiled: bool):
    """Each row: its pieces joined by commas. A piece is bytes (in every row), a list (a cell per row),
    (orjson's text of a float matrix,) or (cells, int32 index of each row's cell). as_list: a list of rows; else the rows as one text, each ending
    with a newline. The compiled module does it without the intermediate objects; same result."""
    if compiled:
        return _jsonl_scan.join_rows(pieces, n_rows, as_list)
    columns = [itertools.repeat(piece, n_rows) if type(piece) is bytes else
               piece if type(piece) is list else _matrix_rows(piece[0]) if len(piece) == 1 else
               list(map(piece[0].__getitem__, np.asarray(piece[1]).tolist())) for piece in pieces]
    rows = list(map(b",".join, zip(*columns)))
    if as_list:
        return rows
    rows.append(b"")
    return b"\n".join(rows)


def _statistics_cells(n_rows: int, units: list, compiled: bool) -> list:
    """The statistics cells of each row (bytes, every unit's columns, empty where a row lacks the unit).

    Rows are grouped by the units they have. In a group, each run of units it has is formatted in one call
    (a table two metrics share, in one call for both), and each run it lacks is commas: formatting NaN and
    removing it would cost more."""
    presence = np.zeros((n_rows, len(units)), dtype=bool)
    position = np.zeros((n_rows, len(units)), dtype=np.intp)  # a row's index in a unit's table
    for u, (_, rows, _) in enumerate(units):
        presence[rows, u] = True
        position[rows, u] = np.arange(len(rows))
    if len(units) < 63:
        _, group_of_row = np.unique(presence @ (np.int64(1) << np.arange(len(units), dtype=np.int64)),
                                    return_inverse=True)
    else:
        _, group_of_row = np.unique(np.packbits(presence, axis=1), axis=0, return_inverse=True)
    group_of_row = group_of_row.ravel()
    order = np.argsort(group_of_row, kind="stable")
    bounds = np.flatnonzero(np.diff(group_of_row[order])) + 1
    uses = collections.Counter(id(table) for _, _, table in units)
    cells = np.empty(n_rows, dtype=object)
    for members in np.split(order, bounds):
        has = presence[members[0]]
        pieces, run, shared = [], [], {}

        def close_run() -> None:
            if run:
                tables = [units[i][2][position[members, i]] for i in run]
                pieces.append(_numbers_piece(tables[0] if len(tables) == 1 else np.hstack(tables)))
                run.clear()

        for u, (names, _, table) in enumerate(units):
            if not has[u]:
                close_run()
                pieces.append(b"," * (len(names) - 1))
            elif uses[id(table)] > 1:  # formatted once for every unit that has it
                close_run()
                piece = shared.get(id(table))
                if piece is None:
                    piece = shared[id(table)] = _numbers_piece(table[position[members, u]])
                pieces.append(piece)
            else:
                run.append(u)
        close_run()
        cells[members] = _join_rows(pieces, len(members), True, compiled)
    return cells.tolist()


def _one_line(text: str) -> str:
    """The line of a (possibly multi-line) error text that says what went wrong, cut to one short line."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if len(lines) > 1:
        # Upstream stored a child's whole stderr; its first line is rarely the error, the last exception line is.
        for line in reversed(lines):
            if _EXCEPTION_LINE.match(line):
                return records.short_message(line)
        if any(line.startswith("Traceback (most recent call last)") for line in lines):
            return records.short_message(lines[-1])
    return records.short_message(lines[0]) if lines else ""


def _error_fields(error, metrics: dict, status: str) -> tuple:
    """(message, type, phase) of a record: ours from `error`, upstream's from the text in metrics.error."""
    if isinstance(error, dict):
        message = error.get("message")
        return (_one_line(message) if message else None), error.get("type"), error.get("phase")
    text = metrics.get("error")
    if text is None:
        return None, None, None
    message = _one_line(text)
    match = _EXCEPTION_LINE.match(message)
    error_type = match.group(1).rsplit(".", 1)[-1] if match else None
    if error_type is None and status == records.STATUS_TIMEOUT:
        error_type = "Timeout"
    return message, error_type, None


# ---------------------------------------------------------------- problems


class Problems:
    """Problems found in one file, each kind reported once: its first lines and how many there were."""

    MAX_LINES = 5

    def __init__(self):
        self.found = {}  # key -> [message, lines, count, level]

    def add(self, key, line: int, message: str, level: int = logging.WARNING) -> None:
        entry = self.found.get(key)
        if entry is None:
            self.found[key] = [message, [line], 1, level]
        else:
            entry[2] += 1
            if len(entry[1]) < self.MAX_LINES:
                entry[1].append(line)

    def merge(self, other: "Problems", line_offset: int) -> None:
        for key, (message, lines, count, level) in other.found.items():
            entry = self.found.get(key)
            lines = [line + line_offset for line in lines]
            if entry is None:
                self.found[key] = [message, lines[: self.MAX_LINES], count, level]
            else:
                entry[2] += count
                entry[1].extend(lines[: self.MAX_LINES - len(entry[1])])

    def lines(self, path: str) -> list:
        """(level, text) per kind, in the order of their first line: `path:line: message (also ...)`."""
        out = []
        for message, lines, count, level in sorted(self.found.values(), key=lambda entry: entry[1][0]):
            text = f"{path}:{lines[0]}: {message}"
            if count > 1:
                more = count - len(lines)
                text += f" (also line{'s' if count > 2 else ''} {', '.join(map(str, lines[1:]))}"
                text += f" and {more} more)" if more else ")"
            out.append((level, text))
        return out

    def __len__(self) -> int:
        return sum(entry[2] for entry in self.found.values() if entry[3] >= logging.WARNING)


# ---------------------------------------------------------------- one byte range of one file


@dataclasses.dataclass
class ChunkTask:
    path: str
    start: int
    end: int
    fallback_timestamp: float
    hide_errors: bool = False
    index: int = 0  # its place among all ranges: its rows are written in this turn
    want_csv: bool = True  # write this range's CSV rows
    want_jsonl: bool = False  # write its JSON lines
    compiled: bool = False  # read with the compiled reader (benchmarks/_jsonl_scan.c)


@dataclasses.dataclass
class ChunkResult:
    lines: int  # lines in the range, for the line numbers of the next one
    rows: int
    columns: tuple  # the CSV columns of this range's rows
    problems: Problems
    statuses: dict
    spool: Optional[str] = None  # where its CSV rows wait, when they could not go to the report in turn


def _loads_lenient(raw: bytes):
    """Python's json writes NaN and Infinity, which orjson refuses; the standard parser reads them."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return exc
    except RecursionError:  # nested deeper than any record: invalid here, never a crashed worker
        return ValueError("nested too deeply")


def _flatten(prefix: str, value: dict, out: dict, depth: int = 0) -> None:
    """The numeric leaves of a dict-valued metric (dynamo counters, per-operator tables) as prefix.key."""
    for key, item in value.items():
        name = f"{prefix}.{key}"
        kind = type(item)
        if kind is dict and depth < _FLATTEN_DEPTH:
            _flatten(name, item, out, depth + 1)
        elif kind is int or kind is float:
            out[name] = item


# The top-level keys a row needs: the compiled reader hands back each one's raw text, the Python reader its value.
_TOP_KEYS = ("model", "experiment", "metrics", "timestamp", "repeat", "iterations_per_run", "status", "error",
             "outputs_file", "verification_code", "verification_mean_rel_error", "warmup", "environment",
             "artifacts") + VERIFICATION_COLUMNS
(_K_MODEL, _K_EXPERIMENT, _K_METRICS, _K_TIMESTAMP, _K_REPEAT, _K_ITERATIONS, _K_STATUS, _K_ERROR, _K_OUTPUTS,
 _K_VERIFICATION, _K_REL_ERROR, _K_WARMUP, _K_ENVIRONMENT, _K_ARTIFACTS) = range(14)
_K_VERIFICATION_FIGURES = tuple(range(14, len(_TOP_KEYS)))  # VERIFICATION_COLUMNS, each its own value
# What a row's outcome depends on (everything but the relative error, which differs per record).
_OUTCOME_FIELDS = (_K_REPEAT, _K_ITERATIONS, _K_OUTPUTS, _K_ARTIFACTS, _K_STATUS, _K_ERROR, _K_VERIFICATION,
                   _K_WARMUP, _K_METRICS)
_MODEL_KEYS = UPSTREAM_COLUMNS[1:3]  # suite_name, model_name
_EXPERIMENT_KEYS = UPSTREAM_COLUMNS[3:11]  # accelerator .. batch_size
_RUN_KEYS = UPSTREAM_COLUMNS[11:13]  # repeat, iterations_per_run
_SEGMENT_B1 = _SEGMENT_B[:-2]  # outputs_file .. verification_code; then verification_mean_rel_error, warmup
_NO_ENV = (None,) * len(ENV_KEYS)
_STATUSES = frozenset(records.STATUSES)
_LIST_ONLY = {list}
_MEDIAN, _MAX = STATISTICS.index("median"), STATISTICS.index("max")
# Per-iteration metrics equal to their totals when a run has one iteration (upstream's default): computed once.
_SAME_AS = {"per_iter_time": "total_time", "trace_per_iter_time": "trace_total_time",
            "per_iter_cpu_time_s": "total_cpu_time_s", "per_iter_cuda_time_s": "total_cuda_time_s"}


def _values_entry(values: tuple) -> tuple:
    """(values, their CSV text)."""
    return values, _cells(values).encode()


def _model_entry(model: dict) -> tuple:
    return _values_entry((model.get("suite_name"), model.get("model_name")))


_NOT_EXTRA_EXPERIMENT_KEYS = frozenset(_EXPERIMENT_KEYS + ("experiment_name",))


def _experiment_entry(experiment: dict) -> tuple:
    """(values, CSV text, xla?, dynamo?, {its other keys: value}) of an experiment config."""
    values = tuple(map(experiment.get, _EXPERIMENT_KEYS))
    extra = {key: value for key, value in experiment.items() if key not in _NOT_EXTRA_EXPERIMENT_KEYS}
    return values, _cells(values).encode(), bool(values[2]), bool(values[4]), extra


def _environment_entry(environment) -> tuple:
    return _values_entry(tuple(map(environment.get, ENV_KEYS)) if type(environment) is dict else _NO_ENV)


def _outcome_entry(values: list, hide_errors: bool) -> tuple:
    """(repeat, iterations_per_run, outputs_file, status, error_type, error_phase, verification_code, warmup),
    the CSV text of the first two, of outputs_file .. verification_code, of warmup; the error message, and
    whether `metrics` was something other than an object."""
    repeat, iterations, outputs_file, artifacts, status, error, verification, warmup, metrics = values
    odd_metrics = metrics is not None and type(metrics) is not dict
    if type(metrics) is not dict:
        metrics = {}
    if status not in _STATUSES:
        status = records.record_status({"status": status, "metrics": metrics})
    if error is None and "error" not in metrics:
        message = error_type = phase = None
    else:
        message, error_type, phase = _error_fields(error, metrics, status)
        if hide_errors:
            message = None
    if outputs_file is None and artifacts and type(artifacts) is dict:
        outputs_file = artifacts.get("output")
    row = (repeat, iterations, outputs_file, status, error_type, phase, verification, warmup)
    return (row, _cells(row[:2]).encode(), _cells(row[2:7]).encode(), _cell(warmup).encode(), message,
            odd_metrics)


_NO_ERROR = object()


def _metrics_outcomes(values: list) -> tuple:
    """(one `metrics` value per distinct outcome they lead to, that index for each value): an outcome looks
    only at whether `metrics` is an object, and at its error text."""
    index, representatives = {}, []
    of_value = np.empty(len(values), dtype=np.int32)
    for position, value in enumerate(values):
        if type(value) is dict:
            key = ("object", value.get("error", _NO_ERROR))
        else:
            key = ("other", type(value), value)
        try:
            hash(key)
        except TypeError:  # an error text that is an object: not shared
            key = ("unshared", position)
        found = index.get(key)
        if found is None:
            found = index[key] = len(representatives)
            representatives.append(value)
        of_value[position] = found
    return representatives, of_value


def _combinations(columns: list, sizes: list) -> tuple:
    """The distinct combinations of index columns (column k's values below sizes[k]): (one row of indexes per
    combination, each row's combination as int32). Mixed-radix keys, made dense again before they could
    overflow: one sort of integers (np.unique over rows would sort tuples, ten times slower)."""
    key, size = np.zeros(len(columns[0]), dtype=np.int64), 1
    for column, cardinality in zip(columns, sizes):
        if size * cardinality >= 1 << 62:
            distinct, key = np.unique(key, return_inverse=True)
            key, size = key.ravel().astype(np.int64), len(distinct)
        key = key * cardinality + column
        size *= cardinality
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return np.stack(columns, axis=1)[first], inverse.ravel().astype(np.int32)


def _python_scan(data) -> tuple:
    """What the compiled reader returns, with every line left to the Python reader."""
    lengths = [len(line) for line in io.BytesIO(data).readlines()]  # memchr: three times faster than split
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    fields = [([], np.full(len(lengths), -1, dtype=np.int32)) for _ in _TOP_KEYS]
    return offsets, bytes([1]) * len(lengths), fields, [], b"", b"", b"", b"", b""


class _Table:
    """The rows of one byte range. The compiled reader gives, per key a row needs, the distinct raw texts of
    its value and each line's index into them, and the numeric metrics as float64 arrays: each distinct
    value (a sweep repeats models, configs, outcomes, environments) is parsed and formatted once per range,
    rows hold indexes, and statistics are computed and formatted per column, for all rows at once. Lines it
    leaves (and every line without it) are read by orjson, their values added as distinct values."""

    def __init__(self, task: ChunkTask, problems: Problems):
        self.task = task
        self.problems = problems
        self.lines = []  # per row: its line in the range (0-based)
        self.values = []  # per key: its distinct values (the last one: absent)
        self.ids = []  # per key: per row, the index of its value (int32)
        self.cells = {}  # per key: the CSV cell of each distinct value
        self.outcomes, self.outcome_ids = [], None  # distinct outcome entries (_outcome_entry), per row
        self.xla = self.dynamo = np.zeros(0, dtype=bool)
        self.experiment_keys = []  # the configs' keys beyond upstream's, sorted: experiment_<key> columns
        self.skips = np.zeros(0, dtype=np.intp)
        self.statuses = {}
        self.blocks = {}  # (metric, samples per record) -> [(rows, 2-D samples)]
        self.flat = {}  # a dict-valued metric's column -> (rows, values)
        self.aliases = {}  # metric -> the metric whose samples it has in every row
        self._samples = None  # the compiled reader's values

    # -- reading

    def read(self, data, compiled: bool) -> int:
        """Every line of the range (the last may lack its newline); returns the number of lines."""
        scanned = _jsonl_scan.scan(data, _TOP_KEYS, "metrics") if compiled else _python_scan(data)
        offsets, line_status, fields, names, m_line, m_name, m_start, m_count, values = scanned
        offsets = np.frombuffer(offsets, dtype=np.int64) if compiled else offsets
        n_lines = len(offsets) - 1
        status = np.frombuffer(line_status, dtype=np.uint8)
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        # Each distinct text parsed once; one orjson refuses sends its lines to the Python reader.
        parsed, ids, slow = [], [], set(np.flatnonzero(status == 1).tolist())
        for texts, line_ids in fields:
            column = []
            refused = []
            for index, text in enumerate(texts):
                try:
                    column.append(loads(text))
                except decode_error:
                    column.append(None)
                    refused.append(index)
            line_ids = np.frombuffer(line_ids, dtype=np.int32).copy() if compiled else line_ids
            if refused:
                slow.update(np.flatnonzero(np.isin(line_ids, refused)).tolist())
            parsed.append(column)
            ids.append(line_ids)
        dropped = self._read_slow_lines(data, offsets, sorted(slow), parsed, ids)
        rows = self._rows(n_lines, status, parsed, ids, dropped)
        if not rows:
            return n_lines
        same_text = self._absorb_compiled(rows, n_lines, names, m_line, m_name, m_start, m_count, values)
        object_metrics = self._absorb_objects()
        self._settle_aliases(same_text, object_metrics)
        self._alias_equal_metrics()
        return n_lines

    def _read_slow_lines(self, data, offsets, lines: list, parsed: list, ids: list) -> set:
        """Read the given lines with orjson (json for NaN), each value added to the distinct values of its key;
        returns the lines that are no record (each reported, but blank lines)."""
        loads, decode_error, problems = orjson.loads, orjson.JSONDecodeError, self.problems
        n_lines = len(offsets) - 1
        torn = n_lines - 1 if n_lines and data[-1:] != b"\n" else -1
        dropped = set()
        # A value met before on another line shares its index (as the compiled reader's distinct texts do):
        # each distinct one is then formatted once. Keys: the value for scalars, orjson's text for objects.
        known = [{} for _ in _TOP_KEYS]
        found = [([], []) for _ in _TOP_KEYS]  # per key: the lines that have it, and their value's index
        lenient = False
        if lines:
            for line_ids in ids:
                line_ids[lines] = -1
        for index in lines:
            raw = bytes(data[offsets[index]:offsets[index + 1]])
            try:
                record = loads(raw)
                lenient = False
            except decode_error:
                if raw.isspace():
                    dropped.add(index)
                    continue  # a blank line is not a problem
                record = _loads_lenient(raw)
                lenient = True  # NaN inside: orjson would write it as null, so no text key
                if isinstance(record, Exception):
                    if index == torn:
                        problems.add("torn", index, "torn last line (its writer was interrupted); skipped")
                    else:
                        problems.add("invalid-json", index, f"invalid JSON ({record}); line skipped")
                    dropped.add(index)
                    continue
            if type(record) is not dict:
                problems.add("not-object", index, "not a JSON object; line skipped")
                dropped.add(index)
                continue
            for k, (name, column) in enumerate(zip(_TOP_KEYS, parsed)):
                if name not in record:
                    continue
                value = record[name]
                kind = type(value)
                if kind is dict or kind is list:
                    key = None if lenient or k == _K_METRICS else orjson.dumps(value)  # samples: never shared
                else:
                    key = (kind, value)
                position = known[k].get(key) if key is not None else None
                if position is None:
                    position = len(column)
                    column.append(value)
                    if key is not None:
                        known[k][key] = position
                found[k][0].append(index)
                found[k][1].append(position)
        for line_ids, (indexes, positions) in zip(ids, found):
            if indexes:
                line_ids[indexes] = positions
        return dropped

    def _rows(self, n_lines: int, status: np.ndarray, parsed: list, ids: list, dropped: set) -> list:
        """The lines that are records (a model and an experiment object), with what their rows need per
        distinct value; returns their lines."""
        problems, hide_errors = self.problems, self.task.hide_errors
        present = [line_ids >= 0 for line_ids in ids]
        for column, line_ids in zip(parsed, ids):  # the last value of each key: absent
            line_ids[line_ids < 0] = len(column)
            column.append(None)
        is_dict = [np.fromiter((type(value) is dict for value in parsed[k]), dtype=bool, count=len(parsed[k]))
                   for k in (_K_MODEL, _K_EXPERIMENT)]
        is_record = is_dict[0][ids[_K_MODEL]] & is_dict[1][ids[_K_EXPERIMENT]]
        if not is_record.all():
            for index in np.flatnonzero(~is_record & (status != 2)).tolist():
                if index not in dropped:
                    problems.add("not-record", index, "not a benchmark record (no model and experiment objects); "
                                 "skipped")
        rows = np.flatnonzero(is_record)
        if not len(rows):
            return []
        if len(rows) < n_lines:
            ids = [line_ids[rows] for line_ids in ids]
            present = [flags[rows] for flags in present]
        # Outcomes: each distinct combination of the values they depend on.
        # What an outcome needs of `metrics` is its type and its error text: records with the same share one.
        metrics_outcomes, metrics_outcome_of = _metrics_outcomes(parsed[_K_METRICS])
        columns = [metrics_outcome_of[ids[k]] if k == _K_METRICS else ids[k] for k in _OUTCOME_FIELDS]
        sizes = [len(metrics_outcomes) if k == _K_METRICS else len(parsed[k]) for k in _OUTCOME_FIELDS]
        combinations, outcome_ids = _combinations(columns, sizes)
        # Every distinct value (or combination) reduced once; one that cannot be costs its rows, never the report.
        unreadable = {}

        def entries(k: int, make, values: list, used: np.ndarray) -> list:
            out = [None] * len(values)
            for index in np.flatnonzero(used).tolist():
                try:
                    out[index] = make(values[index])
                except Exception as exc:  # input we did not foresee
                    unreadable[(k, index)] = exc
            return out

        def used(k: int) -> np.ndarray:
            flags = np.zeros(len(parsed[k]), dtype=bool)
            flags[ids[k]] = True
            return flags

        models = entries(_K_MODEL, _model_entry, parsed[_K_MODEL], used(_K_MODEL))
        experiments = entries(_K_EXPERIMENT, _experiment_entry, parsed[_K_EXPERIMENT], used(_K_EXPERIMENT))
        environments = entries(_K_ENVIRONMENT, _environment_entry, parsed[_K_ENVIRONMENT], used(_K_ENVIRONMENT))
        outcome_values = [[metrics_outcomes[i] if k == _K_METRICS else parsed[k][i]
                           for k, i in zip(_OUTCOME_FIELDS, combination)] for combination in combinations.tolist()]
        outcomes = entries(-1, lambda values: _outcome_entry(values, hide_errors), outcome_values,
                           np.ones(len(outcome_values), dtype=bool))
        if unreadable:
            keep = np.ones(len(rows), dtype=bool)
            for (k, index), exc in sorted(unreadable.items(), key=lambda item: item[0]):
                hit = (outcome_ids if k < 0 else ids[k]) == index
                for position in np.flatnonzero(hit & keep).tolist():
                    problems.add(("unreadable", type(exc).__name__), int(rows[position]), f"record skipped: "
                                 f"{type(exc).__name__}: {records.short_message(str(exc))}")
                keep &= ~hit
            rows, outcome_ids = rows[keep], outcome_ids[keep]
            ids = [line_ids[keep] for line_ids in ids]
            present = [flags[keep] for flags in present]
            if not len(rows):
                return []
        self.lines = rows.tolist()
        self.values, self.ids = parsed, ids
        self.outcomes, self.outcome_ids = outcomes, outcome_ids
        empty = b""
        self.cells = {
            _K_MODEL: [entry[1] if entry else empty for entry in models],
            _K_EXPERIMENT: [entry[1] if entry else empty for entry in experiments],
            _K_ENVIRONMENT: [entry[1] if entry else empty for entry in environments],
        }
        self.entries = {_K_MODEL: models, _K_EXPERIMENT: experiments, _K_ENVIRONMENT: environments}
        self.experiment_keys = sorted({key for entry in experiments if entry for key in entry[4]})
        flags = [(entry[2], entry[3]) if entry else (False, False) for entry in experiments]
        self.xla = np.array([flag[0] for flag in flags], dtype=bool)[ids[_K_EXPERIMENT]]
        self.dynamo = np.array([flag[1] for flag in flags], dtype=bool)[ids[_K_EXPERIMENT]]
        counts = np.bincount(outcome_ids, minlength=len(outcomes))
        for entry, count, combination in zip(outcomes, counts.tolist(), range(len(outcomes))):
            if not count or entry is None:
                continue
            self.statuses[entry[0][3]] = self.statuses.get(entry[0][3], 0) + count
            if entry[5]:
                for position in np.flatnonzero(outcome_ids == combination).tolist():
                    problems.add("metrics-type", self.lines[position],
                                 "`metrics` is not an object; the row has no statistics")
        # Ours have a warm-up (the key, or a warmup_time metric); upstream's treat their first sample as one.
        has_warmup = present[_K_WARMUP].copy()
        metrics = parsed[_K_METRICS]
        with_warmup_time = [i for i, value in enumerate(metrics) if type(value) is dict and "warmup_time" in value]
        if with_warmup_time:
            has_warmup |= np.isin(ids[_K_METRICS], with_warmup_time)
        self.skips = np.where(has_warmup, 0, SKIP_WITHOUT_WARMUP).astype(np.intp)
        return self.lines

    def _absorb_compiled(self, rows: list, n_lines: int, names: list, m_line, m_name, m_start, m_count,
                         values) -> dict:
        """The compiled reader's numeric metrics as 2-D arrays, one per metric and sample count. A metric read
        from the same text as its source in every row (per-iteration times of one-iteration runs) gets no
        arrays: returned as {metric: its entries}, for _settle_aliases."""
        if not names or not m_line:
            return {}
        line = np.frombuffer(m_line, dtype=np.intp)
        name = np.frombuffer(m_name, dtype=np.int64)
        count = np.frombuffer(m_count, dtype=np.intp)
        start = np.frombuffer(m_start, dtype=np.intp)
        samples = np.frombuffer(values, dtype=np.float64)
        if len(rows) < n_lines:  # some lines are no record: their metrics go
            row_of_line = np.full(n_lines, -1, dtype=np.intp)
            row_of_line[rows] = np.arange(len(rows))
            row = row_of_line[line]
            kept = row >= 0
            row, name, count, start = row[kept], name[kept], count[kept], start[kept]
        else:
            row = line
        per_metric = {}
        for index, metric in enumerate(names):
            chosen = np.flatnonzero(name == index)
            if chosen.size and metric != "error":  # upstream's error text, never a metric
                per_metric[metric] = (row[chosen], start[chosen], count[chosen])
        same_text = {}
        for metric, source in _SAME_AS.items():
            mine, theirs = per_metric.get(metric), per_metric.get(source)
            if mine is not None and theirs is not None and all(map(np.array_equal, mine, theirs)):
                same_text[metric] = per_metric.pop(metric)
        for metric, entries in per_metric.items():
            self._add_samples(metric, entries, samples)
        if "warmup_time" in per_metric:
            self.skips[per_metric["warmup_time"][0]] = 0
        self._samples = samples
        return same_text

    def _add_samples(self, metric: str, entries: tuple, samples: np.ndarray) -> None:
        rows, starts, counts = entries
        for length in ((int(counts[0]),) if counts.min() == counts.max() else np.unique(counts).tolist()):
            chosen = slice(None) if counts.min() == counts.max() else counts == length
            block = samples[starts[chosen, None] + np.arange(length)]
            self.blocks.setdefault((metric, length), []).append((rows[chosen], block))

    def _settle_aliases(self, same_text: dict, object_metrics: set) -> None:
        """Metrics the compiled reader found equal to their source: aliases, unless some record also has one of
        the two as an object (then their samples are compared like any others')."""
        for metric, entries in same_text.items():
            if metric in object_metrics or _SAME_AS[metric] in object_metrics:
                self._add_samples(metric, entries, self._samples)
            else:
                self.aliases[metric] = _SAME_AS[metric]

    def _absorb_objects(self) -> set:
        """Metrics the compiled reader left as objects (or every metric, on lines it did not read): arrays
        when a metric is a list of numbers of one length in every record that has the same metric names,
        else one record at a time. Returns the names of the metrics met here."""
        metrics, metric_ids = self.values[_K_METRICS], self.ids[_K_METRICS]
        wanted = [index for index, value in enumerate(metrics)
                  if type(value) is dict and any(name != "error" for name in value)]
        if not wanted:
            return set()
        groups = {}  # metric names -> ([rows], [dicts])
        positions = np.flatnonzero(np.isin(metric_ids, wanted))
        for position, index in zip(positions.tolist(), metric_ids[positions].tolist()):
            value = metrics[index]
            group = groups.get(tuple(value))
            if group is None:
                group = groups[tuple(value)] = ([], [])
            group[0].append(position)
            group[1].append(value)
        for names, (rows, dicts) in groups.items():
            rows_array = np.asarray(rows, dtype=np.intp)
            for name in names:
                if name != "error":  # upstream's error text, never a metric
                    self._convert(name, rows, rows_array, list(map(itemgetter(name), dicts)))
        return {name for names in groups for name in names}

    def _convert(self, name: str, rows: list, rows_array: np.ndarray, values: list) -> None:
        """One metric of records that have the same metric names: a 2-D array when every value is a list of
        numbers of one length (at numpy speed), else one record at a time."""
        if set(map(type, values)) == _LIST_ONLY:  # a dict or text would iterate into numbers too
            lengths = set(map(len, values))
            if len(lengths) == 1:
                length = lengths.pop()
                if not length:
                    return  # no samples: nothing to report, nothing wrong
                try:
                    array = np.fromiter(itertools.chain.from_iterable(values), dtype=np.float64,
                                        count=length * len(values))
                except (ValueError, TypeError):
                    pass
                else:
                    self.blocks.setdefault((name, length), []).append((rows_array, array.reshape(len(values),
                                                                                                 length)))
                    return
        self._samples_one_by_one(name, rows, values)

    def _samples_one_by_one(self, name: str, rows: list, values: list) -> None:
        """The slow path, for a metric some records hold as null, a scalar, a dict, text or ragged lists."""
        blocks, flat, by_length = self.blocks, self.flat, {}
        for row, value in zip(rows, values):
            kind = type(value)
            line = self.lines[row]
            if kind is dict:
                leaves = {}
                _flatten(name, value, leaves)
                for column, number in leaves.items():
                    entry = flat.setdefault(column, ([], []))
                    entry[0].append(row)
                    entry[1].append(number)
                self.problems.add(("dict", name), line, f"metric {name!r} is an object: its numbers are reported "
                                  f"as {name}.<key> columns", logging.INFO)
                continue
            if value is None:
                self.problems.add(("null", name), line, f"metric {name!r} is null; left empty")
                continue
            if kind is list and not value:
                continue
            array = stats.samples(value)
            if array is None:
                what = type(value).__name__ if kind is not list else "a list with non-numbers"
                self.problems.add(("bad", name), line, f"metric {name!r} is not a list of numbers ({what}); left empty")
                continue
            entry = by_length.setdefault(len(array), ([], []))
            entry[0].append(row)
            entry[1].append(array)
        for length, (rows_of_length, arrays) in by_length.items():
            rows_array = np.asarray(rows_of_length, dtype=np.intp)
            blocks.setdefault((name, length), []).append((rows_array, np.vstack(arrays)))

    def _samples_of(self, metric: str) -> dict:
        """{samples per record: (rows, 2-D samples)} of a metric, rows in order."""
        out = {}
        for (name, length), pieces in self.blocks.items():
            if name == metric:
                rows = np.concatenate([r for r, _ in pieces])
                samples = np.concatenate([v for _, v in pieces])
                order = np.argsort(rows, kind="stable")
                out[length] = (rows[order], samples[order])
        return out

    def _alias_equal_metrics(self) -> None:
        """A metric whose samples equal its source's in every row (per-iteration times of one-iteration runs)
        takes the source's statistics instead of computing them again."""
        present = {name for name, _ in self.blocks}
        for name, source in _SAME_AS.items():
            if name not in present or source not in present or name in self.aliases:
                continue
            mine, theirs = self._samples_of(name), self._samples_of(source)
            if mine.keys() != theirs.keys():
                continue
            if all(np.array_equal(mine[n][0], theirs[n][0]) and
                   np.array_equal(mine[n][1], theirs[n][1], equal_nan=True) for n in mine):
                self.aliases[name] = source
                for length in mine:
                    del self.blocks[(name, length)]

    def compute(self) -> tuple:
        """(headline matrix, units): a unit is (column names, rows, values) for one metric's statistics (or one
        entry of a dict-valued metric), in column order, with the rows that have it."""
        n = len(self.lines)
        blocks, flat, aliases = self.blocks, self.flat, self.aliases
        skip = self.skips
        medians = {m: np.full(n, np.nan) for m in ("total_time", "per_iter_time", "trace_per_iter_time")}
        total_max = np.full(n, np.nan)
        warmup_first = np.full(n, np.nan)
        has_warmup_time = np.zeros(n, dtype=bool)
        parts = {}  # metric -> [(rows, statistics table)]
        for (metric, _), pieces in blocks.items():
            rows = np.concatenate([r for r, _ in pieces]) if len(pieces) > 1 else pieces[0][0]
            values = np.concatenate([v for _, v in pieces]) if len(pieces) > 1 else pieces[0][1]
            if metric == "warmup_time":
                warmup_first[rows] = values[:, 0]
                has_warmup_time[rows] = True
            summary = stats.summary_rows(values, skip[rows])
            parts.setdefault(metric, []).append((rows, np.column_stack([summary[s] for s in STATISTICS])))
            for row in rows[np.isnan(summary["max"])].tolist():  # null or NaN samples (Python's json: NaN)
                self.problems.add(("nan", metric), self.lines[row], f"metric {metric!r} has null or NaN "
                                  "samples; statistics that include them are left empty")
        for name, source in aliases.items():
            if source in parts:
                parts[name] = parts[source]
        for metric, column in (("total_time", _MEDIAN), ("per_iter_time", _MEDIAN), ("trace_per_iter_time", _MEDIAN),
                               ("total_time", _MAX)):
            target = total_max if column == _MAX else medians[metric]
            for rows, table in parts.get(metric, ()):
                target[rows] = table[:, column]
        units, tables = [], {}
        for metric in sorted(parts, key=_metric_rank):
            names = metric_columns(metric)
            kept = tuple(STATISTICS.index(name.split("_", 1)[0]) for name in names)
            rows, table = tables.get((id(parts[metric]), kept)) or tables.setdefault(
                (id(parts[metric]), kept), self._unit_table(parts[metric], kept))
            units.append((tuple(names), rows, table))
        for column in sorted(flat):
            rows, values = flat[column]
            units.append(((column,), np.asarray(rows, dtype=np.intp), np.asarray(values, dtype=np.float64)[:, None]))
        xla, dynamo = self.xla, self.dynamo
        compile_time = stats.compile_time_rows(medians["total_time"], total_max, warmup_first, has_warmup_time)
        headline = np.empty((n, len(_HEADLINE)))
        headline[:, 0] = medians["total_time"]
        headline[:, 1] = medians["per_iter_time"]
        headline[:, 2] = np.where(xla, medians["trace_per_iter_time"], np.nan)  # upstream computed it, never filled it
        headline[:, 3] = np.where(xla, compile_time, np.nan)
        headline[:, 4] = np.where(dynamo, compile_time, np.nan)
        return headline, units

    @staticmethod
    def _unit_table(pieces: list, kept: tuple) -> tuple:
        rows = np.concatenate([r for r, _ in pieces]) if len(pieces) > 1 else pieces[0][0]
        table = np.concatenate([v for _, v in pieces]) if len(pieces) > 1 else pieces[0][1]
        if len(kept) < len(STATISTICS):  # a median among the fixed columns is not repeated
            table = table[:, list(kept)]
        return rows, table

    # -- output

    # -- output

    def csv_rows(self, headline: np.ndarray, units: list) -> bytes:
        """The CSV rows, each ending with a newline: each distinct value's cells formatted once, joined by
        the rows' indexes."""
        n, ids, values, outcome_ids = len(self.lines), self.ids, self.values, self.outcome_ids
        compiled, fallback = self.task.compiled, self.task.fallback_timestamp
        timestamps = [_cell(fallback if value is None else value).encode() for value in values[_K_TIMESTAMP]]
        rel_errors = [_cell(value).encode() for value in values[_K_REL_ERROR]]
        outcomes = [entry or (None, b"", b"", b"", None) for entry in self.outcomes]
        pieces = [(timestamps, ids[_K_TIMESTAMP]), (self.cells[_K_MODEL], ids[_K_MODEL]),
                  (self.cells[_K_EXPERIMENT], ids[_K_EXPERIMENT]), ([entry[1] for entry in outcomes], outcome_ids),
                  ([_cell(entry[4]).encode() for entry in outcomes], outcome_ids), _numbers_piece(headline),
                  ([entry[2] for entry in outcomes], outcome_ids), (rel_errors, ids[_K_REL_ERROR]),
                  ([entry[3] for entry in outcomes], outcome_ids)]
        pieces += [([_cell(value).encode() for value in values[k]], ids[k]) for k in _K_VERIFICATION_FIGURES]
        experiments = self.entries[_K_EXPERIMENT]
        pieces += [([_cell(entry[4].get(key)).encode() if entry else b"" for entry in experiments], ids[_K_EXPERIMENT])
                   for key in self.experiment_keys]
        if units:
            pieces.append(_statistics_cells(n, units, compiled))
        pieces.append((self.cells[_K_ENVIRONMENT], ids[_K_ENVIRONMENT]))
        return _join_rows(pieces, n, False, compiled)

    def json_lines(self, headline: np.ndarray, units: list) -> list:
        """One object per row: every fixed and environment column (null when unknown), and the statistics
        of the metrics this record has."""
        dumps, option = orjson.dumps, orjson.OPT_APPEND_NEWLINE
        statistics = [[] for _ in self.lines]
        for names, rows, table in units:
            for row, values in zip(rows.tolist(), table.tolist()):
                statistics[row].extend(zip(names, values))
        fallback, values, entries = self.task.fallback_timestamp, self.values, self.entries
        out = []
        for position, (timestamp, model, experiment, environment, rel_error, outcome_id, h, row_statistics) in enumerate(zip(
                self.ids[_K_TIMESTAMP].tolist(), self.ids[_K_MODEL].tolist(), self.ids[_K_EXPERIMENT].tolist(),
                self.ids[_K_ENVIRONMENT].tolist(), self.ids[_K_REL_ERROR].tolist(), self.outcome_ids.tolist(),
                headline.tolist(), statistics)):
            outcome = self.outcomes[outcome_id]
            timestamp = values[_K_TIMESTAMP][timestamp]
            row = {"timestamp": fallback if timestamp is None else timestamp}
            row.update(zip(_MODEL_KEYS, entries[_K_MODEL][model][0]))
            row.update(zip(_EXPERIMENT_KEYS, entries[_K_EXPERIMENT][experiment][0]))
            row.update(zip(_RUN_KEYS, outcome[0][:2]))
            row["error_message"] = outcome[4]
            row.update((name, v if v == v else None) for name, v in zip(_HEADLINE, h))
            row.update(zip(_SEGMENT_B1, outcome[0][2:7]))
            row["verification_mean_rel_error"] = values[_K_REL_ERROR][rel_error]
            row["warmup"] = outcome[0][7]
            for name, k in zip(VERIFICATION_COLUMNS, _K_VERIFICATION_FIGURES):
                row[name] = values[k][self.ids[k][position]]
            extra = entries[_K_EXPERIMENT][experiment][4]
            row.update((EXPERIMENT_PREFIX + key, extra.get(key)) for key in self.experiment_keys)
            row.update((name, v) for name, v in row_statistics if v == v)
            row.update(zip(ENV_COLUMNS, entries[_K_ENVIRONMENT][environment][0]))
            out.append(dumps(row, option=option))
        return out


def _read_range(table: "_Table", task: ChunkTask) -> int:
    """Read the task's byte range into the table, the file mapped rather than read: the scanner reads the page
    cache in place (one copy of every byte less). Returns the number of lines."""
    if task.end <= task.start:
        return table.read(b"", task.compiled)
    with open(task.path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        with memoryview(mapped)[task.start:task.end] as data:
            return table.read(data, task.compiled)


def process_chunk(task: ChunkTask) -> ChunkResult:
    """Read one byte range of a results file (whole lines) and write its report rows, in its turn."""
    csv_rows = jsonl_rows = b""
    columns = ()
    try:
        problems = Problems()
        table = _Table(task, problems)
        # Parsing makes millions of containers and frees none of them in a cycle: the collector only costs time.
        collecting = gc.isenabled()
        gc.disable()
        try:
            n_lines = _read_range(table, task)
            headline, units = table.compute()
            columns = (FIXED_COLUMNS + tuple(EXPERIMENT_PREFIX + key for key in table.experiment_keys)
                       + tuple(name for names, _, _ in units for name in names) + ENV_COLUMNS)
            if task.want_csv and table.lines:
                csv_rows = table.csv_rows(headline, units)
            if task.want_jsonl:
                jsonl_rows = b"".join(table.json_lines(headline, units))
        finally:
            if collecting:
                gc.enable()
    finally:  # the turn passes even when this range failed: the ranges after it never wait forever
        spool = _REPORT.write_in_turn(task.index, columns if csv_rows else (), csv_rows, jsonl_rows)
    return ChunkResult(lines=n_lines, rows=len(table.lines), columns=columns, problems=problems,
                       statuses=table.statuses, spool=spool)


# ---------------------------------------------------------------- inputs


def find_inputs(paths: list, output_dirname: Optional[str]) -> list:
    """The results files to read: the given files, directories (their *.jsonl) and globs, in that order;
    without any, every *.jsonl directly in output_dirname, as upstream. A JSONL report is never an input."""
    if not paths:
        if not os.path.isdir(output_dirname):
            raise AnalyzeError(f"--output-dirname {output_dirname}: no such directory")
        paths = [output_dirname]
    try:
        unique = records.expand_input_paths(paths, recursive=False, skip_basename=f"{REPORT_BASENAME}.jsonl")
    except records.InputError as exc:
        raise AnalyzeError(str(exc)) from None
    for path in unique:
        if not os.access(path, os.R_OK):
            raise AnalyzeError(f"cannot read {path}: permission denied")
    return unique


def plan_chunks(path: str, chunk_bytes: int) -> list:
    """(start, end) byte ranges of about chunk_bytes that cover the file and end after a newline."""
    size = os.path.getsize(path)
    ranges, start = [], 0
    with open(path, "rb") as handle:
        while start < size:
            end = start + chunk_bytes
            if end >= size:
                end = size
            else:
                handle.seek(end)
                end += len(handle.readline())
            ranges.append((start, end))
            start = end
    return ranges


# ---------------------------------------------------------------- the run


@dataclasses.dataclass
class Options:
    inputs: list
    output: str
    output_format: str = "csv"
    database: Optional[str] = None
    hide_errors: bool = False
    fallback_timestamp: float = 0.0
    jobs: int = 1
    reader: str = "auto"  # auto (compiled when built), compiled, python
    chunk_bytes: Optional[int] = None  # default: enough ranges to keep every worker busy, up to 8 MiB each


@dataclasses.dataclass
class Summary:
    records: int
    files: int
    problems: int
    statuses: dict
    columns: list
    output: str
    database_action: Optional[str] = None  # created, appended, rewritten (new columns)
    reader: str = "python"  # the reader that read the records: compiled or python


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _context():
    import multiprocessing

    # fork: workers start at once with everything imported (spawn would import numpy in each again).
    return multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it cancels the rest


class _Workers:
    """Runs a function over tasks, results in order: in this process for one task, else in `jobs` worker
    processes (started once, for every pass of the run)."""

    def __init__(self, jobs: int, context, report: _OrderedReport):
        self.jobs, self.context, self.report = jobs, context, report
        self.pool = None

    def map(self, function, tasks: list):
        global _REPORT
        if self.jobs <= 1 or len(tasks) <= 1:
            _REPORT = self.report
            return map(function, tasks)
        if self.pool is None:
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=self.context,
                                            initializer=_start_worker, initargs=(self.report,))
        return self.pool.map(function, tasks)

    def __enter__(self) -> "_Workers":
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _temp_path(path: str) -> str:
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.{os.getpid()}.tmp")


def _header_bytes(columns) -> bytes:
    return (_cells(columns) + "\n").encode("utf-8")


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
        reader = csv.reader(src)
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


class _OrderedReport:
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
            self._header_columns = next(csv.reader([text]))
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
                header = _header_bytes(columns)
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
        rewritten = self.csv_path + ".realigned"
        with open(rewritten, "wb") as out:
            out.write(_header_bytes(final))
            if written is not None:
                with open(self.csv_path, "rb") as src:
                    streamed = src.read(self.csv_end.value)
                _append_realigned(out, streamed, written, final, skip_header=True)
            for columns, path in spools:
                _append_realigned(out, path, columns, final)
        os.replace(rewritten, self.csv_path)
        return final

    def close(self) -> None:
        for descriptor in self._files.values():
            os.close(descriptor)
        self._files.clear()


_REPORT: Optional[_OrderedReport] = None  # this process's handle on the report being written


def _start_worker(report: _OrderedReport) -> None:
    global _REPORT
    _ignore_sigint()
    _REPORT = report


def analyze(options: Options) -> Summary:
    """Read every input, write the report (and the database rows); AnalyzeError for bad input."""
    if os.path.isdir(options.output):
        raise AnalyzeError(f"the report {options.output} is a directory")
    if options.database:
        check_database(options.database)  # before the work, not after it
    reason = records.check_writable_dir(os.path.dirname(os.path.abspath(options.output)))
    if reason:
        raise AnalyzeError(reason)
    if options.reader == "compiled" and _jsonl_scan is None:
        raise AnalyzeError("--reader=compiled: the compiled reader is not built (benchmarks/_jsonl_scan.c; "
                           "`pip install -e .` builds it when a C compiler is installed)")
    compiled = options.reader != "python" and _jsonl_scan is not None
    want_csv = options.output_format == "csv" or bool(options.database)
    want_jsonl = options.output_format == "jsonl"
    spool = tempfile.mkdtemp(prefix=".result-analyzer-", dir=os.path.dirname(os.path.abspath(options.output)))
    temp_output = _temp_path(options.output)
    report_csv = temp_output if options.output_format == "csv" else os.path.join(spool, "report.csv")
    report = None
    try:
        for path in ([report_csv] if want_csv else []) + ([temp_output] if want_jsonl else []):
            open(path, "wb").close()
        context = _context()
        report = _OrderedReport(context, report_csv if want_csv else None, temp_output if want_jsonl else None, spool)
        chunk_bytes = options.chunk_bytes or min(DEFAULT_CHUNK_BYTES, max(
            MIN_CHUNK_BYTES, sum(map(os.path.getsize, options.inputs)) // (4 * max(1, options.jobs))))
        tasks, owners = [], []
        for file_index, path in enumerate(options.inputs):
            for start, end in plan_chunks(path, chunk_bytes):
                tasks.append(ChunkTask(path, start, end, options.fallback_timestamp, options.hide_errors,
                                       len(tasks), want_csv, want_jsonl, compiled))
                owners.append(file_index)
        lines = [0] * len(options.inputs)
        rows = [0] * len(options.inputs)
        problems = [Problems() for _ in options.inputs]
        statuses, all_columns, spools = {}, {}, []
        with _Workers(options.jobs, context, report) as workers:
            # The workers write the rows; the parent gathers what the ranges say about themselves.
            for file_index, result in zip(owners, workers.map(process_chunk, tasks)):
                problems[file_index].merge(result.problems, lines[file_index] + 1)  # 1-based line numbers
                lines[file_index] += result.lines
                rows[file_index] += result.rows
                for status, count in result.statuses.items():
                    statuses[status] = statuses.get(status, 0) + count
                if result.rows:
                    all_columns.update(dict.fromkeys(result.columns))
                if result.spool:
                    spools.append((result.columns, result.spool))
        report.close()
        for path, found in zip(options.inputs, problems):
            for level, text in found.lines(path):
                log.log(level, "%s", text)
        for path, count in zip(options.inputs, rows):
            if not count and len(options.inputs) > 1:
                log.warning("%s: no valid record", path)
        if not all_columns:
            names = ", ".join(options.inputs)
            raise AnalyzeError(f"no valid record in {names}" + ("" if len(options.inputs) == 1 else " (any of them)"))
        columns = report.finish(all_columns, spools) if want_csv else order_columns(all_columns)
        os.replace(temp_output, options.output)
        if report_csv == temp_output:
            report_csv = options.output
        action = append_to_database(options.database, report_csv, columns) if options.database else None
        return Summary(records=sum(rows), files=len(options.inputs), problems=sum(map(len, problems)),
                       statuses=statuses, columns=columns, output=options.output, database_action=action,
                       reader="compiled" if compiled else "python")
    finally:
        if report is not None:
            report.close()
        shutil.rmtree(spool, ignore_errors=True)
        if os.path.exists(temp_output):
            os.unlink(temp_output)


# ---------------------------------------------------------------- the database


def check_database(path: str) -> Optional[list]:
    """The header of an existing database, None for a new (or empty) one; AnalyzeError if it is not one."""
    if os.path.isdir(path):
        raise AnalyzeError(f"--database {path} is a directory")
    if not os.path.exists(path) or not os.path.getsize(path):
        return None
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle), None)
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
    with open(lock_path, "a") as lock:
        try:
            import fcntl

            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        except ImportError:  # no flock (Windows): one analyzer at a time is then the user's business
            pass
        header = check_database(path)
        temp = _temp_path(path)
        try:
            with open(temp, "wb") as out:
                if header is None:
                    _append_file(out, report_csv)
                    action = "created"
                elif set(columns) <= set(header):
                    _append_file(out, path)
                    if not _ends_with_newline(path):
                        out.write(b"\n")
                    if list(columns) == header:
                        _append_file(out, report_csv, offset=len(_header_bytes(columns)))
                    else:
                        _append_realigned(out, report_csv, columns, header, skip_header=True)
                    action = "appended"
                else:
                    merged = order_columns(list(header) + list(columns))
                    out.write(_header_bytes(merged))
                    _append_realigned(out, path, header, merged, skip_header=True)
                    _append_realigned(out, report_csv, columns, merged, skip_header=True)
                    action = "rewritten"
                out.flush()
                os.fsync(out.fileno())
            if os.path.exists(path):
                shutil.copymode(path, temp)
            os.replace(temp, path)
        finally:
            if os.path.exists(temp):
                os.unlink(temp)
    return action


# ---------------------------------------------------------------- reading a report back


def load_report(path: str):
    """A CSV report (or database) as a pandas DataFrame: text columns as strings, the rest as numbers."""
    import pandas as pd

    text = {"suite_name", "model_name", "accelerator", "accelerator_model", "xla", "xla_flags", "dynamo",
            "torch_xla2", "test", "error_message", "outputs_file", "status", "error_type", "error_phase",
            "verification_code", *ENV_COLUMNS}
    with open(path, encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle), [])
    return pd.read_csv(path, dtype={name: "string" for name in header if name in text}, low_memory=False)
