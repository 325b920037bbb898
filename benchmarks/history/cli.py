"""history.py's command line: ingest results into a history database, show series, detect changes and
events, bisect a git repository to the commit that made a config slower. See docs/history.md; its flags,
formats and exit statuses follow docs/command-line.md.

Importing this module is cheap: numpy and matplotlib load only once there is something to compute.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from benchmarks.config.flags import Group, tool_parser
from benchmarks.plumbing.cli_support import (LOG_LEVELS, BadNews, Parser, UsageError, choice, choice_list, epilog,
                                             metavar, positive_int, refuse_overwrite, run_main, setup_logging,
                                             write_output)
from benchmarks.results import metric_catalog, selection
from benchmarks.results.change_words import HISTORY_DEFAULT_FAIL_ON, HISTORY_FAIL_ON

log = logging.getLogger("benchmarks.history")

NOTHING = "no config in the database matches the selection"
SHOW_FORMATS = ("table", "csv", "json", "png", "svg", "html")
DETECT_FORMATS = ("table", "csv", "json", "html")
# metric_words.TIME, the metric word for each run's per-iteration median: spelled here because metric_words imports
# numpy (through Measurement), which --help never loads
TIME = "time"
DETECT_METRICS = (TIME, *metric_catalog.speedup_metrics())


# The flags show's and detect's --help show; --help-all adds the rest (a flag per experiment axis, the detection's).
SERIES_BRIEF = {"--accelerator", "--test", "--backend", "--filter", "--exclude", "--dynamo", "--precision",
                "--compile-mode", "--min-runs", "--format", "--output", "--db"}


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {text}")
    return value


def fail_on(text: str) -> tuple:
    try:
        return choice_list(text, HISTORY_FAIL_ON)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def db_flags() -> list:
    top = Group("")
    return [top.arg("--db", metavar="FILE", help="the history database (default: OUTPUT_DIRNAME/history.sqlite)"),
            top.arg("--output-dirname", default="./output/", metavar="DIR",
                    help="where the default database lives (and bisect's runs) (default: ./output/)"),
            top.arg("--log-level", default="warning", choices=LOG_LEVELS, help="messages on stderr")]


def detection_flags() -> list:
    section = Group("change detection (E-divisive means; docs/history.md)")
    return [section.arg("--alpha", type=probability, default=0.01,
                        help="significance of each change: the false-alarm rate per series without a "
                             "change (default 0.01: about 1 false alarm per 100 clean series)"),
            section.arg("--permutations", type=positive_int, default=199,
                        help="permutations of the significance test (default 199)"),
            section.arg("--min-runs", type=positive_int, default=3, metavar="N",
                        help="fewest runs on each side of a change (at least 2; default 3)"),
            section.arg("--seed", type=int, default=0, help="random seed (default 0: same inputs, same output)")]


def selection_flags() -> list:
    return selection.flags(test_default=None, accelerator_default="every one", backend=True, axes=True)


def output_flags(formats) -> list:
    out = Group("output")
    return [out.arg("--format", choices=formats,
                    help=f"{', '.join(formats)} (default: from --output's extension, else table)"),
            out.arg("--output", short="-o", metavar="FILE",
                    help="write here instead of stdout (- for stdout; png/svg go to stdout only when it is not a "
                         "terminal)")]


def ingest_flags() -> list:
    top = Group("")
    return [top.arg("results", nargs="+", metavar="RESULTS", help="results file, directory or glob"),
            top.arg("--commit", metavar="SHA",
                    help="the commit of the code under test, for these records (default: each record's "
                         "environment.git_commit)"),
            *db_flags()]


def show_flags() -> list:
    return selection_flags() + detection_flags() + output_flags(SHOW_FORMATS) + db_flags()


def detect_flags() -> list:
    top = Group("")
    return [*selection_flags(), *detection_flags(), *output_flags(DETECT_FORMATS),
            top.arg("--metric", type=choice(DETECT_METRICS, metric_catalog.short_names()), default=TIME,
                    metavar=metavar(DETECT_METRICS),
                    help="what a change is found in: time (each run's per-iteration median; a generate run's "
                         "whole call), or a generate figure of the LLM rows, each run's median: "
                         "decode_tokens_per_second (decode; a rate: judged by its inverse, so `slower` is fewer "
                         "tokens per second), time_to_first_token (ttft), decode_per_token_time, "
                         "decode_per_token_p90_time; configs without it are left out (default: %(default)s)"),
            top.arg("--fail-on", type=fail_on, metavar="LIST",
                    help="what makes the exit status 1: a comma list of " + ", ".join(HISTORY_FAIL_ON)
                         + ", or none (default: slower,new-failure,accuracy-failure)"),
            *db_flags()]


def site_flags() -> list:
    top = Group("")
    return [top.arg("--output", short="-o", required=True, metavar="DIR", help="the site's directory"),
            top.arg("--newest", metavar="RUN",
                    help="the run to show: a date (YYYY-MM-DD: that day's last run), a commit prefix or a run id "
                         "(default: the newest)"),
            top.arg("--baseline", metavar="RUN",
                    help="the run to compare with, named as --newest (default: each line's run before its newest)"),
            top.arg("--window", type=positive_int, default=60, metavar="RUNS",
                    help="change points are searched in each series' newest RUNS runs (default 60)"),
            top.arg("--title", default="Nightly runs", help="the summary page's title"),
            *detection_flags(), *db_flags()]


def build_parser() -> Parser:
    p = Parser(prog="history.py", usage="%(prog)s {ingest,show,detect,bisect} ... (history.py COMMAND --help)",
               description="Regressions over time: a history database of results files, "
               "the series of each config, change points and events, and bisection to the commit.",
               examples=[("after each nightly sweep: store its records (output/history.sqlite)",
                          "history.py ingest output/nightly/ --commit=$(git rev-parse HEAD)"),
                         ("which configs changed, and when (exit 1 if one got slower)",
                          "history.py detect --fail-on slower"),
                         ("one model's series over the runs, as a plot",
                          "history.py show -k resnet --format=png -o resnet.png"),
                         ("the first commit at which it got slower",
                          "history.py bisect --repo ~/models --good v1.2 --bad main -- --suite-name=files "
                          "--search-dir=. --dynamo=inductor --test=eval")],
               epilog=epilog(ok="done (ingested; shown; no change or event that --fail-on names; first bad commit "
                                "named)",
                             bad_news="ingest: the files hold no record; show, detect: no config matches the "
                                      "selection; detect: a change or event --fail-on names; bisect: no first bad "
                                      "commit could be named"))
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser, prog="history.py")
    sub.required = True
    ingest = sub.add_parser("ingest", help="put results files' records into the database",
                            description="Put records (ours or upstream PyTorch/XLA's) into the history database. "
                            "A record is stored once however often its file is ingested; bad or torn lines are "
                            "reported and skipped.",
                            epilog=epilog(ok="the records were stored (or were already)",
                                          bad_news="the files hold no record",
                                          examples=["history.py ingest output/nightly/ --db history.sqlite"]))
    tool_parser(ingest_flags(), None, parser=ingest)
    show = sub.add_parser("show", help="each config's series by run, with its changes marked",
                          description="Per config, the per-iteration median (and compile time, peak memory, "
                          "status; for a model run by generate, its time to first token, decode time per token and "
                          "decode tokens per second, where more is better) of every run, with the detected changes "
                          "marked.",
                          epilog=epilog(ok="the series were written", bad_news=NOTHING,
                                        examples=["history.py show -k resnet --format=png -o resnet.png"]))
    tool_parser(show_flags(), SERIES_BRIEF, parser=show)
    detect = sub.add_parser("detect", help="change points and pass/accuracy events",
                            description="Per config, the runs where its time changed (E-divisive means with a "
                            "permutation test), the size with an interval, the configs that moved together; and "
                            "the pass, accuracy and graph-break events.",
                            epilog=epilog(ok="no change or event that --fail-on names",
                                          bad_news="a change or event that --fail-on names (default: slower, "
                                                   f"new-failure, accuracy-failure); {NOTHING}",
                                          examples=["history.py detect --fail-on slower,new-failure --format=json "
                                                    "-o changes.json"]))
    tool_parser(detect_flags(), SERIES_BRIEF | {"--metric", "--fail-on"}, parser=detect)
    _site_parser(sub)
    from benchmarks.history import bisect_cli

    bisect_cli.add_parser(sub)
    return p


def _site_parser(sub) -> None:
    site = sub.add_parser("site", help="a static site of the history: summary, per suite and backend, per config",
                          description="Write a static site (any web server or file:// shows it; no network at view "
                          "time): the dashboard's numbers per suite, backend label and test in the newest run against "
                          "a baseline run with trend charts, a page per suite and backend with one row per model, "
                          "and a page per config with its changes and the bisect command. Pages that did not "
                          "change are not written again.",
                          epilog=epilog(ok="the site was written", bad_news="the database holds no record",
                                        examples=["history.py site --db history.sqlite -o site/",
                                                  "history.py site -o site/ --baseline 2026-11-01 --newest abc1234"]))
    tool_parser(site_flags(), None, parser=site)


def database_path(options) -> str:
    return options.db or os.path.join(options.output_dirname, "history.sqlite")


def output_format(options) -> str:
    if options.format:
        return options.format
    extension = os.path.splitext(options.output or "")[1].lower().lstrip(".")
    return {"csv": "csv", "png": "png", "svg": "svg", "html": "html", "json": "json"}.get(extension, "table")


def write(data, options) -> None:
    write_output(data, options.output, [database_path(options)])  # -o never replaces the database it read


def run_ingest(options) -> int:
    from benchmarks.history import database, ingest
    from benchmarks.results import records

    try:
        files = records.expand_input_paths(options.results, recursive=True)
    except records.InputError as exc:
        raise UsageError(str(exc)) from None
    refuse_overwrite(database_path(options), files, "--db")
    connection = database.connect(database_path(options))
    try:
        with database.writing(database_path(options)):  # a full disk: one line naming the file, exit 2
            report = ingest.ingest(connection, files, options.commit)
    except records.InputError as exc:
        raise UsageError(str(exc)) from None
    finally:
        connection.close()
    for problem in report.problems:
        print(f"history.py: {problem}", file=sys.stderr)
    print(f"{report.summary()} -> {database_path(options)}")
    if not report.records:
        raise BadNews(f"no records in {', '.join(options.results)}")
    return 0


def _analysis(options) -> tuple:
    """(series, changes, groups, events, method text, Shortage) of the selected configs; UsageError when none."""
    from benchmarks.history import changes, database, events, records_view, series

    if options.min_runs < 2:
        raise UsageError("--min-runs must be at least 2")
    refuse_overwrite(options.output, [database_path(options)])  # before the work, as write() would at its end
    connection = database.connect(database_path(options), create=False)
    try:
        chosen = selection.Selection.of(options).select(database.configs(connection),
                                                        view=records_view.ConfigLabels.of_config)
        found_series = series.load(connection, chosen)
    finally:
        connection.close()
    if not found_series:
        chosen_text = selection.Selection.of(options).text()
        raise BadNews(NOTHING + (f" ({chosen_text})" if chosen_text else ""))
    metric = getattr(options, "metric", TIME)  # detect's: a generate figure instead of the time
    if metric != TIME:
        found_series = [series.on_figure(one, metric) for one in found_series
                        if any(metric in point.figures for point in one.points)]
        if not found_series:
            raise BadNews(f"no selected config has {metric}: only the models run by generate (docs/generation.md)")
    settings = changes.Settings(alpha=options.alpha, permutations=options.permutations, min_size=options.min_runs,
                                seed=options.seed)
    if settings.permutations + 1 < 1 / settings.alpha:
        raise UsageError(f"--permutations {settings.permutations} can't reach --alpha {settings.alpha}: "
                         f"use at least {int(1 / settings.alpha)}")
    found_changes = [c for one in found_series for c in changes.series_changes(one, settings)]
    runs = sorted({(p.timestamp, p.run_id) for one in found_series for p in one.points})
    run_order = {run_id: place for place, (_, run_id) in enumerate(runs)}
    groups = changes.group(found_changes, run_order, found_series, settings)
    found_events = [e for one in found_series for e in events.series_events(one)]
    on = "" if metric == TIME else f"on {metric}" + (
        " (a rate, judged by its inverse: slower is fewer per second), " if metric_catalog.higher_is_better(metric)
        else ", ")
    method = (f"{on}E-divisive means, alpha {settings.alpha:g} (about {100 * settings.alpha:g} false alarm(s) per 100 "
              f"series without a change), {settings.permutations} permutations or more; "
              + changes.minimum_text(settings.alpha, settings.min_size))
    shortage = changes.Shortage(settings.alpha, settings.min_size,
                                [one for one in found_series if changes.too_short(one, settings)])
    return found_series, found_changes, groups, found_events, method, shortage


def run_show(options) -> int:
    from benchmarks.history import formats

    found_series, found_changes, _, found_events, _, shortage = _analysis(options)
    fmt = output_format(options)
    if fmt == "csv":
        write(formats.csv_text(formats.series_rows(found_series, found_changes), formats.SERIES_COLUMNS), options)
    elif fmt == "json":
        write(formats.series_json(found_series, found_changes), options)
    elif fmt in ("png", "svg"):
        if options.output in (None, "-") and sys.stdout.isatty():
            raise UsageError(f"not writing {fmt.upper()} to a terminal: use --output FILE or redirect stdout")
        write(formats.plot(found_series, found_changes, fmt), options)
    elif fmt == "html":
        write(formats.html_page(formats.html_section(found_series, found_changes, found_events, shortage)), options)
    else:
        write(formats.series_table(found_series, found_changes, shortage), options)
    return 0


def run_detect(options) -> int:
    from benchmarks.history import formats

    found_series, found_changes, groups, found_events, method, shortage = _analysis(options)
    fmt = output_format(options)
    if fmt == "json":
        write(formats.detect_json(found_changes, groups, found_events, shortage), options)
    elif fmt == "csv":
        write(formats.csv_text(formats.detect_rows(found_changes, groups, found_events, shortage),
                              formats.DETECT_COLUMNS), options)
    elif fmt == "html":
        write(formats.html_page(formats.html_section(found_series, found_changes, found_events, shortage)), options)
    else:
        write(formats.detect_text(found_changes, groups, found_events, method, len(found_series), shortage), options)
    if shortage.series and fmt != "table":  # the table says it; a file written elsewhere would hide it
        print(f"history.py: note: {formats.shortage_text(shortage)}", file=sys.stderr)
    wanted = set(options.fail_on if options.fail_on is not None else HISTORY_DEFAULT_FAIL_ON)
    found = {c.direction for c in found_changes} | {e.kind for e in found_events}
    return 1 if wanted & found else 0


def run_site(options) -> int:
    from benchmarks.history import changes, database
    from benchmarks.history.site import build

    if options.min_runs < 2:
        raise UsageError("--min-runs must be at least 2")
    settings = changes.Settings(alpha=options.alpha, permutations=options.permutations, min_size=options.min_runs,
                                seed=options.seed)
    if settings.permutations + 1 < 1 / settings.alpha:
        raise UsageError(f"--permutations {settings.permutations} can't reach --alpha {settings.alpha}: "
                         f"use at least {int(1 / settings.alpha)}")
    if os.path.exists(options.output) and not os.path.isdir(options.output):
        raise UsageError(f"-o {options.output}: not a directory")
    path = database_path(options)
    connection = database.connect(path, create=False)
    try:
        if not database.counts(connection)["measurements"]:
            raise BadNews(f"{path} holds no record: ingest results first")
        report = build.build(connection, options.output, path, settings, options.window, options.newest,
                             options.baseline, options.title)
    finally:
        connection.close()
    print(f"{report.summary()} -> {os.path.join(options.output, 'index.html')}")
    return 0


def main(argv=None) -> int:
    from benchmarks.history import bisect_cli

    parser = build_parser()
    own, runner_flags = bisect_cli.split_runner_flags(list(sys.argv[1:] if argv is None else argv))
    options = parser.parse_args(own)
    if runner_flags and options.command != "bisect":
        parser.error(f"{options.command} takes no runner flags after --")
    if options.command == "bisect":
        options.runner_flags = runner_flags
    setup_logging(options.log_level)
    commands = {"ingest": run_ingest, "show": run_show, "detect": run_detect, "site": run_site,
                "bisect": bisect_cli.run}
    return run_main(parser.prog, lambda: commands[options.command](options), log)


if __name__ == "__main__":
    sys.exit(main())
