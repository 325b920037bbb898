"""compare.py's command line: A/B comparison of two result sets, with intervals, verdicts and an exit status.

Exit status (docs/command-line.md): 0 nothing the --fail-on list names was found, 1 something was or
nothing matched to compare, 2 bad input (one line on stderr). Importing this module is cheap; numpy loads
once there is something to compare.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from benchmarks.compare.outcomes import DEFAULT_GATE_LIMIT
from benchmarks.config.flags import Group, tool_parser
from benchmarks.plumbing.cli_support import (LOG_LEVELS, BadNews, Parser, UsageError, choice, fraction, epilog, metavar,
                                             non_negative_int, positive_int, refuse_overwrite, run_main, setup_logging,
                                             timestamp, write_file)
from benchmarks.results import selection
from benchmarks.results.change_words import COMPARE_DEFAULT_FAIL_ON, Word

log = logging.getLogger("benchmarks.compare")

FORMATS = ("table", "csv", "json", "md")
FORMAT_ALIASES = {"tab": "table", "markdown": "md"}  # aggregate.py's old name for the grid, the long name
METRIC_ALIASES = {"exec": "time"}  # upstream aggregate.py's name for the per-iteration time


def confidence(text: str) -> float:
    value = fraction(text)
    if value < 0.5:
        raise argparse.ArgumentTypeError(f"must be at least 0.5 (a 50% interval), not {text}")
    return value


def fail_on(text: str) -> tuple:
    from benchmarks.compare import outcomes

    try:
        return outcomes.parse_fail_on(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def metric_name(text: str) -> str:
    return METRIC_ALIASES.get(text, text)


def axis_pair(text: str):
    from benchmarks.compare import matching

    try:
        return matching.parse_axis_pair(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


# The flags --help shows; --help-all adds the rest (a flag per experiment axis, the statistics, the gates' limits...).
BRIEF = {"--expected", "--write-expected", "--pair", "--latest", "--accelerator", "--test", "--backend", "--filter",
         "--exclude", "--dynamo", "--precision", "--compile-mode", "--metric", "--threshold", "--format", "--output",
         "--plot", "--fail-on"}


def declared_flags() -> list:
    """compare.py's flags, in --help's order (config/flags.py's one form)."""
    top, runs = Group(""), Group("which runs (a file may hold several, each its own timestamp)")
    what, out = Group("what to compare"), Group("output")
    return [
        top.arg("control", metavar="CONTROL", help="results file, directory (every *.jsonl below it) or glob"),
        top.arg("treatment", metavar="TREATMENT", nargs="?",
                help="results file, directory or glob (with --pair: optional, default CONTROL)"),
        top.arg("--expected", metavar="FILE",
                help="check CONTROL (the results) against an expected-results CSV (model, config, accuracy, and "
                     "dynamo's counts by the harness's graph-break rule: graph_breaks and fallbacks_to_eager "
                     "exactly, calls_captured down at most 5%%) instead of comparing two sides; a difference, a "
                     "win included, exits 1 and prints the lines that update FILE"),
        top.arg("--write-expected", metavar="FILE",
                help="write CONTROL's expected-results CSV to FILE (the first time, or to accept every change)"),
        top.arg("--pair", type=axis_pair, metavar="AXIS=CONTROL:TREATMENT",
                help="compare two values of one experiment axis of the same sweep, config by config (e.g. "
                     "compile_mode=default:max-autotune, or precision=fp32:bf16): records of CONTROL's value are "
                     "the control side, of TREATMENT's the treatment (a record without the key ran the default)"),
        runs.arg("--control-timestamp", type=timestamp, metavar="TIME",
                 help="only CONTROL's run of this timestamp (epoch seconds, or the ISO date or datetime a sweep's "
                      "--timestamp was given, e.g. 2026-11-18)"),
        runs.arg("--treatment-timestamp", type=timestamp, metavar="TIME",
                 help="only TREATMENT's run of this timestamp (as --control-timestamp)"),
        runs.arg("--latest", default=False, help="only the newest run of each side (unless its --*-timestamp names one)"),
        *selection.flags(test_default=None, accelerator_default="every one", backend=True, axes=True,
                         group="which records (of both sides)"),
        what.arg("--metric", default="time", type=metric_name,
                 help="time (per-iteration time, the default; upstream's exec also taken), compile (the first run, "
                      "compilation included), memory (peak memory: the device's, else the host's resident set; "
                      "sides whose kinds differ are not compared), paired (--speedup=paired records: the backend's "
                      "time relative to eager's in the same pair, so above 1 the speedup over eager fell), or a "
                      "metric's name in the records (a rate, such as decode_tokens_per_second, by its inverse: above "
                      "1 is worse for every metric)"),
        what.arg("--confidence", type=confidence, default=0.95, help="interval level (default 0.95)"),
        what.arg("--threshold", type=fraction, default=0.02,
                 help="smallest change that counts, as 0.02 or 2%% (default 2%%)"),
        what.arg("--skip-samples", type=non_negative_int, default=None, metavar="N",
                 help="samples to drop from the start of each record (default: 0 for ours, which keep "
                      "warm-up apart; 1 for upstream's, whose first holds compilation)"),
        what.arg("--resamples", type=positive_int, default=2000, help="bootstrap resamples (default 2000)"),
        what.arg("--seed", type=int, default=0,
                 help="the bootstrap's random seed (default 0: same inputs, same output)"),
        out.arg("--format", type=choice(FORMATS, FORMAT_ALIASES), default="table", metavar=metavar(FORMATS),
                help="table (the terminal's, default), csv, json (for scripts) or md (to paste in a review)"),
        out.arg("--output", short="-o", metavar="FILE", help="write the report here instead of stdout (- for stdout)"),
        out.arg("--plot", metavar="FILE", help="also draw a forest plot of the ratios (.png or .svg)"),
        out.arg("--color", choices=("auto", "always", "never"), default="auto",
                help="colour the table's verdicts (auto: when stdout is a terminal and NO_COLOR is unset)"),
        what.arg("--compression-limit", type=fraction, default=DEFAULT_GATE_LIMIT, metavar="FRACTION",
                 help="gate compression: the treatment's compression ratio (eager's peak memory / the "
                      "backend's) below the control's by more than this (default 10%%)"),
        what.arg("--compile-latency-limit", type=fraction, default=DEFAULT_GATE_LIMIT, metavar="FRACTION",
                 help="gate compile-latency: the treatment's compile latency (its first run - eager's) above "
                      "the control's by more than this (default 10%%)"),
        out.arg("--fail-on", type=fail_on, default=None, metavar="LIST",
                help="verdicts and gates that make the exit status 1: a comma list of slower, new-failure, "
                     "geomean (the geomean is slower), unsure, faster, ...; the gates accuracy (pass -> "
                     "anything else), graph-breaks, recompiles (went up), compression, compile-latency (past "
                     "their limit); or none (default: slower,new-failure)"),
        out.arg("--log-level", default="warning", choices=LOG_LEVELS, help="messages on stderr"),
    ]


def build_parser() -> Parser:
    return tool_parser(
        declared_flags(), BRIEF,
        prog="compare.py",
        usage="%(prog)s CONTROL [TREATMENT] [--fail-on=LIST] [--format=FORMAT] [-o FILE] [options]",
        description="Compare two sets of experiment_runner.py results (ours or upstream PyTorch/XLA's), config by "
                    "config: the treatment/control ratio with a confidence interval, a verdict, a geomean.",
        examples=[("verdicts per config: slower, faster, newly failing (exit 1 if any)",
                   "compare.py runs/base runs/mine"),
                  ("the same as Markdown for a review",
                   "compare.py runs/base runs/mine --format=md -o review.md"),
                  ("bf16 against fp32, config by config, within one sweep",
                   "compare.py output/ --pair precision=fp32:bf16"),
                  ("CI: check results against an expected-results CSV (accuracy, graph breaks, fallbacks)",
                   "compare.py output/ --expected expected.csv")],
        epilog=epilog(ok="nothing that --fail-on names was found",
                      bad_news="something --fail-on names was found (default: a config slower or newly failing), "
                               "or no config of CONTROL matches one of TREATMENT (nothing to compare)"),
    )


def _use_colour(choice: str, to_file: bool) -> bool:
    if choice != "auto":
        return choice == "always"
    return not to_file and sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def run(options) -> int:
    from benchmarks.compare import comparison, gates, matching, report_formats

    if options.plot and os.path.splitext(options.plot)[1].lower() not in (".png", ".svg"):
        raise UsageError(f"--plot {options.plot}: name a .png or .svg file")
    from benchmarks.results.measurement import Measurement

    if options.expected or options.write_expected:
        return check_expected(options)
    if options.treatment is None:
        if options.pair is None:
            raise UsageError("name a TREATMENT results file, or pair two axis values of CONTROL with --pair")
        options.treatment = options.control
    sides, runs, chosen = {}, {}, selection.Selection.of(options)
    runs_of = ("control", "treatment")
    # The report never replaces an input (checked before the work).
    read = matching.input_files([options.control], "control") + matching.input_files([options.treatment], "treatment")
    refuse_overwrite(options.output, read)
    refuse_overwrite(options.plot, read, "--plot")
    from benchmarks.compare import v3_sides

    found = v3_sides.place({side: matching.read_side([getattr(options, side)], side) for side in runs_of})
    for side in runs_of:
        picked = runs[side] = matching.pick_run(found[side], side, getattr(options, f"{side}_timestamp"),
                                                options.latest)
        if not picked:
            raise BadNews(f"{side}: no records in {getattr(options, side)}")
        sides[side] = chosen.select(picked, view=Measurement)
        if not sides[side]:
            raise BadNews(f"{side}: no records in {getattr(options, side)} match the selection ({chosen.text()})")
    if options.pair is not None:
        sides["control"] = options.pair.split(sides["control"])[0]
        sides["treatment"] = options.pair.split(sides["treatment"])[1]
        for side, value in (("control", options.pair.control), ("treatment", options.pair.treatment)):
            if not sides[side]:
                raise BadNews(f"--pair: no record of {getattr(options, side)} has {options.pair.axis}={value}")
    pairs = matching.pair(sides["control"], sides["treatment"])
    if not any(p.control and p.treatment for p in pairs):
        raise BadNews(f"no config of {options.control} matches one of {options.treatment} (a config is the "
                         "model and its experiment config; docs/compare.md, Matching)")
    settings = comparison.Settings(metric=options.metric, confidence=options.confidence, threshold=options.threshold,
                                   resamples=options.resamples, seed=options.seed, skip_samples=options.skip_samples,
                                   limits=gates.Limits(options.compression_limit, options.compile_latency_limit))
    report = comparison.compare(pairs, settings, (runs["control"], runs["treatment"]))
    from benchmarks.compare.metrics import KINDS

    if options.metric not in KINDS and report.geomean is None and set(report.counts) == {Word.NO_DATA}:
        raise UsageError(f"no matched config has samples of metric {options.metric!r} on both sides (metrics: "
                         "time, compile, memory, or a name in the records' `metrics`)")
    text = report_formats.render(report, options.format, _use_colour(options.color, bool(options.output)))
    if options.output:
        write_file(options.output, text)
    else:
        sys.stdout.write(text)
    if options.plot:
        fmt = os.path.splitext(options.plot)[1].lstrip(".").lower()
        write_file(options.plot, report_formats.forest_plot(report, fmt), "--plot")
    return comparison.exit_status(report, options.fail_on if options.fail_on is not None else COMPARE_DEFAULT_FAIL_ON)


def check_expected(options) -> int:
    """--expected FILE / --write-expected FILE: CONTROL's records (its runs and selection) against the file."""
    from benchmarks.compare import expected, matching
    from benchmarks.results.measurement import Measurement

    if options.treatment is not None or options.pair is not None:
        raise UsageError("--expected and --write-expected take one results set (RESULTS), without TREATMENT or --pair")
    if options.expected and options.write_expected:
        raise UsageError("--expected checks the file, --write-expected writes it: give one of them")
    # The newest run unless --control-timestamp names one: a results file that sweeps append to holds many.
    refuse_overwrite(options.write_expected, matching.input_files([options.control], "results"), "--write-expected")
    found = matching.pick_run(matching.read_side([options.control], "results"), "control",
                              options.control_timestamp, True)
    found = selection.Selection.of(options).select(found, view=Measurement)
    actual = expected.from_records(found)
    if not actual:
        raise BadNews(f"no records in {options.control} match the selection flags")
    if options.write_expected:
        write_file(options.write_expected, expected.render(actual), "--write-expected")
        print(f"wrote {options.write_expected}: {len(actual)} config(s)")
        return 0
    file = expected.read(options.expected)
    differences = expected.check(file, actual)
    sys.stdout.write(expected.report(options.expected, file.columns, differences, len(actual)))
    return 1 if differences else 0


def main(argv=None) -> int:
    parser = build_parser()
    options = parser.parse_args(argv)
    if options.output == "-":
        options.output = None
    setup_logging(options.log_level)
    return run_main(parser.prog, lambda: run(options), log)


if __name__ == "__main__":
    sys.exit(main())
