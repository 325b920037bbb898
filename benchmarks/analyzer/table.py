"""result_analyzer.py's rows of one byte range: the records read (by the compiled reader, or by orjson line
by line), each distinct value reduced once, the metrics as 2-D sample arrays, their statistics, and the
rows as CSV or JSON Lines."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import logging
from operator import itemgetter

import numpy as np
import orjson

from benchmarks.common import records, stats
from benchmarks.analyzer.columns import (ENV_COLUMNS, ENV_KEYS, EXPERIMENT_PREFIX, OUR_COLUMNS, ROUND_COLUMN, STATISTICS,
                                      UPSTREAM_COLUMNS, VERIFICATION_COLUMNS, Problems, _cell, _cells, _combinations,
                                      _error_fields,
                                      _join_rows, _jsonl_scan, _metric_rank, _numbers_piece, _statistics_cells,
                                      metric_columns)


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
    compiled: bool = False  # read with the compiled reader (benchmarks/analyzer/_jsonl_scan.c)


# Upstream's analyzer drops one sample from mean/std of records without a warm-up (ours have one).
SKIP_WITHOUT_WARMUP = 1
_HEADLINE = UPSTREAM_COLUMNS[14:19]  # median_total_time .. dynamo_compile_time: numbers, one matrix
_FLATTEN_DEPTH = 4


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
             "artifacts") + VERIFICATION_COLUMNS + (ROUND_COLUMN,)
(_K_MODEL, _K_EXPERIMENT, _K_METRICS, _K_TIMESTAMP, _K_REPEAT, _K_ITERATIONS, _K_STATUS, _K_ERROR, _K_OUTPUTS,
 _K_VERIFICATION, _K_REL_ERROR, _K_WARMUP, _K_ENVIRONMENT, _K_ARTIFACTS) = range(14)
_K_VERIFICATION_FIGURES = tuple(range(14, 14 + len(VERIFICATION_COLUMNS)))  # VERIFICATION_COLUMNS, each its own value
_K_ROUND = len(_TOP_KEYS) - 1
# What a row's outcome depends on (everything but the relative error, which differs per record).
_OUTCOME_FIELDS = (_K_REPEAT, _K_ITERATIONS, _K_OUTPUTS, _K_ARTIFACTS, _K_STATUS, _K_ERROR, _K_VERIFICATION,
                   _K_WARMUP, _K_METRICS)
_MODEL_KEYS = UPSTREAM_COLUMNS[1:3]  # suite_name, model_name
_EXPERIMENT_KEYS = UPSTREAM_COLUMNS[3:11]  # accelerator .. batch_size
_RUN_KEYS = UPSTREAM_COLUMNS[11:13]  # repeat, iterations_per_run
_SEGMENT_B1 = UPSTREAM_COLUMNS[19:] + OUR_COLUMNS[:4]  # outputs_file .. verification_code
_NO_ENV = (None,) * len(ENV_KEYS)
_STATUSES = frozenset(records.STATUSES)
_LIST_ONLY = {list}
_MEDIAN, _MAX = STATISTICS.index("median"), STATISTICS.index("max")
# Per-iteration metrics equal to their totals when a run has one iteration (upstream's default): computed once.
_SAME_AS = {"per_iter_time": "total_time", "trace_per_iter_time": "trace_total_time",
            "per_iter_cpu_time_s": "total_cpu_time_s", "per_iter_cuda_time_s": "total_cuda_time_s"}


def _texts(entries: list) -> list:
    """The CSV text of each entry (empty for a value no row uses)."""
    return [entry[1] if entry else b"" for entry in entries]


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
        self.entries = {}  # model, experiment, environment: per distinct value, its entry (values, CSV text, ...)
        self.outcomes, self.outcome_ids = [], None  # distinct outcome entries (_outcome_entry), per row
        self.xla = self.dynamo = np.zeros(0, dtype=bool)
        self.experiment_keys = []  # the configs' keys beyond upstream's, sorted: experiment_<key> columns
        self.has_round = False  # some record has `round` (--rounds): a round column
        self.skips = np.zeros(0, dtype=np.intp)
        self.statuses = {}
        self.blocks = {}  # (metric, samples per record) -> [(rows, 2-D samples)]
        self.flat = {}  # a dict-valued metric's column -> (rows, values)
        self.aliases = {}  # metric -> the metric whose samples it has in every row

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
        self._absorb_compiled(rows, n_lines, names, m_line, m_name, m_start, m_count, values)
        self._absorb_objects()
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
        self.entries = {_K_MODEL: models, _K_EXPERIMENT: experiments, _K_ENVIRONMENT: environments}
        self.experiment_keys = sorted({key for entry in experiments if entry for key in entry[4]})
        self.has_round = bool(present[_K_ROUND].any())
        flags = [(entry[2], entry[3]) if entry else (False, False) for entry in experiments]
        self.xla = np.array([flag[0] for flag in flags], dtype=bool)[ids[_K_EXPERIMENT]]
        self.dynamo = np.array([flag[1] for flag in flags], dtype=bool)[ids[_K_EXPERIMENT]]
        counts = np.bincount(outcome_ids, minlength=len(outcomes))
        for combination, (entry, count) in enumerate(zip(outcomes, counts.tolist())):
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
                         values) -> None:
        """The compiled reader's numeric metrics as 2-D arrays, one per metric and sample count."""
        if not names or not m_line:
            return
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
        for metric, (metric_rows, starts, counts) in per_metric.items():
            uniform = counts.min() == counts.max()
            for length in (int(counts[0]),) if uniform else np.unique(counts).tolist():
                chosen = slice(None) if uniform else counts == length
                block = samples[starts[chosen, None] + np.arange(length)]
                self.blocks.setdefault((metric, length), []).append((metric_rows[chosen], block))
        if "warmup_time" in per_metric:
            self.skips[per_metric["warmup_time"][0]] = 0

    def _absorb_objects(self) -> None:
        """Metrics the compiled reader left as objects (or every metric, on lines it did not read): arrays
        when a metric is a list of numbers of one length in every record that has the same metric names,
        else one record at a time."""
        metrics, metric_ids = self.values[_K_METRICS], self.ids[_K_METRICS]
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
                    self._convert(name, rows, rows_array, list(map(itemgetter(name), dicts)))

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
            if name not in present or source not in present:
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

    def csv_rows(self, headline: np.ndarray, units: list) -> bytes:
        """The CSV rows, each ending with a newline: each distinct value's cells formatted once, joined by
        the rows' indexes."""
        n, ids, values, outcome_ids = len(self.lines), self.ids, self.values, self.outcome_ids
        compiled, fallback = self.task.compiled, self.task.fallback_timestamp
        timestamps = [_cell(fallback if value is None else value).encode() for value in values[_K_TIMESTAMP]]
        rel_errors = [_cell(value).encode() for value in values[_K_REL_ERROR]]
        outcomes = [entry or (None, b"", b"", b"", None) for entry in self.outcomes]
        models, experiments, environments = (self.entries[k] for k in (_K_MODEL, _K_EXPERIMENT, _K_ENVIRONMENT))
        pieces = [(timestamps, ids[_K_TIMESTAMP]), (_texts(models), ids[_K_MODEL]),
                  (_texts(experiments), ids[_K_EXPERIMENT]), ([entry[1] for entry in outcomes], outcome_ids),
                  ([_cell(entry[4]).encode() for entry in outcomes], outcome_ids), _numbers_piece(headline),
                  ([entry[2] for entry in outcomes], outcome_ids), (rel_errors, ids[_K_REL_ERROR]),
                  ([entry[3] for entry in outcomes], outcome_ids)]
        pieces += [([_cell(value).encode() for value in values[k]], ids[k]) for k in _K_VERIFICATION_FIGURES
                   + ((_K_ROUND,) if self.has_round else ())]
        pieces += [([_cell(entry[4].get(key)).encode() if entry else b"" for entry in experiments], ids[_K_EXPERIMENT])
                   for key in self.experiment_keys]
        if units:
            pieces.append(_statistics_cells(n, units, compiled))
        pieces.append((_texts(environments), ids[_K_ENVIRONMENT]))
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
            if self.has_round:
                row[ROUND_COLUMN] = values[_K_ROUND][self.ids[_K_ROUND][position]]
            extra = entries[_K_EXPERIMENT][experiment][4]
            row.update((EXPERIMENT_PREFIX + key, extra.get(key)) for key in self.experiment_keys)
            row.update((name, v) for name, v in row_statistics if v == v)
            row.update(zip(ENV_COLUMNS, entries[_K_ENVIRONMENT][environment][0]))
            out.append(dumps(row, option=option))
        return out
