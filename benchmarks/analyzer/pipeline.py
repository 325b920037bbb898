"""result_analyzer.py's library: results files -> one report row per record, as CSV or JSON Lines, and the
long-lived CSV database the rows are appended to. This module runs it: the inputs, their byte ranges, the
worker processes, the run's summary. The parts (one job each):
  range_reader.py     one byte range -> per key the distinct values and each line's index; the samples
  compiled_reader.py  the compiled reader (_jsonl_scan.c), or why it is not used
  rows.py             what a range read -> rows (CSV or JSON Lines) and the statistics of every metric
  cells.py            CSV cells, rows joined from pieces, statistics cells
  columns.py          the columns and their order
  problems.py         the problems found in a file, each kind reported once
  report_files.py     the report written in file order, the database, reading a report back

Row layout (docs/analyzer.md, "The columns"): upstream PyTorch/XLA's 20 columns, then ours, then --verify's
other figures and a config's own keys, then dynamo's graph-break reasons and compile phases (where a record has
`dynamo_stats`), then min_/median_/max_/mean_/std_ per metric in METRIC_ORDER (then
other metrics by name), then the numeric entries of dict-valued metrics as `name.key` columns, then the
environment. Statistics come from benchmarks.results.stats, the module aggregate.py uses too.

Speed (scripts/bench/analyzer.py measures it): a file is cut into byte ranges of 8 MiB that worker
processes (one per core) read on their own, mapped rather than copied. The compiled reader
(benchmarks/analyzer/_jsonl_scan.c) validates each line and hands back the metric samples as float64 arrays and
every other value as its distinct texts with an index per line; each distinct value is parsed and
formatted once, statistics are computed per column for a whole range, numbers are formatted by orjson,
and rows are joined in C. Each worker writes its range's rows into the report itself, in file order.
Memory is bounded by the range size times the number of workers, whatever the number of records.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import mmap
import os
import shutil
import tempfile
from typing import Optional

from benchmarks.analyzer import compiled_reader
from benchmarks.analyzer.columns import (BACKEND_COLUMN, DYNAMO_COLUMNS, ENV_COLUMNS, EXPERIMENT_PREFIX, FIXED_COLUMNS, ROUND_COLUMN,
                                         order_columns)
from benchmarks.analyzer.problems import Problems
from benchmarks.analyzer.range_reader import read_range
from benchmarks.analyzer.report_files import (AnalyzeError, NoRecord, OrderedReport, append_to_database,
                                              check_database)
from benchmarks.analyzer.rows import RangeRows
from benchmarks.config import tiers
from benchmarks.plumbing import disk_writes
from benchmarks.results import records


log = logging.getLogger("benchmarks.analyzer.pipeline")

REPORT_BASENAME = "metric_report"
DEFAULT_CHUNK_BYTES = 8 << 20
MIN_CHUNK_BYTES = 1 << 20


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
    compiled: bool = False  # read with the compiled reader (benchmarks/analyzer/_jsonl_scan.c)
    selection: Optional[object] = None  # the selection flags' (results/selection.Selection); None: every record


@dataclasses.dataclass
class ChunkResult:
    lines: int  # lines in the range, for the line numbers of the next one
    rows: int
    columns: tuple  # the CSV columns of this range's rows
    problems: Problems
    statuses: dict
    spool: Optional[str] = None  # where its CSV rows wait, when they could not go to the report in turn
    left_out: int = 0  # records the selection left out


def _read_range(task: ChunkTask, problems: Problems) -> tuple:
    """(lines in the task's byte range, its rows): the file mapped rather than read, so that the scanner reads
    the page cache in place (one copy of every byte less)."""
    # the tiers of every suite that has some: a range sees only its own records' suites
    chosen = task.selection.matcher(sorted(tiers.TIERS)) if task.selection is not None else None
    if task.end <= task.start:
        read = read_range(b"", task.compiled, problems)
        return read.n_lines, RangeRows(read, problems, task.hide_errors, task.fallback_timestamp, task.want_jsonl,
                                       chosen)
    with open(task.path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        with memoryview(mapped)[task.start:task.end] as data:
            read = read_range(data, task.compiled, problems)
            # the rows are made while the range is mapped: a refused line's reason reads the line again (line_text)
            return read.n_lines, RangeRows(read, problems, task.hide_errors, task.fallback_timestamp,
                                           task.want_jsonl, chosen)


def process_chunk(task: ChunkTask) -> ChunkResult:
    """Read one byte range of a results file (whole lines) and write its report rows, in its turn."""
    csv_rows = jsonl_rows = b""
    columns = ()
    try:
        problems = Problems()
        # Parsing makes millions of containers and frees none of them in a cycle: the collector only costs time.
        collecting = gc.isenabled()
        gc.disable()
        try:
            n_lines, table = _read_range(task, problems)
            headline, units = table.compute()
            columns = (FIXED_COLUMNS + (ROUND_COLUMN,) * table.has_round + (BACKEND_COLUMN,)
                       + tuple(EXPERIMENT_PREFIX + key for key in table.experiment_keys)
                       + DYNAMO_COLUMNS * table.has_dynamo_stats
                       + tuple(name for names, _, _ in units for name in names) + ENV_COLUMNS)
            if task.want_csv and table.lines:
                csv_rows = table.csv_rows(headline, units, task.compiled)
                columns = table.kept_columns  # the columns of ours empty in every row of the range left out
            if task.want_jsonl and table.lines:
                jsonl_rows = b"".join(table.json_lines(headline, units))
        finally:
            if collecting:
                gc.enable()
    finally:  # the turn passes even when this range failed: the ranges after it never wait forever
        spool = _REPORT.write_in_turn(task.index, columns if csv_rows else (), csv_rows, jsonl_rows)
    return ChunkResult(lines=n_lines, rows=len(table.lines), columns=columns, problems=problems,
                       statuses=table.statuses, spool=spool, left_out=table.left_out)


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
    selection: Optional[object] = None  # the selection flags' (results/selection.Selection); None: every record


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
    left_out: int = 0  # records the selection flags left out


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

    def __init__(self, jobs: int, context, report: OrderedReport):
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


_REPORT: Optional[OrderedReport] = None  # this process's handle on the report being written


def _start_worker(report: OrderedReport) -> None:
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
    if options.reader != "python" and compiled_reader.module is None:
        why = compiled_reader.why_unavailable
        if options.reader == "compiled":
            raise AnalyzeError(f"--reader=compiled: the compiled reader is {why}")
        if why and "another version" in why:
            log.warning("the compiled reader is %s; reading with the Python reader, slower", why)
    compiled = options.reader != "python" and compiled_reader.module is not None
    want_csv = options.output_format == "csv" or bool(options.database)
    want_jsonl = options.output_format == "jsonl"
    spool = tempfile.mkdtemp(prefix=".result-analyzer-", dir=os.path.dirname(os.path.abspath(options.output)))
    temp_output = disk_writes.temporary_path(options.output)
    report_csv = temp_output if options.output_format == "csv" else os.path.join(spool, "report.csv")
    report = None
    try:
        for path in ([report_csv] if want_csv else []) + ([temp_output] if want_jsonl else []):
            open(path, "wb").close()
        context = _context()
        report = OrderedReport(context, report_csv if want_csv else None, temp_output if want_jsonl else None, spool)
        chunk_bytes = options.chunk_bytes or min(DEFAULT_CHUNK_BYTES, max(
            MIN_CHUNK_BYTES, sum(map(os.path.getsize, options.inputs)) // (4 * max(1, options.jobs))))
        tasks, owners = [], []
        for file_index, path in enumerate(options.inputs):
            for start, end in plan_chunks(path, chunk_bytes):
                tasks.append(ChunkTask(path, start, end, options.fallback_timestamp, options.hide_errors,
                                       len(tasks), want_csv, want_jsonl, compiled, options.selection))
                owners.append(file_index)
        lines = [0] * len(options.inputs)
        rows = [0] * len(options.inputs)
        problems = [Problems() for _ in options.inputs]
        statuses, all_columns, spools, left_out = {}, {}, [], 0
        with _Workers(options.jobs, context, report) as workers:
            # The workers write the rows; the parent gathers what the ranges say about themselves.
            for file_index, result in zip(owners, workers.map(process_chunk, tasks)):
                problems[file_index].merge(result.problems, lines[file_index] + 1)  # 1-based line numbers
                lines[file_index] += result.lines
                rows[file_index] += result.rows
                left_out += result.left_out
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
        for path, count, found in zip(options.inputs, rows, problems):
            if not count and len(options.inputs) > 1 and not left_out:
                log.warning("%s: no usable record", path)
        if not all_columns:  # every tool's words (docs/command-line.md): bad input, or (empty files) nothing to report
            refused = [(path, found.first()) for path, found in zip(options.inputs, problems) if found.first()]
            if refused:
                path, (line, message) = refused[0]
                message = message.removesuffix("; line skipped").removesuffix("; skipped")  # every tool's words
                raise AnalyzeError(f"{path}: no usable record (first problem: line {line}: {message})"
                                   + ("" if len(options.inputs) == 1 else "; nor in any other input"))
            if left_out:
                raise NoRecord(f"no record in {', '.join(options.inputs)} matches the selection "
                               f"({options.selection.text()})")
            raise NoRecord(f"no records in {', '.join(options.inputs)}")
        columns = report.finish(all_columns, spools) if want_csv else order_columns(all_columns)
        disk_writes.publish(temp_output, options.output)
        if report_csv == temp_output:
            report_csv = options.output
        action = append_to_database(options.database, report_csv, columns) if options.database else None
        return Summary(records=sum(rows), files=len(options.inputs), problems=sum(map(len, problems)),
                       statuses=statuses, columns=columns, output=options.output, database_action=action,
                       reader="compiled" if compiled else "python", left_out=left_out)
    finally:
        if report is not None:
            report.close()
        shutil.rmtree(spool, ignore_errors=True)
        if os.path.exists(temp_output):
            os.unlink(temp_output)

