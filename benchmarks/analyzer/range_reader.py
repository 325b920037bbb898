"""result_analyzer.py's reader of one byte range of a results file: the compiled reader (or orjson, line by
line, where it cannot or is not built) -> per key a row needs, the distinct values and each line's index
into them; then the metric samples of the lines that are records, as 2-D float arrays.

The compiled reader (benchmarks/analyzer/_jsonl_scan.c) gives, per key, the distinct raw texts of its value and
each line's index into them, and the numeric metrics as float64 arrays: each distinct value (a sweep repeats
models, configs, outcomes, environments) is parsed once per range. Lines it leaves (and every line without
it) are read by orjson, their values added as distinct values. rows.py turns what is read into rows."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import logging
import math
from operator import itemgetter
from typing import Callable, Optional

import numpy as np
import orjson

from benchmarks.analyzer import compiled_reader
from benchmarks.analyzer.columns import RECORD_VALUE_COLUMNS, ROUND_COLUMN
from benchmarks.analyzer.problems import Problems
from benchmarks.results import records, stats

# The top-level keys a row needs: the compiled reader hands back each one's raw text, the Python reader its value.
TOP_KEYS = ("model", "experiment", "metrics", "timestamp", "repeat", "iterations_per_run", "status", "error",
            "outputs_file", "verification_code", "verification_mean_rel_error", "warmup", "environment",
            "artifacts") + RECORD_VALUE_COLUMNS + (ROUND_COLUMN, "dynamo_stats")
(K_MODEL, K_EXPERIMENT, K_METRICS, K_TIMESTAMP, K_REPEAT, K_ITERATIONS, K_STATUS, K_ERROR, K_OUTPUTS,
 K_VERIFICATION, K_REL_ERROR, K_WARMUP, K_ENVIRONMENT, K_ARTIFACTS) = range(14)
K_RECORD_VALUES = tuple(range(14, 14 + len(RECORD_VALUE_COLUMNS)))  # RECORD_VALUE_COLUMNS, each its own value
K_ROUND = 14 + len(RECORD_VALUE_COLUMNS)  # --rounds' index: a column where some record of the range has one
K_DYNAMO_STATS = K_ROUND + 1  # dynamo's statistics: their columns where some record of the range has them
LINE_SLOW, LINE_BLANK = 1, 2  # a line's status: the compiled reader left it to orjson; it is blank
_FLATTEN_DEPTH = 4
_LIST_ONLY = {list}


@dataclasses.dataclass
class RangeRead:
    """What one byte range holds, line by line."""
    n_lines: int
    status: np.ndarray  # per line: 0 read by the compiled reader, LINE_SLOW, LINE_BLANK (uint8)
    values: list  # per key of TOP_KEYS: its distinct values (parsed)
    ids: list  # per key: per line, the index of its value, -1 where absent (int32)
    dropped: set  # the lines that are no JSON object (each reported, but blank lines)
    compiled_metrics: tuple  # the compiled reader's numeric metrics: (names, line, name, start, count, values)
    line_text: Optional[Callable[[int], bytes]] = None  # a line's own bytes (a refused line's reason, read again)


@dataclasses.dataclass
class Samples:
    """The metric samples of a range's rows."""
    blocks: dict  # (metric, samples per record) -> [(rows, 2-D samples)]
    flat: dict  # a dict-valued metric's column -> (rows, values)
    timed_warmup: Optional[np.ndarray]  # the rows with a warmup_time the compiled reader read


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
        elif kind is float:
            out[name] = item
        elif kind is int:
            out[name] = stats.to_double(item)  # as the scanner reads it: infinite beyond the doubles


def _text_key(value) -> Optional[bytes]:
    """orjson's text of an object or list, to share it among lines; None (not shared) when nested deeper
    than orjson writes."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return None


def _python_scan(data) -> tuple:
    """What the compiled reader returns, with every line left to the Python reader."""
    lengths = [len(line) for line in io.BytesIO(data).readlines()]  # memchr: three times faster than split
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    fields = [([], np.full(len(lengths), -1, dtype=np.int32)) for _ in TOP_KEYS]
    return offsets, bytes([LINE_SLOW]) * len(lengths), fields, [], b"", b"", b"", b"", b""


# ---------------------------------------------------------------- the lines


def read_range(data, compiled: bool, problems: Problems) -> RangeRead:
    """Every line of the range (the last may lack its newline), by the compiled reader when `compiled`."""
    scanned = compiled_reader.module.scan(data, TOP_KEYS, "metrics") if compiled else _python_scan(data)
    offsets, line_status, fields, names, m_line, m_name, m_start, m_count, values = scanned
    offsets = np.frombuffer(offsets, dtype=np.int64) if compiled else offsets
    status = np.frombuffer(line_status, dtype=np.uint8)
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    # Each distinct text parsed once; one orjson refuses sends its lines to the Python reader.
    parsed, ids, slow = [], [], set(np.flatnonzero(status == LINE_SLOW).tolist())
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
    dropped = _read_slow_lines(data, offsets, sorted(slow), parsed, ids, problems)
    return RangeRead(len(offsets) - 1, status, parsed, ids, dropped, (names, m_line, m_name, m_start, m_count, values),
                     lambda line: bytes(data[int(offsets[line]):int(offsets[line + 1])]))


def _read_slow_lines(data, offsets, lines: list, parsed: list, ids: list, problems: Problems) -> set:
    """Read the given lines with orjson (json for NaN), each value added to the distinct values of its key;
    returns the lines that are no record (each reported, but blank lines)."""
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    n_lines = len(offsets) - 1
    torn = n_lines - 1 if n_lines and data[-1:] != b"\n" else -1
    dropped = set()
    # A value met before on another line shares its index (as the compiled reader's distinct texts do):
    # each distinct one is then formatted once. Keys: the value for scalars, orjson's text for objects.
    known = [{} for _ in TOP_KEYS]
    found = [([], []) for _ in TOP_KEYS]  # per key: the lines that have it, and their value's index
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
        if lenient and records.SURROGATE_BYTES.search(raw) and records.has_lone_surrogate(
                list(map(record.get, TOP_KEYS))):
            problems.add("not-unicode", index, "text that is not Unicode (a lone surrogate); record skipped")
            dropped.add(index)
            continue
        for k, (name, column) in enumerate(zip(TOP_KEYS, parsed)):
            if name not in record:
                continue
            value = record[name]
            kind = type(value)
            if kind is dict or kind is list:
                key = None if lenient or k == K_METRICS else _text_key(value)  # samples: never shared
            elif kind is float and not value:
                key = (kind, value, math.copysign(1.0, value))  # -0.0 == 0.0, but a row shows its own
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


# ---------------------------------------------------------------- the samples


def read_samples(read: RangeRead, lines: list, metrics: list, metric_ids: np.ndarray, problems: Problems) -> Samples:
    """The metric samples of the rows (a row: a record; `lines`: its line, `metric_ids`: its index into the
    distinct `metrics` values), in 2-D arrays, one per metric and samples per record where the values allow."""
    samples = Samples({}, {}, None)
    _absorb_compiled(samples, lines, read.n_lines, *read.compiled_metrics)
    _absorb_objects(samples, lines, metrics, metric_ids, problems)
    return samples


def _absorb_compiled(samples: Samples, rows: list, n_lines: int, names: list, m_line, m_name, m_start, m_count,
                     values) -> None:
    """The compiled reader's numeric metrics as 2-D arrays, one per metric and sample count."""
    if not names or not m_line:
        return
    line = np.frombuffer(m_line, dtype=np.intp)
    name = np.frombuffer(m_name, dtype=np.int64)
    count = np.frombuffer(m_count, dtype=np.intp)
    start = np.frombuffer(m_start, dtype=np.intp)
    values = np.frombuffer(values, dtype=np.float64)
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
    for metric, (metric_rows, starts, counts) in per_metric.items():
        uniform = counts.min() == counts.max()
        for length in (int(counts[0]),) if uniform else np.unique(counts).tolist():
            chosen = slice(None) if uniform else counts == length
            block = values[starts[chosen, None] + np.arange(length)]
            samples.blocks.setdefault((metric, length), []).append((metric_rows[chosen], block))
    if "warmup_time" in per_metric:
        samples.timed_warmup = per_metric["warmup_time"][0]


def _absorb_objects(samples: Samples, lines: list, metrics: list, metric_ids: np.ndarray, problems: Problems) -> None:
    """Metrics the compiled reader left as objects (or every metric, on lines it did not read): arrays
    when a metric is a list of numbers of one length in every record that has the same metric names,
    else one record at a time."""
    wanted = [index for index, value in enumerate(metrics)
              if type(value) is dict and any(name != "error" for name in value)]
    if not wanted:
        return
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
                _convert(samples, lines, problems, name, rows, rows_array, list(map(itemgetter(name), dicts)))


def _convert(samples: Samples, lines: list, problems: Problems, name: str, rows: list, rows_array: np.ndarray,
             values: list) -> None:
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
            except (ValueError, TypeError, OverflowError):  # OverflowError: an integer beyond the doubles
                pass
            else:
                samples.blocks.setdefault((name, length), []).append((rows_array, array.reshape(len(values),
                                                                                                length)))
                return
    _samples_one_by_one(samples, lines, problems, name, rows, values)


def _samples_one_by_one(samples: Samples, lines: list, problems: Problems, name: str, rows: list,
                        values: list) -> None:
    """The slow path, for a metric some records hold as null, a scalar, a dict, text or ragged lists."""
    blocks, flat, by_length = samples.blocks, samples.flat, {}
    for row, value in zip(rows, values):
        kind = type(value)
        line = lines[row]
        if kind is dict:
            leaves = {}
            _flatten(name, value, leaves)
            for column, number in leaves.items():
                entry = flat.setdefault(column, ([], []))
                entry[0].append(row)
                entry[1].append(number)
            problems.add(("dict", name), line, f"metric {name!r} is an object: its numbers are reported "
                         f"as {name}.<key> columns", logging.INFO)
            continue
        if value is None:
            problems.add(("null", name), line, f"metric {name!r} is null; left empty")
            continue
        if kind is list and not value:
            continue
        array = stats.samples(value)
        if array is None:
            what = type(value).__name__ if kind is not list else "a list with non-numbers"
            problems.add(("bad", name), line, f"metric {name!r} is not a list of numbers ({what}); left empty")
            continue
        entry = by_length.setdefault(len(array), ([], []))
        entry[0].append(row)
        entry[1].append(array)
    for length, (rows_of_length, arrays) in by_length.items():
        rows_array = np.asarray(rows_of_length, dtype=np.intp)
        blocks.setdefault((name, length), []).append((rows_array, np.vstack(arrays)))
