"""result_analyzer.py's command line: flags (upstream PyTorch/XLA's names, and the shared conventions of
docs/command-line.md), validation, the run's summary.

Importing this module is cheap (no numpy, no pandas): `--help` and bad flags answer at once.
"""

from __future__ import annotations

import logging
import os
import sys
import time

from benchmarks.config.flags import Group, tool_parser
from benchmarks.plumbing.cli_support import (EXIT_INTERNAL, LOG_LEVELS, BadNews, Parser, UsageError,
                                             choice, epilog, metavar, positive_int, refuse_overwrite, run_main,
                                             setup_logging, timestamp, write_output)
from benchmarks.results import records, selection

log = logging.getLogger("benchmarks.analyzer.pipeline")

FORMATS = ("csv", "jsonl", "oss-benchmark")
HUD_DASHBOARDS = ("inductor",)


# The flags --help shows (--help-all: every one).
BRIEF = {"--output-dirname", "--output", "--format", "--baseline-backend", "--database", "--filter", "--exclude",
         "--dynamo"}


def declared_flags() -> list:
    """result_analyzer.py's flags, in --help's order (config/flags.py's one form)."""
    from benchmarks.analyzer.oss_files import LAYOUTS

    top = Group("")
    return [
        top.arg("inputs", nargs="*", metavar="FILE",
                help="results files, directories (their *.jsonl) or quoted globs; default: every *.jsonl "
                     "in --output-dirname"),
        top.arg("--output-dirname", metavar="DIR",
                help="read every *.jsonl in DIR (when no FILE is given) and write DIR/metric_report.csv "
                     "(default DIR: ./output/, or the first FILE's directory)"),
        top.arg("--output", short="-o", metavar="FILE", help="write the report here instead (- for stdout)"),
        # --output-format: this tool's name until issue 19
        top.arg("--format", type=choice(FORMATS), default="csv", metavar=metavar(FORMATS), aliases=("--output-format",),
                help="report format (default csv); oss-benchmark: a JSON array of PyTorch OSS benchmark database "
                     "rows, one per record and metric (failed records are left out and counted on stderr)"),
        # --baseline: aggregate.py's --baseline is oldest|latest
        top.arg("--baseline-backend", metavar="BACKEND", aliases=("--baseline",),
                help="oss-benchmark: also a speedup row per record over this backend's record of the same "
                     "model, test, batch size and run (e.g. eager)"),
        top.arg("--hud-dashboard", type=choice(HUD_DASHBOARDS), metavar=metavar(HUD_DASHBOARDS),
                help="oss-benchmark: records in this HUD dashboard's names and grouping (inductor: the "
                     "TorchInductor dashboard's benchmark name, suites and metrics accuracy, speedup, abs_latency, "
                     "...)"),
        top.arg("--oss-layout", type=choice(LAYOUTS), metavar=metavar(LAYOUTS),
                help="oss-benchmark: a JSON list, JSON lines, or gzip'd JSON lines (default: as the -o file's "
                     "suffix says, .json / .jsonl / .jsonl.gz; a JSON list otherwise)"),
        top.arg("--database", metavar="FILE",
                help="also append the rows to this CSV, matched to its header by column name (new columns "
                     "rewrite it once; it is replaced atomically)"),
        top.arg("--hide-errors", default=False,
                help="leave error_message empty (status, error_type and error_phase still say what failed)"),
        top.arg("--timestamp", type=timestamp, metavar="TIME",
                help="timestamp for records that have none: epoch seconds or an ISO date or datetime (2026-11-18, "
                     "2026-11-18T03:00; UTC unless an offset is given) (default: now)"),
        top.arg("--jobs", type=positive_int, metavar="N",
                help="worker processes for large inputs (default: the usable cores)"),
        top.arg("--reader", default="auto", choices=["auto", "compiled", "python"],
                help="how records are read: the compiled reader (benchmarks/analyzer/_jsonl_scan.c, built by `pip "
                     "install -e .`), the pure-Python one, or auto: compiled when built (default). Both give the "
                     "same report"),
        top.arg("--log-level", default="info", choices=LOG_LEVELS, help="messages on stderr"),
        # which records get a row: the selection flags of every tool (results/selection.py)
        *selection.flags(test_default=None, accelerator_default="every one", backend=True, axes=True,
                         group="which records (default: every one)"),
        # Upstream's analyzer has this flag and ignores it; scripts that pass it keep working.
        top.arg("--experiment-name", default="run_all", choices=["run_all"], hidden=True, help=""),
    ]


def build_parser() -> Parser:
    return tool_parser(
        declared_flags(), BRIEF,
        prog="result_analyzer.py",
        usage="%(prog)s [FILE ...] [--output-dirname=DIR | -o FILE] [--format=FORMAT] [options]",
        description="Turn benchmark results (JSON Lines, ours or upstream PyTorch/XLA's) into one report row per "
        "record, with statistics per metric: CSV or JSON Lines, optionally appended to a long-lived CSV database.",
        examples=[("one CSV row per record: output/bench/metric_report.csv",
                   "result_analyzer.py --output-dirname=output/bench"),
                  ("every run's results in one CSV, also appended to a long-lived database",
                   "result_analyzer.py 'runs/*/results.jsonl' -o all.csv --database=db.csv"),
                  ("JSON Lines on stdout, for jq or pandas",
                   "result_analyzer.py output/bench --format=jsonl -o -"),
                  ("rows for PyTorch's OSS benchmark database, with speedups over eager",
                   "result_analyzer.py output/bench --format=oss-benchmark --baseline-backend=eager -o oss.json")],
        epilog=epilog(ok="the report was written",
                      bad_news="the inputs hold no record, or none the selection flags keep (nothing to report)"),
    )


def keep_freed_memory() -> None:
    """Let this process (and the workers it forks) keep the memory one byte range frees for the next.

    By default glibc hands large blocks back to the kernel as soon as they are freed, and every range then
    pays for fresh zeroed pages again: 760,000 page faults and 2.5 s of system time for a million records.
    Memory stays bounded by one range's needs. Other C libraries: nothing to do."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    mallopt(m_mmap_threshold, 256 << 20)
    mallopt(m_trim_threshold, 1 << 30)


def output_path(options) -> str:
    if options.output:
        return options.output
    directory = options.output_dirname
    if directory is None:
        directory = (os.path.dirname(options.input_files[0]) or ".") if options.inputs else "./output/"
    if options.format == "oss-benchmark":
        return os.path.join(directory, "oss_benchmark.json")
    return os.path.join(directory, f"metric_report.{options.format}")


def write_oss_benchmark(options, parser) -> int:
    """The OSS benchmark database records of every record (benchmarks/analyzer/oss_benchmark.py, or the dashboard's
    names: inductor_dashboard.py), each checked against the table's columns (oss_v3_schema.py) before any is
    written."""
    from benchmarks.analyzer import inductor_dashboard, oss_benchmark, oss_files, oss_v3_schema
    from benchmarks.results.measurement import Measurement

    refuse_overwrite(output_path(options), options.input_files, "the report")
    found = oss_benchmark.read_all(options.input_files)
    if not found:
        raise BadNews(f"no record in {', '.join(options.input_files)}")
    if options.selection is not None:
        found = options.selection.select(found, view=Measurement)
        if not found:
            raise BadNews(f"no record in {', '.join(options.input_files)} matches the selection "
                          f"({options.selection.text()})")
    if options.hud_dashboard == "inductor":
        rows, left_out = inductor_dashboard.rows(found)
    else:
        rows, left_out = oss_benchmark.rows(found, options.baseline_backend)
    for row in rows:
        wrong = oss_v3_schema.problems(row)
        if wrong:  # our bug, never the input's: say which field, write nothing
            raise RuntimeError(f"a record the database would not take as it is: {wrong[0]}")
    target = output_path(options)
    write_output(oss_files.encode(rows, oss_files.layout_of(target, options.oss_layout)), target)
    if target != "-":
        log.info("wrote %s (%d records)", target, len(rows))
    if left_out:
        counts = ", ".join(f"{count} {status}" for status, count in sorted(left_out.items()))
        why = "" if options.hud_dashboard else ", with no numbers to plot"
        print(f"{parser.prog}: {sum(left_out.values())} record(s) left out{why}: {counts}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    options = parser.parse_args(argv)
    setup_logging(options.log_level)
    # No BLAS here: its idle threads would only compete with the worker processes for the cores.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    keep_freed_memory()
    return run_main(parser.prog, lambda: run(options, parser), log)


def run(options, parser) -> int:
    """The run; bad input raises UsageError (exit 2), inputs without a record BadNews (exit 1)."""
    from concurrent.futures.process import BrokenProcessPool

    from benchmarks.analyzer import pipeline
    from benchmarks.analyzer.report_files import AnalyzeError, NoRecord

    started = time.perf_counter()
    options.selection = chosen_records(options)
    # -o names a file: a directory that is not there is a typo, not a request to create it (--output-dirname
    # names a directory and is created, as experiment_runner.py's is).
    folder = os.path.dirname(options.output or "")
    if options.output and options.output != "-" and folder and not os.path.isdir(folder):
        raise UsageError(f"-o {options.output}: no such directory {folder} (create it first, or use --output-dirname)")
    try:
        options.input_files = pipeline.find_inputs(options.inputs, options.output_dirname or "./output/")
        if options.hud_dashboard and options.format != "oss-benchmark":
            raise UsageError("--hud-dashboard names the records of --format=oss-benchmark")
        if options.format == "oss-benchmark":
            try:
                return write_oss_benchmark(options, parser)
            except records.InputError as exc:
                raise UsageError(str(exc)) from None
        target = output_path(options)
        if target == "-":
            summary = report_to_stdout(options)
        else:
            summary = pipeline.analyze(pipeline_options(options, target))
    except NoRecord as exc:
        raise BadNews(str(exc)) from None
    except AnalyzeError as exc:
        raise UsageError(str(exc)) from None
    except BrokenProcessPool as exc:  # a worker killed from outside (out of memory?) is no bug of ours: say so
        print(f"{parser.prog}: error: a worker process died ({exc}); try fewer --jobs", file=sys.stderr)
        return EXIT_INTERNAL
    seconds = time.perf_counter() - started
    counts = ", ".join(f"{count} {status}" for status, count in sorted(summary.statuses.items()))
    chose = f" chosen by {options.selection.text()} ({summary.left_out} left out)" if options.selection else ""
    log.info("%d record(s)%s from %d file(s) (%s) in %.2f s; %s", summary.records, chose, summary.files, counts,
             seconds, f"{summary.problems} problem(s) reported above" if summary.problems else "no problem")
    log.info("wrote %s (%d rows, %d columns; %s reader)", summary.output, summary.records, len(summary.columns),
             summary.reader)
    if summary.database_action:
        what = {"created": "created", "appended": "appended to",
                "rewritten": "rewritten with new columns and appended to"}[summary.database_action]
        log.info("%s database %s", what, options.database)
    return 0


def chosen_records(options):
    """The selection flags' Selection, None when they choose nothing (every record gets a row, as upstream's); a bad
    pattern or tier is a UsageError here, before any worker starts."""
    chosen = selection.Selection.of(options)
    if not chosen.text():
        return None
    from benchmarks.config import tiers

    chosen.matcher(sorted(tiers.TIERS))
    return chosen


def pipeline_options(options, output: str):
    from benchmarks.analyzer import pipeline

    run = pipeline.Options(
        inputs=options.input_files,
        output=output,
        output_format=options.format,
        database=options.database,
        hide_errors=options.hide_errors,
        fallback_timestamp=options.timestamp if options.timestamp is not None else time.time(),
        jobs=options.jobs or pipeline.default_jobs(),
        reader=options.reader,
        selection=options.selection,
    )
    refuse_overwrite(run.output, run.inputs, "the report")
    refuse_overwrite(run.database, run.inputs, "--database")
    return run


def report_to_stdout(options):
    """-o -: the report is written whole to a private directory (the pipeline writes in place, atomically),
    then copied to stdout."""
    import shutil
    import tempfile

    from benchmarks.analyzer import pipeline

    with tempfile.TemporaryDirectory(prefix="result-analyzer-") as directory:
        summary = pipeline.analyze(pipeline_options(options, os.path.join(directory, f"report.{options.format}")))
        with open(summary.output, "rb") as handle:
            shutil.copyfileobj(handle, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    summary.output = "stdout"
    return summary


if __name__ == "__main__":
    sys.exit(main())
