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

import csv
import dataclasses
import gc
import io
import itertools
import json
import logging
import os
import re
import shutil
import tempfile
from operator import itemgetter
from typing import Optional

import numpy as np
import orjson

from benchmarks import records, stats

log = logging.getLogger("benchmarks.analyze")

# Upstream's result_analyzer.py columns: same names, same order, so its readers keep working.
UPSTREAM_COLUMNS = (
    "timestamp", "suite_name", "model_name", "accelerator", "accelerator_model", "xla", "xla_flags", "dynamo",
    "torch_xla2", "test", "batch_size", "repeat", "iterations_per_run", "error_message", "median_total_time",
    "median_per_iter_time", "xla_median_trace_per_iter_time", "xla_compile_time", "dynamo_compile_time",
    "outputs_file",
)
OUR_COLUMNS = ("status", "error_type", "error_phase", "verification_code", "verification_mean_rel_error", "warmup")
FIXED_COLUMNS = UPSTREAM_COLUMNS + OUR_COLUMNS
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


def _column_cells(values: list) -> list:
    """The CSV cells of one column: each distinct value is formatted once (a sweep repeats most of them).

    Values equal as numbers share a spelling (1 and 1.0): harmless in columns that hold one type.
    """
    try:
        distinct = set(values)
    except TypeError:  # a list or object inside: not hashable, formatted one by one
        return [_cell(v) for v in values]
    if len(distinct) == 1:
        return [_cell(values[0])] * len(values)
    text = {v: _cell(v) for v in distinct}
    return [text[v] for v in values]


def _format_numbers(matrix: np.ndarray) -> list:
    """Each row of a float matrix as comma-separated cells (empty for NaN), formatted by orjson."""
    n_rows, n_cols = matrix.shape
    if not n_cols:
        return [""] * n_rows
    if not n_rows:
        return []
    text = orjson.dumps(np.ascontiguousarray(matrix), option=orjson.OPT_SERIALIZE_NUMPY).decode()[2:-2]
    finite = np.isfinite(matrix)
    if finite.all():
        return text.split("],[")
    rows = text.replace("null", "").split("],[")
    for r in np.flatnonzero(np.isinf(matrix).any(axis=1)).tolist():  # orjson writes inf as null; keep it visible
        rows[r] = ",".join("" if v != v else repr(v) for v in matrix[r].tolist())
    return rows


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
    csv_spool: Optional[str] = None  # where this range's CSV rows go (no header)
    jsonl_spool: Optional[str] = None  # where its JSON lines go


@dataclasses.dataclass
class ChunkResult:
    lines: int  # lines in the range, for the line numbers of the next one
    rows: int
    columns: tuple  # the CSV columns of this range's rows
    problems: Problems
    statuses: dict


def _loads_lenient(raw: bytes):
    """Python's json writes NaN and Infinity, which orjson refuses; the standard parser reads them."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return exc


def _flatten(prefix: str, value: dict, out: dict, depth: int = 0) -> None:
    """The numeric leaves of a dict-valued metric (dynamo counters, per-operator tables) as prefix.key."""
    for key, item in value.items():
        name = f"{prefix}.{key}"
        kind = type(item)
        if kind is dict and depth < _FLATTEN_DEPTH:
            _flatten(name, item, out, depth + 1)
        elif kind is int or kind is float:
            out[name] = item


# The top-level keys a row needs, fetched from each record in one call.
_TOP_KEYS = ("model", "experiment", "metrics", "timestamp", "repeat", "iterations_per_run", "status", "error",
             "outputs_file", "verification_code", "verification_mean_rel_error", "warmup", "environment", "artifacts")
_MODEL_KEYS = UPSTREAM_COLUMNS[1:3]  # suite_name, model_name
_EXPERIMENT_KEYS = UPSTREAM_COLUMNS[3:11]  # accelerator .. batch_size
_RUN_KEYS = UPSTREAM_COLUMNS[11:13]  # repeat, iterations_per_run
_NO_ENV = (None,) * len(ENV_KEYS)
_STATUSES = frozenset(records.STATUSES)
_BATCH = 256  # records whose metrics become arrays together (their objects stay in the CPU's cache)
_LIST_ONLY = {list}
_MEDIAN, _MAX = STATISTICS.index("median"), STATISTICS.index("max")
# Per-iteration metrics equal to their totals when a run has one iteration (upstream's default): computed once.
_SAME_AS = {"per_iter_time": "total_time", "trace_per_iter_time": "trace_total_time",
            "per_iter_cpu_time_s": "total_cpu_time_s", "per_iter_cuda_time_s": "total_cuda_time_s"}


def _values_entry(values: tuple) -> tuple:
    """(values, their CSV text)."""
    return values, _cells(values)


def _experiment_entry(experiment: dict) -> tuple:
    """(values, CSV text, xla?, dynamo?) of an experiment config."""
    values = tuple(map(experiment.get, _EXPERIMENT_KEYS))
    return values, _cells(values), bool(values[2]), bool(values[4])


def _outcome_entry(values: tuple) -> tuple:
    """(repeat, iterations_per_run, *_SEGMENT_B values), and the CSV text of the first two and of the rest."""
    return values, _cells(values[:2]), _cells(values[2:])


class _Table:
    """The rows of one byte range. Each record is reduced to its row as it comes from the parser; the
    cells that a sweep repeats (a model; a config with its outcome and environment) are formatted once
    per range. Metrics are then computed and formatted per column, for all rows at once."""

    def __init__(self, task: ChunkTask, problems: Problems):
        self.task = task
        self.problems = problems
        self.lines, self.timestamps, self.messages, self.skips = [], [], [], []
        self.models, self.experiments, self.outcomes, self.environments = [], [], [], []  # cache entries
        self.statuses = {}
        self.blocks = {}  # (metric, samples per record) -> [(rows, 2-D samples)]
        self.flat = {}  # a dict-valued metric's column -> (rows, values)
        self._same = dict.fromkeys(_SAME_AS, True)  # so far, every record's metric equals its source's
        self._waiting = {}  # such a metric -> [(rows, its source's samples)]

    def read(self, lines: list) -> None:
        """Every line of the range, each with its newline but perhaps the file's last one."""
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        problems, hide_errors = self.problems, self.task.hide_errors
        fallback_timestamp = self.task.fallback_timestamp
        has_warmup, record_status, top_keys, statuses = stats.has_warmup, records.record_status, _TOP_KEYS, _STATUSES
        model_cache, experiment_cache, outcome_cache, environment_cache, rows = {}, {}, {}, {}, []
        torn = len(lines) - 1 if lines and not lines[-1].endswith(b"\n") else -1  # whole, or torn
        for index, raw in enumerate(lines):
            try:
                record = loads(raw)
            except decode_error:
                if raw.isspace():
                    continue  # a blank line is not a problem
                record = _loads_lenient(raw)
                if isinstance(record, Exception):
                    if index == torn:
                        problems.add("torn", index, "torn last line (its writer was interrupted); skipped")
                    else:
                        problems.add("invalid-json", index, f"invalid JSON ({record}); line skipped")
                    continue
            if type(record) is not dict:
                problems.add("not-object", index, "not a JSON object; line skipped")
                continue
            (model, experiment, metrics, timestamp, repeat, iterations, status, error, outputs_file, verification,
             rel_error, warmup, environment, artifacts) = map(record.get, top_keys)
            if type(model) is not dict or type(experiment) is not dict:
                problems.add("not-record", index, "not a benchmark record (no model and experiment objects); skipped")
                continue
            try:
                if type(metrics) is not dict:
                    if metrics is not None:
                        problems.add("metrics-type", index, "`metrics` is not an object; the row has no statistics")
                    metrics = {}
                if status not in statuses:
                    status = record_status(record)
                if error is None and "error" not in metrics:
                    message = error_type = phase = None
                else:
                    message, error_type, phase = _error_fields(error, metrics, status)
                    if hide_errors:
                        message = None
                if outputs_file is None and artifacts and type(artifacts) is dict:
                    outputs_file = artifacts.get("output")
                model_key = (model.get("suite_name"), model.get("model_name"))
                experiment_key = (tuple(experiment), tuple(experiment.values()))  # other keys, another config
                outcome_key = (repeat, iterations, outputs_file, status, error_type, phase, verification, rel_error,
                               warmup)
                environment_key = tuple(map(environment.get, ENV_KEYS)) if type(environment) is dict else _NO_ENV
                try:
                    model_entry = (model_cache.get(model_key)
                                   or model_cache.setdefault(model_key, _values_entry(model_key)))
                    experiment_entry = (experiment_cache.get(experiment_key)
                                        or experiment_cache.setdefault(experiment_key, _experiment_entry(experiment)))
                    outcome_entry = (outcome_cache.get(outcome_key)
                                     or outcome_cache.setdefault(outcome_key, _outcome_entry(outcome_key)))
                    environment_entry = (environment_cache.get(environment_key)
                                         or environment_cache.setdefault(environment_key,
                                                                         _values_entry(environment_key)))
                except TypeError:  # a list or object where a scalar belongs: not hashable, formatted every time
                    model_entry, experiment_entry = _values_entry(model_key), _experiment_entry(experiment)
                    outcome_entry, environment_entry = _outcome_entry(outcome_key), _values_entry(environment_key)
                row = (index, fallback_timestamp if timestamp is None else timestamp, model_entry, experiment_entry,
                       outcome_entry, environment_entry, message, 0 if has_warmup(record) else SKIP_WITHOUT_WARMUP,
                       metrics)
            except Exception as exc:  # input we did not foresee must cost one row, never the report
                problems.add(("unreadable", type(exc).__name__), index,
                             f"record skipped: {type(exc).__name__}: {records.short_message(str(exc))}")
                continue
            rows.append(row)
            if len(rows) == _BATCH:
                self._absorb(rows)
                rows = []
        if rows:
            self._absorb(rows)
        for entry in self.outcomes:
            status = entry[0][3]
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def _absorb(self, batch: list) -> None:
        """Add a batch of rows; their metrics become arrays while they are fresh in the cache, and are freed
        (keeping a whole range's parsed records alive costs more than parsing them)."""
        first = len(self.lines)
        *columns, metrics = zip(*batch)
        for target, column in zip((self.lines, self.timestamps, self.models, self.experiments, self.outcomes,
                                   self.environments, self.messages, self.skips), columns):
            target.extend(column)
        groups = {}  # records with the same metric names: one array per metric
        for offset, names in enumerate(map(tuple, metrics)):
            group = groups.get(names)
            if group is None:
                group = groups[names] = []
            group.append(offset)
        same, waiting = self._same, self._waiting
        for names, offsets in groups.items():
            dicts = [metrics[i] for i in offsets]
            rows = [first + i for i in offsets]
            rows_array = np.asarray(rows, dtype=np.intp)
            for name, source in _SAME_AS.items():
                if (name in names) != (source in names):
                    same[name] = False
            seen = {}
            for name in names:
                if name == "error":
                    continue
                values = list(map(itemgetter(name), dicts))
                source = _SAME_AS.get(name)
                if source is not None and same[name]:
                    done = seen.get(source)
                    if done is not None and done[1] is not None and values == done[0]:
                        waiting.setdefault(name, []).append((rows_array, done[1]))
                        continue  # the source's statistics, if every record agrees
                    same[name] = False
                seen[name] = (values, self._convert(name, rows, rows_array, values))

    def _aliases(self) -> dict:
        """{metric: its source} for metrics equal to their source in every record that has either; the others
        get their samples (equal to the source's where they were)."""
        aliases = {}
        for name, pieces in self._waiting.items():
            if self._same[name]:
                aliases[name] = _SAME_AS[name]
            else:
                for rows, samples in pieces:
                    self.blocks.setdefault((name, samples.shape[1]), []).append((rows, samples))
        return aliases

    def _convert(self, name: str, rows: list, rows_array: np.ndarray, values: list) -> Optional[np.ndarray]:
        """One metric of records that have the same metric names: a 2-D array when every value is a list of
        numbers of one length (the common case, at numpy speed; returned), else one record at a time."""
        if set(map(type, values)) == _LIST_ONLY:  # a dict or text would iterate into numbers too
            lengths = set(map(len, values))
            if len(lengths) == 1:
                length = lengths.pop()
                if not length:
                    return None  # no samples: nothing to report, nothing wrong
                try:
                    array = np.fromiter(itertools.chain.from_iterable(values), dtype=np.float64,
                                        count=length * len(values))
                except (ValueError, TypeError):
                    pass
                else:
                    array = array.reshape(len(values), length)
                    self.blocks.setdefault((name, length), []).append((rows_array, array))
                    return array
        self._samples_one_by_one(name, rows, values)
        return None

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

    def compute(self) -> tuple:
        """(headline matrix, units): a unit is (column names, rows, values) for one metric's statistics (or one
        entry of a dict-valued metric), in column order, with the rows that have it."""
        n = len(self.lines)
        blocks, flat, aliases = self.blocks, self.flat, self._aliases()
        skip = np.asarray(self.skips, dtype=np.intp)
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
            row_skip = skip[rows]
            low, high = int(row_skip.min()), int(row_skip.max())
            for skip_value in (low,) if low == high else np.unique(row_skip).tolist():
                chosen = row_skip == skip_value
                sub_rows, sub_values = (rows, values) if low == high else (rows[chosen], values[chosen])
                summary = stats.summary_rows(sub_values, skip_value)
                parts.setdefault(metric, []).append((sub_rows, np.column_stack([summary[s] for s in STATISTICS])))
                for row in sub_rows[np.isnan(summary["max"])].tolist():  # null or NaN samples (Python's json: NaN)
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
        xla = np.fromiter((entry[2] for entry in self.experiments), dtype=bool, count=n)
        dynamo = np.fromiter((entry[3] for entry in self.experiments), dtype=bool, count=n)
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

    def csv_lines(self, headline: np.ndarray, units: list) -> list:
        n = len(self.lines)
        columns = [_column_cells(self.timestamps), [entry[1] for entry in self.models],
                   [entry[1] for entry in self.experiments], [entry[1] for entry in self.outcomes],
                   _column_cells(self.messages), _format_numbers(headline), [entry[2] for entry in self.outcomes]]
        done = {}  # a table shared by two metrics is formatted once
        for names, rows, table in units:
            cells = done.get(id(table))
            if cells is None:
                # Each metric apart: rows without it get empty cells, with no NaN to format and to clear.
                cells = done[id(table)] = ["," * (len(names) - 1)] * n
                for row, text in zip(rows.tolist(), _format_numbers(table)):
                    cells[row] = text
            columns.append(cells)
        columns.append([entry[1] for entry in self.environments])
        return list(map(",".join, zip(*columns)))

    def json_lines(self, headline: np.ndarray, units: list) -> list:
        """One object per row: every fixed and environment column (null when unknown), and the statistics
        of the metrics this record has."""
        dumps, option = orjson.dumps, orjson.OPT_APPEND_NEWLINE
        statistics = [[] for _ in self.lines]
        for names, rows, table in units:
            for row, values in zip(rows.tolist(), table.tolist()):
                statistics[row].extend(zip(names, values))
        out = []
        for timestamp, model, experiment, outcome, environment, message, h, values in zip(
                self.timestamps, self.models, self.experiments, self.outcomes, self.environments, self.messages,
                headline.tolist(), statistics):
            row = {"timestamp": timestamp}
            row.update(zip(_MODEL_KEYS, model[0]))
            row.update(zip(_EXPERIMENT_KEYS, experiment[0]))
            row.update(zip(_RUN_KEYS, outcome[0]))
            row["error_message"] = message
            row.update((name, v if v == v else None) for name, v in zip(_HEADLINE, h))
            row.update(zip(_SEGMENT_B, outcome[0][2:]))
            row.update((name, v) for name, v in values if v == v)
            row.update(zip(ENV_COLUMNS, environment[0]))
            out.append(dumps(row, option=option))
        return out


def process_chunk(task: ChunkTask) -> ChunkResult:
    """Read one byte range of a results file (whole lines) and write its report rows to the spool files."""
    with open(task.path, "rb") as handle:
        handle.seek(task.start)
        data = handle.read(task.end - task.start)
    lines = io.BytesIO(data).readlines()  # memchr: three times faster than bytes.split
    del data
    n_lines = len(lines)
    problems = Problems()
    table = _Table(task, problems)
    # Parsing makes millions of containers and frees none of them in a cycle: the collector only costs time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        table.read(lines)
        del lines
        headline, units = table.compute()
        stat_columns = [name for names, _, _ in units for name in names]
        if task.csv_spool:
            rows = table.csv_lines(headline, units)
            with open(task.csv_spool, "w", encoding="utf-8", newline="") as out:
                if rows:
                    out.write("\n".join(rows))
                    out.write("\n")
            del rows
        if task.jsonl_spool:
            with open(task.jsonl_spool, "wb") as out:
                out.writelines(table.json_lines(headline, units))
    finally:
        if collecting:
            gc.enable()
    return ChunkResult(lines=n_lines, rows=len(table.lines), columns=FIXED_COLUMNS + tuple(stat_columns) + ENV_COLUMNS,
                       problems=problems, statuses=table.statuses)


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


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it cancels the rest


class _Workers:
    """Runs a function over tasks, results in order: in this process for one task, else in `jobs` worker
    processes (started once, for every pass of the run)."""

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.pool = None

    def map(self, function, tasks: list):
        if self.jobs <= 1 or len(tasks) <= 1:
            return map(function, tasks)
        if self.pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # fork: workers start at once with everything imported (spawn would import numpy in each again).
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork") if "fork" in methods else None
            self.pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=context, initializer=_ignore_sigint)
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


def _append_realigned(out, path: str, columns, target, skip_header: bool = False) -> None:
    """Copy CSV rows written under `columns` to `out`, each cell under its own name in `target`."""
    position = {name: i for i, name in enumerate(columns)}
    index = [position.get(name) for name in target]
    with open(path, encoding="utf-8", newline="") as src:
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


def _realign_spool(job: tuple) -> None:
    """Rewrite a range's CSV rows under the report's columns (the range lacked some metrics of others)."""
    path, columns, target = job
    with open(f"{path}.aligned", "wb") as out:
        _append_realigned(out, path, columns, target)
    os.replace(f"{path}.aligned", path)


def _write_csv(path: str, columns: list, chunks: list) -> None:
    with open(path, "wb") as out:
        out.write(_header_bytes(columns))
        for _, task in chunks:
            _append_file(out, task.csv_spool)


def _write_jsonl(path: str, chunks: list) -> None:
    with open(path, "wb") as out:
        for _, task in chunks:
            _append_file(out, task.jsonl_spool)


def analyze(options: Options) -> Summary:
    """Read every input, write the report (and the database rows); AnalyzeError for bad input."""
    if os.path.isdir(options.output):
        raise AnalyzeError(f"the report {options.output} is a directory")
    if options.database:
        check_database(options.database)  # before the work, not after it
    reason = records.check_writable_dir(os.path.dirname(os.path.abspath(options.output)))
    if reason:
        raise AnalyzeError(reason)
    want_csv = options.output_format == "csv" or bool(options.database)
    want_jsonl = options.output_format == "jsonl"
    spool = tempfile.mkdtemp(prefix=".result-analyzer-", dir=os.path.dirname(os.path.abspath(options.output)))
    temp_output = _temp_path(options.output)
    try:
        chunk_bytes = options.chunk_bytes or min(DEFAULT_CHUNK_BYTES, max(
            MIN_CHUNK_BYTES, sum(map(os.path.getsize, options.inputs)) // (4 * max(1, options.jobs))))
        tasks, owners = [], []
        for file_index, path in enumerate(options.inputs):
            for start, end in plan_chunks(path, chunk_bytes):
                stem = os.path.join(spool, f"{len(tasks):06d}")
                tasks.append(ChunkTask(path, start, end, options.fallback_timestamp, options.hide_errors,
                                       stem + ".csv" if want_csv else None, stem + ".jsonl" if want_jsonl else None))
                owners.append(file_index)
        lines = [0] * len(options.inputs)
        rows = [0] * len(options.inputs)
        problems = [Problems() for _ in options.inputs]
        statuses, chunks = {}, []
        with _Workers(options.jobs) as workers:
            for file_index, task, result in zip(owners, tasks, workers.map(process_chunk, tasks)):
                problems[file_index].merge(result.problems, lines[file_index] + 1)  # 1-based line numbers
                lines[file_index] += result.lines
                rows[file_index] += result.rows
                for status, count in result.statuses.items():
                    statuses[status] = statuses.get(status, 0) + count
                if result.rows:
                    chunks.append((result.columns, task))
            for path, found in zip(options.inputs, problems):
                for level, text in found.lines(path):
                    log.log(level, "%s", text)
            for path, count in zip(options.inputs, rows):
                if not count and len(options.inputs) > 1:
                    log.warning("%s: no valid record", path)
            if not chunks:
                names = ", ".join(options.inputs)
                raise AnalyzeError(f"no valid record in {names}" + ("" if len(options.inputs) == 1 else
                                                                    " (any of them)"))
            columns = order_columns(name for chunk_columns, _ in chunks for name in chunk_columns)
            if want_csv:  # ranges that lacked some metrics of the others: their cells move under their names
                jobs = [(task.csv_spool, chunk_columns, tuple(columns)) for chunk_columns, task in chunks
                        if chunk_columns != tuple(columns)]
                list(workers.map(_realign_spool, jobs))
        report_csv = None
        if options.output_format == "csv":
            _write_csv(temp_output, columns, chunks)
            report_csv = temp_output
        else:
            _write_jsonl(temp_output, chunks)
            if options.database:
                report_csv = os.path.join(spool, "report.csv")
                _write_csv(report_csv, columns, chunks)
        os.replace(temp_output, options.output)
        if report_csv == temp_output:
            report_csv = options.output
        action = append_to_database(options.database, report_csv, columns) if options.database else None
        return Summary(records=sum(rows), files=len(options.inputs), problems=sum(map(len, problems)),
                       statuses=statuses, columns=columns, output=options.output, database_action=action)
    finally:
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
