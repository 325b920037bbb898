"""aggregate.py's command line: geomean speedup reports and plots over results files.

Flags have upstream PyTorch/XLA aggregate.py's names and meanings (docs/aggregate.md), and the conventions
shared by every tool (docs/command-line.md: --format, -o, exit statuses). Importing this module is cheap;
numpy and matplotlib load only once a report is being made.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from benchmarks.config.flags import Group, tool_parser
from benchmarks.plumbing.cli_support import (EXIT_BAD_NEWS, LOG_LEVELS, Parser, UsageError, choice, epilog, metavar,
                                             non_negative_int, refuse_overwrite, run_main, shown,
                                             write_output)
from benchmarks.results import metric_catalog, selection

log = logging.getLogger("benchmarks.aggregate")

REPORTS = ("speedup", "histogram", "latest", "latest_grouped", "dashboard")
FORMATS = ("csv", "table", "png", "svg", "html")
FORMAT_ALIASES = {"tab": "table"}  # this tool's name for the grid until issue 19
METRICS = ("time", "compile", *metric_catalog.speedup_metrics())
# upstream aggregate.py's name for time; short names of the generate figures
METRIC_ALIASES = {"exec": "time", **metric_catalog.short_names()}
IMAGE_FORMATS = ("png", "svg")


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value > 1000:
        raise argparse.ArgumentTypeError(f"must be a positive number of inches (at most 1000), not {text}")
    return value


def backend_list(text: str) -> list:
    from benchmarks.aggregate.inputs import split_backends

    return split_backends(text)


def joined_backends(argv: list) -> list:
    """upstream's `--backends a b c FILE...` as `--backends=a,b,c FILE...`: the names end at the first word that
    is a flag or an input (an existing path, a .jsonl, a glob), so the inputs are never taken for backends."""
    from benchmarks.aggregate.inputs import looks_like_backend

    out, index = [], 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if word != "--backends":
            out.append(word)
            continue
        names = []
        while index < len(argv) and not argv[index].startswith("-") and (not names or looks_like_backend(argv[index])):
            names.append(argv[index])
            index += 1
        out.append("--backends=" + ",".join(names) if names else word)
    return out


# The flags --help shows; --help-all adds the rest (a flag per experiment axis, statistics, plot sizes, ...).
BRIEF = {"--report", "--backends", "--baseline", "--metric", "--accelerator", "--test", "--filter", "--exclude",
         "--dynamo", "--precision", "--compile-mode", "--format", "--output"}


def declared_flags() -> list:
    """aggregate.py's flags, in --help's order (config/flags.py's one form)."""
    inputs, what, stats, out = Group(""), Group("what to report"), Group("statistics"), Group("output")
    return [
        inputs.arg("input_file", nargs="+", metavar="FILE",
                   help="results file (JSON lines), directory (every *.jsonl below it) or glob pattern"),
        what.arg("--report", choices=REPORTS, default="speedup",
                 help="speedup: geomean speedup per run; histogram: p95/p50/p5 of the per-model speedups "
                      "per run; latest: each backend's newest per-model speedups, sorted; latest_grouped: "
                      "one row per model of the newest run, plus GEOMEAN; dashboard: per run and backend (and axis "
                      "value), the pass rate, then over the passing configs the geomean speedup, mean compile "
                      "latency, compression ratio and peak memory (run with --verify) (default: %(default)s)"),
        what.arg("--list-accelerators", default=False, help="print the accelerators the files contain, then exit"),
        what.arg("--backends", extend=True, type=backend_list, metavar="B1,B2",
                 help="backends to report, comma-separated (repeatable; upstream's `--backends eager inductor` "
                      "also works and stops at the first input path); the first is the baseline. Names: eager, "
                      "inductor, openxla+dynamo, openxla+lazytensor, openxla_eval+dynamo, or any other dynamo "
                      "backend (aot_eager, ...). A name no record of the files has is an error (exit 2, with the "
                      "close matches), but for upstream's five above, which stay a warning and an empty column, "
                      "as upstream's aggregate.py gives them. Default: every backend in "
                      "the data, eager first, then inductor, openxla+dynamo, openxla+lazytensor, "
                      "openxla_eval+dynamo, others by name"),
        what.arg("--baseline", choices=("oldest", "latest"), default="oldest",
                 help="baseline per model and batch size: the first backend's oldest or newest result "
                      "(default: %(default)s)"),
        what.arg("--across", repeatable=True, default=(), metavar="AXIS",
                 help="measure the speedup across AXIS (repeatable; an axis a config shares with its baseline: "
                      "precision, quantization, allocator, ...): "
                      "each config against the first backend's config at the same other axes, at the first "
                      "backend's own AXIS value; e.g. --backends 'inductor[bf16],inductor+int8wo[bf16]' --across "
                      "quantization: a TorchAO recipe over the same model unquantized, as TorchAO measures it "
                      "(default: at every shared axis the config's own)"),
        what.arg("--metric", type=choice(METRICS, METRIC_ALIASES), default="time", metavar=metavar(METRICS),
                 help="time (upstream's exec, also taken): steady-state time per iteration (a generate run's: "
                      "the whole call, the harness's); compile: the first run, compilation included; or a "
                      "generate figure of the LLM rows (docs/generation.md): decode_tokens_per_second (decode; "
                      "a rate: speedup = backend rate / base rate), time_to_first_token (ttft), "
                      "decode_per_token_time, decode_per_token_p90_time (default: %(default)s)"),
        *selection.flags(axes=True),
        stats.arg("--estimator", choices=("median", "mean"), default="median",
                  help="per-record time: median (spread 1.4826 x MAD) or mean (sample std), over the "
                       "steady-state samples. --estimator=mean gives upstream aggregate.py's numbers "
                       "(default: %(default)s)"),
        stats.arg("--skip-samples", type=non_negative_int, metavar="N",
                  help="timed samples to drop from each record (default: 0 for records with a recorded "
                       "warm-up, 3 for records without, as upstream)"),
        out.arg("--format", type=choice(FORMATS, FORMAT_ALIASES), metavar=metavar(FORMATS),
                help="csv (upstream's), table (a readable grid; tab also taken), png or svg, or html (one "
                     "self-contained page: what was run, geomeans, plots, a sortable per-model table; --report does "
                     "not apply) (default: from --output's extension, else csv)"),
        out.arg("--output", short="-o", metavar="FILE",
                help="write here instead of stdout (- for stdout; png/svg go to stdout only when it is not a "
                     "terminal)"),
        out.arg("--title", help="extra line for the plot title"),
        out.arg("--fig-width", type=positive_float, default=9.0, metavar="INCHES",
                help="plot width (default: %(default)s)"),
        out.arg("--fig-height", type=positive_float, default=6.75, metavar="INCHES",
                help="plot height (default: %(default)s)"),
        out.arg("--log-level", choices=LOG_LEVELS, default="warning", help="messages on stderr (default: %(default)s)"),
    ]


def build_parser() -> Parser:
    return tool_parser(
        declared_flags(), BRIEF,
        prog="aggregate.py",
        usage="%(prog)s FILE [FILE ...] [--backends=B1,B2] [--report=REPORT] [--format=FORMAT] [-o FILE] [options]",
        description="Geomean speedup reports and plots over experiment_runner.py results files "
                    "(ours or upstream PyTorch/XLA's), for any accelerator.",
        examples=[("speedup over eager per run, as a grid on the terminal",
                   "aggregate.py output/ --accelerator=cpu --backends=eager,inductor --format=table"),
                  ("one page to share: what ran, geomeans, plots, a per-model table",
                   "aggregate.py output/ --accelerator=cpu --format=html -o report.html"),
                  ("pass rate, speedup, compile latency, memory (of a sweep run with --verify)",
                   "aggregate.py output/ --accelerator=cpu --report=dashboard --format=table"),
                  ("each model's newest speedups, training, as a PNG",
                   "aggregate.py output/ --accelerator=cpu --test=training --report=latest -o latest.png")],
        epilog=epilog(ok="the report was written",
                      bad_news="nothing to report (no record matches the selection, no speedup to compute)"),
    )


def output_format(options) -> str:
    if options.format:
        return options.format
    extension = os.path.splitext(options.output or "")[1].lower().lstrip(".")  # None or "-": no extension
    return extension if extension in ("csv", "png", "svg", "html") else "csv"


def write(data, options) -> None:
    write_output(data, options.output, options.input_paths)
    if options.output:
        log.info("wrote %s", options.output)


def run(options) -> int:
    from benchmarks.aggregate import analysis, inputs, reports, text_formats

    options.input_paths = inputs.expand_inputs(options.input_file)
    refuse_overwrite(options.output, options.input_paths)  # before the work: the report never replaces an input
    if options.list_accelerators:
        rows = inputs.load_rows(options.input_paths)
        write(inputs.list_accelerators(rows), options)
        return 0
    fmt = output_format(options)
    if fmt in IMAGE_FORMATS and not options.output and sys.stdout.isatty():
        raise UsageError(f"not writing {fmt.upper()} to a terminal: use --output FILE or redirect stdout")
    request = analysis.Options.from_flags(options, input_files=options.input_file, across=tuple(options.across),
                                          metric="exec" if options.metric == "time" else options.metric)
    if fmt == "html":
        from benchmarks.aggregate import html_report

        write(html_report.render(request, options.output, options.fig_width, options.fig_height), options)
        return 0
    table = reports.build(request)
    if fmt == "csv":
        write(text_formats.format_csv(table), options)
        # The CSV stays machine-readable; what it includes and leaves out goes to stderr.
        for note in table.notes:
            print(f"note: {shown(note)}", file=sys.stderr)
    elif fmt == "table":
        write(text_formats.format_tab(table), options)
    else:
        from benchmarks.aggregate import plots

        write(plots.render(table, fmt, options.fig_width, options.fig_height), options)
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[-1] == "--":  # upstream's `--backends a b --` with the files before it
        argv.pop()
    parser = build_parser()
    options = parser.parse_args(joined_backends(argv))
    if options.output == "-":
        options.output = None
    logging.basicConfig(level=options.log_level.upper(), format="aggregate.py: %(levelname)s: %(message)s",
                        force=True)
    return run_main(parser.prog, lambda: run_reporting_no_data(options), log)


def run_reporting_no_data(options) -> int:
    """run, with "no data" said as bad news (exit 1): its line, then the notes on what was left out."""
    from benchmarks.aggregate.inputs import NoData

    try:
        return run(options)
    except NoData as exc:
        print(f"aggregate.py: {exc}", file=sys.stderr)
        for note in exc.notes:
            print(f"note: {shown(note)}", file=sys.stderr)
        return EXIT_BAD_NEWS
