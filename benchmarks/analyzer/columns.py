"""result_analyzer.py's columns and cells: the column layout and its documented order, one CSV cell per
value, rows joined from pieces (in C when the compiled module is built), the one-line error text, and the
problems found in a file, each kind reported once."""

from __future__ import annotations

import collections
import itertools
import logging
import re

import numpy as np
import orjson

from benchmarks.common import records, stats

COMPILED_ABI = 1  # the interface this code expects of benchmarks/analyzer/_jsonl_scan.c (its ABI constant)


def load_compiled_reader(name: str = "benchmarks.analyzer._jsonl_scan") -> tuple:
    """(the compiled reader module, None), or (None, why not): not built (no C compiler at install time), or
    built from another version of benchmarks/analyzer/_jsonl_scan.c (an update since the last `make env`)."""
    import importlib

    try:
        module = importlib.import_module(name)
    except ImportError:
        return None, "not built (benchmarks/analyzer/_jsonl_scan.c; `make env` or `pip install -e .` builds it when a C " \
                     "compiler is installed)"
    if getattr(module, "ABI", None) != COMPILED_ABI:
        return None, "built from another version of benchmarks/analyzer/_jsonl_scan.c (run `make env` to rebuild it)"
    return module, None


_jsonl_scan, COMPILED_READER_MISSING = load_compiled_reader()

# Upstream's result_analyzer.py columns: same names, same order, so its readers keep working.
UPSTREAM_COLUMNS = (
    "timestamp", "suite_name", "model_name", "accelerator", "accelerator_model", "xla", "xla_flags", "dynamo",
    "torch_xla2", "test", "batch_size", "repeat", "iterations_per_run", "error_message", "median_total_time",
    "median_per_iter_time", "xla_median_trace_per_iter_time", "xla_compile_time", "dynamo_compile_time",
    "outputs_file",
)
OUR_COLUMNS = ("status", "error_type", "error_phase", "verification_code", "verification_mean_rel_error", "warmup")
# --verify's other figures (benchmarks/child/verify.py), after ours: mean_rel_error alone does not say how far off.
VERIFICATION_COLUMNS = ("verification_max_abs_error", "verification_cosine_similarity", "verification_tolerance",
                        "verification_message")
FIXED_COLUMNS = UPSTREAM_COLUMNS + OUR_COLUMNS + VERIFICATION_COLUMNS
# The record's --rounds index: a column only where some record of the range has one, right after the fixed ones.
ROUND_COLUMN = "round"
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
_FIXED_INDEX = {name: i for i, name in enumerate(FIXED_COLUMNS)}
_ENV_INDEX = {name: i for i, name in enumerate(ENV_COLUMNS)}
_METRIC_INDEX = {name: i for i, name in enumerate(METRIC_ORDER)}
_STAT_COLUMN = re.compile(r"^(min|median|max|mean|std)_(.+)$")
# The line of a Python traceback (or of any stderr) that names what went wrong: "SomeError: message".
_EXCEPTION_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failed|Failure"
                             r"|Timeout|Expired))(?::\s|:?$)")


# ---------------------------------------------------------------- columns


def _metric_rank(metric: str) -> tuple:
    return (0, _METRIC_INDEX[metric]) if metric in _METRIC_INDEX else (1, metric)


def metric_columns(metric: str) -> list:
    """A metric's statistics columns; a median already among the fixed columns is not repeated."""
    return [name for name in (f"{s}_{metric}" for s in STATISTICS) if name not in _FIXED_INDEX]


def _column_key(name: str) -> tuple:
    if name in _FIXED_INDEX:
        return (0, _FIXED_INDEX[name])
    if name == ROUND_COLUMN:
        return (0, len(FIXED_COLUMNS), "")
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


# ---------------------------------------------------------------- cells and rows


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


def _header_bytes(columns) -> bytes:
    return (_cells(columns) + "\n").encode("utf-8")


def _numbers_piece(matrix: np.ndarray):
    """A float matrix as a piece of _join_rows: orjson's text of it (NaN cells empty), or its rows one by one
    when it holds an infinity (orjson writes null for it, and it must stay visible)."""
    if not matrix.shape[1]:
        return b""
    text = orjson.dumps(np.ascontiguousarray(matrix), option=orjson.OPT_SERIALIZE_NUMPY)
    infinite = np.isinf(matrix).any(axis=1)
    if not infinite.any():
        return (text,)
    rows = _matrix_rows(text)
    for r in np.flatnonzero(infinite).tolist():
        rows[r] = ",".join("" if v != v else repr(v) for v in matrix[r].tolist()).encode()
    return rows


def _matrix_rows(text: bytes) -> list:
    """The rows of orjson's text of a float matrix, as CSV cells (null empty)."""
    return text[2:-2].replace(b"null", b"").split(b"],[")


def _join_rows(pieces: list, n_rows: int, as_list: bool, compiled: bool):
    """Each row: its pieces joined by commas. A piece is bytes (in every row), a list (a cell per row),
    (orjson's text of a float matrix,) or (cells, int32 index of each row's cell). as_list: a list of rows;
    else the rows as one text, each ending with a newline. The compiled module does it without the
    intermediate objects; same result."""
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
    _, group_of_row = _combinations(list(presence.T.astype(np.int64)), [2] * len(units))
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
