"""The rows of one byte range, value by value: each distinct model, experiment config, outcome, environment
and dynamo statistics reduced once to its cells (analyzer/rows.py puts them together, a column at a time)."""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Optional

import numpy as np

from benchmarks.analyzer import range_reader
from benchmarks.analyzer.cells import cell, cells, combinations
from benchmarks.analyzer.columns import (DYNAMO_COLUMNS, ENV_KEYS, OUR_COLUMNS, RECORD_VALUE_COLUMNS, STATISTICS,
                                         UPSTREAM_COLUMNS)
from benchmarks.analyzer.range_reader import (K_ARTIFACTS, K_ERROR, K_ITERATIONS, K_METRICS, K_OUTPUTS,
                                              K_RECORD_VALUES, K_REL_ERROR, K_REPEAT, K_ROUND, K_STATUS, K_TIMESTAMP,
                                              K_VERIFICATION, K_WARMUP)
from benchmarks.results import dynamo_stats, records
from benchmarks.results.measurement import Measurement

# Upstream's analyzer drops one sample from mean/std of records without a warm-up (ours have one).
SKIP_WITHOUT_WARMUP = 1
HEADLINE = UPSTREAM_COLUMNS[14:19]  # median_total_time .. dynamo_compile_time: numbers, one matrix
# The line of a Python traceback (or of any stderr) that names what went wrong: "SomeError: message".
_EXCEPTION_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failed|Failure"
                             r"|Timeout|Expired))(?::\s|:?$)")

# What a row's outcome depends on (everything but the relative error, which differs per record).
_OUTCOME_FIELDS = (K_REPEAT, K_ITERATIONS, K_OUTPUTS, K_ARTIFACTS, K_STATUS, K_ERROR, K_VERIFICATION,
                   K_WARMUP, K_METRICS)
OUTCOME_NAMES = tuple(range_reader.TOP_KEYS[k] for k in _OUTCOME_FIELDS)  # their record keys
MODEL_KEYS = UPSTREAM_COLUMNS[1:3]  # suite_name, model_name
EXPERIMENT_KEYS = UPSTREAM_COLUMNS[3:11]  # accelerator .. batch_size
RUN_KEYS = UPSTREAM_COLUMNS[11:13]  # repeat, iterations_per_run
SEGMENT_B1 = UPSTREAM_COLUMNS[19:] + OUR_COLUMNS[:4]  # outputs_file .. verification_code
_NO_ENV = (None,) * len(ENV_KEYS)
_STATUSES = frozenset(records.STATUSES)
MEDIAN, MAX = STATISTICS.index("median"), STATISTICS.index("max")
K_ACCURACY = K_RECORD_VALUES[RECORD_VALUE_COLUMNS.index("accuracy")]
# Per-iteration metrics equal to their totals when a run has one iteration (upstream's default): computed once.
# The values a row shows as they are (no entry of their own).
PLAIN_KEYS = (K_TIMESTAMP, K_REL_ERROR) + K_RECORD_VALUES + (K_ROUND,)
SAME_AS = {"per_iter_time": "total_time", "trace_per_iter_time": "trace_total_time",
            "per_iter_cpu_time_s": "total_cpu_time_s", "per_iter_cuda_time_s": "total_cuda_time_s"}


class ValuesEntry(NamedTuple):
    """A distinct value reduced to its columns' values (a model, an environment, dynamo's statistics) and their
    CSV text."""

    values: tuple
    text: bytes


class ExperimentEntry(NamedTuple):
    """A distinct experiment config: upstream's columns (values, CSV text), whether it is an XLA or a dynamo config,
    and its other keys (experiment_<key> columns) by value and by CSV text."""

    values: tuple
    text: bytes
    xla: bool
    dynamo: bool
    extra: dict
    extra_cells: dict
    backend: bytes  # the backend column's cell: upstream's name (eager, inductor, openxla+dynamo, aot_eager, ...)


class PlainEntry(NamedTuple):
    """A distinct value a row shows as it is: its CSV text, and the value."""

    text: bytes
    value: Any


class OutcomeRow(NamedTuple):
    """What a row shows of its outcome, in column order (RUN_KEYS, then SEGMENT_B1's first five, then warmup)."""

    repeat: Any
    iterations_per_run: Any
    outputs_file: Any
    status: Any
    error_type: Any
    error_phase: Any
    verification_code: Any
    warmup: Any


class OutcomeEntry(NamedTuple):
    """A distinct outcome: its row's values; the CSV text of repeat and iterations_per_run, of outputs_file ..
    verification_code, of warmup; the error message."""

    row: Optional[OutcomeRow]
    run_text: bytes
    segment_text: bytes
    warmup_text: bytes
    message: Optional[str]


NO_OUTCOME = OutcomeEntry(None, b"", b"", b"", None)


def texts(entries: list) -> list:
    """The CSV text of each entry (empty for a value no row uses)."""
    return [entry.text if entry else b"" for entry in entries]


def _values_entry(values: tuple) -> ValuesEntry:
    return ValuesEntry(values, cells(values).encode())


def model_entry(model: dict) -> ValuesEntry:
    return _values_entry((model.get("suite_name"), model.get("model_name")))


_NOT_EXTRA_EXPERIMENT_KEYS = frozenset(EXPERIMENT_KEYS + ("experiment_name",))


def experiment_entry(experiment: dict) -> ExperimentEntry:
    values = tuple(map(experiment.get, EXPERIMENT_KEYS))
    extra = {key: value for key, value in experiment.items() if key not in _NOT_EXTRA_EXPERIMENT_KEYS}
    extra_cells = {key: cell(value).encode() for key, value in extra.items()}
    backend = Measurement({"experiment": experiment}).base_backend
    return ExperimentEntry(values, cells(values).encode(), bool(values[2]), bool(values[4]), extra, extra_cells,
                           cell(backend).encode())


def plain_entry(value) -> PlainEntry:
    return PlainEntry(cell(value).encode(), value)


def environment_entry(environment) -> ValuesEntry:
    return _values_entry(tuple(map(environment.get, ENV_KEYS)) if type(environment) is dict else _NO_ENV)


def dynamo_stats_entry(found) -> ValuesEntry:
    """DYNAMO_COLUMNS of a record's `dynamo_stats` (any value)."""
    return _values_entry(dynamo_stats.cells(found))


NO_DYNAMO_STATS = _values_entry((None,) * len(DYNAMO_COLUMNS))


def outcome_entry(values: list, hide_errors: bool) -> OutcomeEntry:
    """The outcome of the values of _OUTCOME_FIELDS (`metrics` as _metrics_outcomes represents it)."""
    repeat, iterations, outputs_file, artifacts, status, error, verification, warmup, metrics = values
    if type(metrics) is not dict:  # null (another type: the record is refused, refusals.outcome_problem)
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
    row = OutcomeRow(repeat, iterations, outputs_file, status, error_type, phase, verification, warmup)
    return OutcomeEntry(row, cells(row[:2]).encode(), cells(row[2:7]).encode(), cell(warmup).encode(), message)


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


def outcome_combinations(parsed: list, ids: list) -> tuple:
    """(the values of _OUTCOME_FIELDS of each distinct outcome, each row's outcome): an outcome needs of `metrics`
    only its type and its error text, so records alike in those share one."""
    metrics_outcomes, metrics_outcome_of = _metrics_outcomes(parsed[K_METRICS])
    columns = [metrics_outcome_of[ids[k]] if k == K_METRICS else ids[k] for k in _OUTCOME_FIELDS]
    sizes = [len(metrics_outcomes) if k == K_METRICS else len(parsed[k]) for k in _OUTCOME_FIELDS]
    outcome_keys, outcome_ids = combinations(columns, sizes)
    values = [[metrics_outcomes[i] if k == K_METRICS else parsed[k][i] for k, i in zip(_OUTCOME_FIELDS, combination)]
              for combination in outcome_keys.tolist()]
    return values, outcome_ids


class Selection(NamedTuple):
    """The lines that are rows: each one's line, its index into each key's values, whether it has the key, and its
    outcome's index."""

    rows: np.ndarray
    ids: list
    present: list
    outcome_ids: np.ndarray


class Reduced(NamedTuple):
    """Each distinct value's entry (None: unused or unreadable), per key; the plain keys' by key."""

    models: list
    experiments: list
    environments: list
    dynamo: list
    outcomes: list
    plain: dict


def warmup_skips(parsed: list, selection: Selection) -> np.ndarray:
    """Per row, the samples its statistics leave out: ours have a warm-up (the key, or a warmup_time metric);
    upstream's treat their first sample as one."""
    has_warmup = selection.present[K_WARMUP].copy()
    with_warmup_time = [i for i, value in enumerate(parsed[K_METRICS])
                        if type(value) is dict and "warmup_time" in value]
    if with_warmup_time:
        has_warmup |= np.isin(selection.ids[K_METRICS], with_warmup_time)
    return np.where(has_warmup, 0, SKIP_WITHOUT_WARMUP).astype(np.intp)


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
    if error_type is None and status == records.RecordStatus.TIMEOUT:
        error_type = "Timeout"
    return message, error_type, None
