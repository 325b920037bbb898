"""aggregate.py's library: load results files, select datapoints, compute the four reports.

Reports follow upstream PyTorch/XLA's aggregate.py (same definitions, column names and rounding) over
the shared statistics in `stats`, without its limits: any accelerator, any dynamo backend, failed
records counted instead of averaged, missing data reported instead of crashing.

A *workload* is (accelerator_model, suite, model). Its speedup for a backend in one run (timestamp) is
the geomean over batch sizes of baseline time / backend time, the baseline being the first backend's
oldest (or newest) result for that workload and batch size. Every report carries `notes`: how many
models each backend includes and which were left out, and why.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
from datetime import datetime, timezone
from typing import Optional

from benchmarks.common import experiment_config
from benchmarks.common.cli_support import UsageError


from benchmarks.common import records, stats
from benchmarks.suites import SUITES, load_suite

log = logging.getLogger("benchmarks.aggregate")

TESTS = {"inference": "eval", "training": "train"}
REPORTS = ("speedup", "histogram", "latest", "latest_grouped")
METRICS = ("exec", "compile")
ESTIMATORS = ("median", "mean")
BASELINES = ("oldest", "latest")
# Upstream's names for its backends; any other name is shown as it is.
TITLES = {
    "eager": "Eager",
    "inductor": "Inductor",
    "openxla+dynamo": "XLA+Dynamo",
    "openxla+lazytensor": "XLA+LazyTensor",
    "openxla_eval+dynamo": "XLA_Eval+Dynamo",
}
# Default --backends order: eager first, as the natural baseline, then upstream's, then others by name.
CANONICAL_ORDER = ("eager", "inductor", "openxla+dynamo", "openxla+lazytensor", "openxla_eval+dynamo")
# Upstream aggregate drops the first 3 samples of records without warm-up (compile, then cache warm-up).
UPSTREAM_SKIP = 3
PERCENTILES = (95, 50, 5)
# A backend name, then a quantization recipe: eager, openxla+dynamo, inductor+int8wo, openxla+dynamo+int8dq.
BACKEND_NAME = re.compile(r"^[A-Za-z0-9_.\-]+(\+[A-Za-z0-9_.\-]+){0,2}$")
# Reasons a model is left out of a backend's numbers, in the order the notes list them.
LEFT_OUT = ("failed", "skipped", "no data", "no baseline", "missing")
MAX_NAMES = 6


class NoData(Exception):
    """Nothing to report: one line on stderr (plus the notes that say why), exit status 1."""

    def __init__(self, message: str, notes: tuple = ()):
        super().__init__(message)
        self.notes = list(notes)


@dataclasses.dataclass
class Options:
    """What to report; aggregate_cli fills it from the command line (same names as the flags)."""

    input_files: list
    accelerator: Optional[str] = None
    test: str = "inference"
    backends: Optional[list] = None
    baseline: str = "oldest"
    filter: list = dataclasses.field(default_factory=list)
    exclude: list = dataclasses.field(default_factory=list)
    filter_by_tier: list = dataclasses.field(default_factory=list)
    exclude_by_tier: list = dataclasses.field(default_factory=list)
    report: str = "speedup"
    metric: str = "exec"
    estimator: str = "median"
    skip_samples: Optional[int] = None
    title: Optional[str] = None


def backend_title(name: str) -> str:
    if name in TITLES:
        return TITLES[name]
    if name.endswith("+dynamo"):
        return name[: -len("+dynamo")] + "+Dynamo"
    return name


def utc_text(timestamp: float) -> str:
    """As upstream prints a run's time: naive UTC `str(datetime)`, microseconds only when non-zero."""
    return str(datetime.fromtimestamp(timestamp, timezone.utc).replace(tzinfo=None))


# ---------------------------------------------------------------- reading


def expand_inputs(paths: list) -> list:
    """Files, directories (every *.jsonl below) and glob patterns -> existing files, in order, once each."""
    try:
        return records.expand_input_paths(paths, recursive=True)
    except records.InputError as exc:
        raise UsageError(str(exc)) from None


def read_inputs(files: list) -> list:
    """Every record of every file, in order. Bad lines are skipped with a warning; a file with no
    JSON object line at all is not a results file (UsageError)."""
    try:
        return records.read_results_files(files)
    except records.InputError as exc:
        raise UsageError(str(exc)) from None


def _text(value) -> Optional[str]:
    return value if isinstance(value, str) else None


def _none_or_text(value) -> Optional[str]:
    return experiment_config.parse_none(value) if isinstance(value, str) else None


@dataclasses.dataclass
class Row:
    """One record, placed: which run, workload, backend and batch size it measures, and its outcome."""

    timestamp: float
    accelerator: str
    accelerator_model: str
    suite: str
    model: str
    backend: str
    test: str
    batch_size: object
    status: str
    variant: str
    record: dict
    pooled: list = dataclasses.field(default_factory=list)  # the ok records measured together (`deduplicate`)
    value: Optional[float] = None  # the time (s), once measured by `datapoint`
    spread: Optional[float] = None
    why: Optional[str] = None  # why an ok record has no value

    @property
    def workload(self) -> tuple:
        return (self.accelerator_model, self.suite, self.model)

    @property
    def batch_key(self):
        return "" if self.batch_size is None else self.batch_size


def record_row(record: dict) -> tuple:
    """(Row, None) for a record aggregate can place, or (None, why not)."""
    model, experiment = record.get("model"), record.get("experiment")
    if not isinstance(model, dict) or not isinstance(experiment, dict):
        return None, "no model or experiment"
    name = _text(model.get("model_name"))
    if not name:
        return None, "no model name"
    timestamp = record.get("timestamp")
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)) or not math.isfinite(timestamp):
        return None, "no timestamp"
    try:
        utc_text(timestamp)
    except (OverflowError, OSError, ValueError):
        return None, "timestamp out of range"
    test = _text(experiment.get("test"))
    if not test:
        return None, "no test"
    torch_xla2 = _none_or_text(experiment.get("torch_xla2"))
    if torch_xla2:
        backend = f"torch_xla2+{torch_xla2}"  # upstream would call these eager
    else:
        backend = experiment_config.backend_name(_none_or_text(experiment.get("xla")), _none_or_text(experiment.get("dynamo")))
    recipe = _none_or_text(experiment.get("quantization"))
    if recipe:  # a quantized model is its own backend: --backends eager --backends eager+int8wo compares them
        backend = f"{backend}+{recipe}"
    batch_size = experiment.get("batch_size")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, str, type(None))):
        batch_size = None
    # Keys that make two records of the same backend different configs (upstream ignores them).
    variant = {k: v for k, v in experiment.items() if k not in (
        "accelerator", "accelerator_model", "xla", "dynamo", "test", "batch_size", "torch_xla2", "experiment_name",
        "quantization")}
    if variant.get("enable_functionalization") is False:
        del variant["enable_functionalization"]
    variant = {k: v for k, v in variant.items() if v is not None}
    return Row(
        timestamp=float(timestamp),
        accelerator=str(experiment.get("accelerator") or "").lower(),
        accelerator_model=str(experiment.get("accelerator_model") or "unknown"),
        suite=str(model.get("suite_name") or ""),
        model=name,
        backend=backend,
        test=test,
        batch_size=batch_size,
        status=records.record_status(record),
        variant=json.dumps(variant, sort_keys=True, default=str),
        record=record,
    ), None


def load_rows(files: list) -> list:
    """One Row per placeable record, in input order."""
    rows, unplaced = [], {}
    for record in read_inputs(files):
        row, why = record_row(record)
        if row is None:
            unplaced[why] = unplaced.get(why, 0) + 1
        else:
            rows.append(row)
    for why, count in unplaced.items():
        log.warning("skipped %d record(s): %s", count, why)
    return rows


def list_accelerators(rows: list) -> str:
    """What --list-accelerators prints: one line per accelerator model."""
    if not rows:
        raise NoData("no records in the input files")
    lines = []
    for accel_model in sorted({r.accelerator_model for r in rows}):
        group = [r for r in rows if r.accelerator_model == accel_model]
        kinds = ",".join(sorted({r.accelerator for r in group if r.accelerator})) or "?"
        tests = ",".join(sorted({r.test for r in group}))
        runs = len({r.timestamp for r in group})
        lines.append(f"{accel_model}\t{kinds}\t{len(group)} records\t{runs} run{'s' if runs != 1 else ''}\t"
                     f"tests: {tests}\tbackends: {', '.join(order_backends({r.backend for r in group}))}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- selecting


def compile_regex(pattern: str, what: str) -> "re.Pattern":
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise UsageError(f"{what}: bad regular expression {pattern!r}: {exc}") from None


def accelerator_regex(pattern: str) -> "re.Pattern":
    """Case-insensitive search in accelerator_model. A plain name that starts or ends with a digit
    must not touch another digit there, so a100 finds "A100-SXM4-40GB" but not "RTX A1000"."""
    if re.fullmatch(r"[A-Za-z0-9 _\-]+", pattern):
        text = re.escape(pattern)
        if pattern[0].isdigit():
            text = r"(?<![0-9])" + text
        if pattern[-1].isdigit():
            text += r"(?![0-9])"
        return re.compile(text, re.IGNORECASE)
    return compile_regex(pattern, "--accelerator")


def order_backends(names) -> list:
    names = set(names)
    return [n for n in CANONICAL_ORDER if n in names] + sorted(names - set(CANONICAL_ORDER))


def select_accelerator(rows: list, pattern: Optional[str]) -> tuple:
    """(rows of the chosen accelerator(s), description for titles)."""
    found = sorted({r.accelerator_model for r in rows})
    if pattern is None:
        if len(found) > 1:
            raise UsageError("the input holds several accelerators (" + "; ".join(found)
                             + "): choose one with --accelerator NAME, or --accelerator=all")
        return rows, found[0] if found else "no accelerator"
    if pattern.lower() == "all":
        chosen = rows
    else:
        regex = accelerator_regex(pattern)
        chosen = [r for r in rows if r.accelerator == pattern.lower() or regex.search(r.accelerator_model)]
    if not chosen:
        raise NoData(f"no records for accelerator {pattern!r}; the input holds: " + "; ".join(found))
    models = sorted({r.accelerator_model for r in chosen})
    if len(models) == 1:
        return chosen, models[0]
    return chosen, f"{len(models)} accelerators" + ("" if pattern.lower() == "all" else f" matching {pattern!r}")


def tier_members(suites: list, tiers: list) -> set:
    """{(suite, model)} of the given tiers, from each suite's own tier lists."""
    members, defined = set(), {}
    for suite in suites:
        if suite not in SUITES:
            log.warning("suite %r is not known here: its models match no --filter-by-tier/--exclude-by-tier", suite)
            continue
        try:
            suite_tiers = load_suite(suite).tiers()
        except Exception as exc:  # a suite that cannot list its tiers must not stop the report
            log.warning("suite %s: cannot read its tiers (%s)", suite, exc)
            continue
        defined[suite] = sorted(suite_tiers)
        for tier in tiers:
            members.update((suite, name) for name in suite_tiers.get(tier, ()))
    for tier in tiers:
        if not any(tier in numbers for numbers in defined.values()):
            known = "; ".join(f"{s}: {', '.join(map(str, t)) or 'none'}" for s, t in defined.items()) or "none known"
            raise UsageError(f"no suite in the selected records has tier {tier} (tiers: {known})")
    return members


def select_models(rows: list, options: Options) -> list:
    keep = [compile_regex(p, "--filter") for p in options.filter]
    drop = [compile_regex(p, "--exclude") for p in options.exclude]
    suites = sorted({r.suite for r in rows})
    keep_tiers = tier_members(suites, options.filter_by_tier) if options.filter_by_tier else set()
    drop_tiers = tier_members(suites, options.exclude_by_tier) if options.exclude_by_tier else set()

    def wanted(suite: str, name: str) -> bool:
        # As upstream and the runner: -k and --filter-by-tier add up (a union); excludes win.
        if (keep or options.filter_by_tier) and not (
                any(p.search(name) for p in keep) or (suite, name) in keep_tiers):
            return False
        return not (any(p.search(name) for p in drop) or (suite, name) in drop_tiers)

    return [r for r in rows if wanted(r.suite, r.model)]


def check_backends(names: list) -> list:
    for name in names:
        if not BACKEND_NAME.match(name):
            raise UsageError(f"--backends: {name!r} is not a backend name (e.g. eager, inductor, "
                             "openxla+dynamo, openxla+lazytensor, openxla_eval+dynamo, aot_eager)")
    seen = set()
    for name in names:
        if name in seen:
            raise UsageError(f"--backends: {name} is given twice")
        seen.add(name)
    return list(names)


# ---------------------------------------------------------------- datapoints


def record_samples(record: dict, options: Options) -> tuple:
    """(the samples one successful record adds to its datapoint, None), or (None, why it adds none):
    its steady-state per-iteration times, or (--metric=compile) its one compile time."""
    import numpy as np

    metrics = record.get("metrics")
    metrics = metrics if isinstance(metrics, dict) else {}
    raw = metrics.get("total_time")
    total = stats.samples(raw)
    if total is None:
        if raw is None:
            return None, "total_time is null" if "total_time" in metrics else "no total_time"
        return None, "total_time is empty" if raw == [] else "total_time is not a list of numbers"
    if options.metric == "compile":
        value = stats.compile_time(record, total, upstream_rule="first-mean")
        return (None, "a single sample") if value is None else (np.array([value]), None)
    iterations = record.get("iterations_per_run")
    if isinstance(iterations, int) and not isinstance(iterations, bool) and iterations > 1:
        total = total / iterations  # per iteration, so runs with different iteration counts compare
    steady = stats.steady_state_or_none(total, record, options.skip_samples, UPSTREAM_SKIP)
    if steady is None:
        return None, f"all {len(total)} sample{'s' if len(total) != 1 else ''} skipped"
    return steady, None


def datapoint(found: list, options: Options) -> tuple:
    """(time, spread, None) of the successful records of one config in one run, their samples pooled (each
    --rounds round, or each resumed run of the same sweep, is one more process); or (None, None, why not)."""
    import numpy as np

    pooled, why = [], None
    for record in found:
        values, reason = record_samples(record, options)
        if values is None:
            why = reason
        else:
            pooled.append(values)
    if not pooled:
        return None, None, why
    if options.metric == "compile" and len(pooled) == 1:
        value, spread = float(pooled[0][0]), 0.0  # a single measurement, as upstream
    else:
        value, spread = stats.estimate(np.concatenate(pooled), options.estimator)
    if not math.isfinite(value) or value <= 0:
        return None, None, f"time {value:.3g} s is not positive"
    return value, spread, None


# ---------------------------------------------------------------- analysis


@dataclasses.dataclass
class Cell:
    """One backend in one run: per-workload speedups (value, error), and what was left out and why."""

    speedups: dict = dataclasses.field(default_factory=dict)
    left_out: dict = dataclasses.field(default_factory=dict)  # workload -> (reason, detail)

    def summary(self) -> Optional[tuple]:
        return stats.geomean(list(self.speedups.values())) if self.speedups else None

    def percentiles(self) -> Optional[list]:
        return stats.percentiles([v for v, _ in self.speedups.values()], PERCENTILES) if self.speedups else None


@dataclasses.dataclass
class Analysis:
    options: Options
    backends: list
    accelerator: str
    timestamps: list  # ascending: runs with any record of a selected backend
    cells: dict  # (timestamp, backend) -> Cell
    labels: dict  # workload -> display name
    universe: dict  # timestamp -> workloads with any record in that run
    rows: list = dataclasses.field(default_factory=list)  # the selected rows (one per run, workload, backend, batch)

    @property
    def base(self) -> str:
        return self.backends[0]

    def cell(self, timestamp: float, backend: str) -> Cell:
        return self.cells.get((timestamp, backend)) or Cell()


def prepare(options: Options) -> Analysis:
    """Read, select and compute every (run, backend) cell: the common ground of every report."""
    for name, value, choices in (("test", options.test, TESTS), ("report", options.report, REPORTS),
                                 ("metric", options.metric, METRICS), ("estimator", options.estimator, ESTIMATORS),
                                 ("baseline", options.baseline, BASELINES)):
        if value not in choices:
            raise UsageError(f"--{name} must be one of {', '.join(choices)}, not {value!r}")
    if options.skip_samples is not None and options.skip_samples < 0:
        raise UsageError(f"--skip-samples must be zero or more, not {options.skip_samples}")
    rows = load_rows(expand_inputs(options.input_files))
    if not rows:
        raise NoData("no records in the input files")
    rows, accelerator = select_accelerator(rows, options.accelerator)
    rows = [r for r in rows if r.test == TESTS[options.test]]
    if not rows:
        raise NoData(f"no {options.test} records for {accelerator}")
    rows = select_models(rows, options)
    if not rows:
        raise NoData(f"no {options.test} records for {accelerator} match the model filters")
    present = order_backends({r.backend for r in rows})
    backends = check_backends(options.backends) if options.backends else present
    for name in backends:
        if name not in present:
            log.warning("no %s records for backend %s (found: %s)", options.test, name, ", ".join(present))
    rows = [r for r in rows if r.backend in backends]
    if not rows:
        raise NoData(f"no {options.test} records of backend(s) {', '.join(backends)} for {accelerator} "
                     f"(found: {', '.join(present)})")
    rows = deduplicate(rows)
    for row in rows:
        if row.status == records.STATUS_OK:  # failed records are never measured, whatever they hold
            row.value, row.spread, row.why = datapoint(row.pooled, options)
    return compute(rows, options, backends, accelerator)


def deduplicate(rows: list) -> list:
    """One row per run, workload, backend and batch size. Its records of one config (the --rounds rounds,
    a resumed sweep's records) are pooled: the row is ok when any of them is, and measures the samples of
    all the ok ones. Records of another config under the same backend name: the last one read wins, as
    upstream."""
    groups, variants = {}, {}
    for row in rows:
        key = (row.timestamp, row.workload, row.backend, row.batch_key)
        groups.setdefault(key, []).append(row)
        variants.setdefault(key, set()).add(row.variant)
    out = []
    for group in groups.values():
        same = [r for r in group if r.variant == group[-1].variant]
        ok = [r for r in same if r.status == records.STATUS_OK]
        row = ok[-1] if ok else same[-1]
        row.pooled = [r.record for r in ok]
        out.append(row)
    if len(out) < len(rows):
        differing = sum(1 for v in variants.values() if len(v) > 1)
        if differing:
            log.warning("%d result(s) have records of different configs (xla_flags, functionalization, ...) "
                        "under one backend name; the last record read is used", differing)
        log.info("%d record(s) pooled with others of the same config and run", len(rows) - len(out))
    return out


def compute(rows: list, options: Options, backends: list, accelerator: str) -> Analysis:
    baseline: dict = {}
    base_rows = sorted((r for r in rows if r.backend == backends[0] and r.value is not None),
                       key=lambda r: r.timestamp)
    for row in base_rows:
        key = (row.workload, row.batch_key)
        if options.baseline == "latest" or key not in baseline:
            baseline[key] = (row.value, row.spread)

    groups: dict = {}  # (timestamp, backend) -> workload -> rows
    universe: dict = {}
    for row in rows:
        groups.setdefault((row.timestamp, row.backend), {}).setdefault(row.workload, []).append(row)
        universe.setdefault(row.timestamp, set()).add(row.workload)
    timestamps = sorted(universe)
    cells: dict = {}
    for key, by_workload in groups.items():
        cell = Cell()
        for workload, group in by_workload.items():
            pairs = [stats.speedup(baseline[(workload, r.batch_key)], (r.value, r.spread))
                     for r in group if r.value is not None and (workload, r.batch_key) in baseline]
            if pairs:
                # Batch sizes of one model combine by geomean (upstream does so even for one).
                cell.speedups[workload] = stats.geomean(pairs)
            else:
                cell.left_out[workload] = left_out_reason(group)
        cells[key] = cell
    for ts in timestamps:
        for backend in backends:
            cell = cells.setdefault((ts, backend), Cell())
            for workload in universe[ts]:
                if workload not in cell.speedups and workload not in cell.left_out:
                    cell.left_out[workload] = ("missing", None)
    return Analysis(options, backends, accelerator, timestamps, cells, workload_labels(rows), universe, rows)


def left_out_reason(rows: list) -> tuple:
    statuses = [r.status for r in rows]
    if any(r.value is not None for r in rows):
        return "no baseline", None
    failed = [s for s in statuses if s in records.FAILED_STATUSES]
    if failed:
        return "failed", failed[-1]
    if records.STATUS_SKIP in statuses:
        return "skipped", None
    whys = [r.why for r in rows if r.why]
    return "no data", whys[-1] if whys else None


def workload_labels(rows: list) -> dict:
    """Model names, made unique: with several accelerators the accelerator is added, with one model
    name in several suites the suite."""
    workloads = {r.workload for r in rows}
    accelerators = {w[0] for w in workloads}
    suites_of: dict = {}
    for _, suite, model in workloads:
        suites_of.setdefault(model, set()).add(suite)
    labels = {}
    for accel, suite, model in workloads:
        label = f"{suite}/{model}" if len(suites_of[model]) > 1 else model
        labels[(accel, suite, model)] = f"{label} [{accel}]" if len(accelerators) > 1 else label
    return labels


# ---------------------------------------------------------------- reports


@dataclasses.dataclass
class Table:
    """A report: csv column names, tab (multi-line) column names, rows (None = empty cell), notes,
    the plot title and what the plot needs."""

    report: str
    columns: list
    tab_columns: list
    rows: list
    notes: list
    title: str
    plot: dict

    def frame(self):
        """The rows as a pandas DataFrame (repeated column names made unique), for notebooks."""
        import pandas as pd

        names, seen = [], {}
        for column in self.columns:
            seen[column] = seen.get(column, 0) + 1
            names.append(column if seen[column] == 1 else f"{column}.{seen[column] - 1}")
        return pd.DataFrame(self.rows, columns=names)


def _round(value):
    return None if value is None else round(value, 8)


def speedup_header(analysis: Analysis, backend: str, tab: bool) -> str:
    title, base = backend_title(backend), backend_title(analysis.base)
    which = analysis.options.baseline.capitalize()
    if tab:
        return f"Speedup\n{title}\nover\n{which}\n{base}"
    return f"Speedup({title}/{which} {base})"


def build(options: Options) -> Table:
    analysis = prepare(options)
    builder = {"speedup": report_speedup, "histogram": report_histogram, "latest": report_latest,
               "latest_grouped": report_latest_grouped}[options.report]
    table = builder(analysis)
    if not any(value is not None for row in table.rows for value in row[1:]):
        raise NoData(f"no speedups to report for {analysis.accelerator} ({options.test}, backends "
                     f"{', '.join(analysis.backends)})", table.notes)
    return table


def report_speedup(analysis: Analysis) -> Table:
    columns, tab_columns = ["Datetime(UTC)"], ["Datetime(UTC)"]
    for backend in analysis.backends:
        columns += [speedup_header(analysis, backend, False), "StdDev"]
        tab_columns += [speedup_header(analysis, backend, True), "StdDev"]
    rows, series = [], {b: ([], []) for b in analysis.backends}
    for ts in analysis.timestamps:
        row = [utc_text(ts)]
        for backend in analysis.backends:
            summary = analysis.cell(ts, backend).summary()
            value, error = (None, None) if summary is None else summary
            row += [_round(value), _round(error)]
            series[backend][0].append(value)
            series[backend][1].append(error)
        rows.append(row)
    plot = {"kind": "timeseries", "x": [datetime.fromtimestamp(t, timezone.utc).replace(tzinfo=None)
                                        for t in analysis.timestamps],
            "series": [{"label": backend_title(b), "y": series[b][0], "yerr": series[b][1]} for b in analysis.backends],
            "ylabel": f"Geomean {metric_word(analysis)}speedup"}
    return Table("speedup", columns, tab_columns, rows, series_notes(analysis, analysis.timestamps),
                 plot_title(analysis, "geomean {m}speedup"), plot)


def report_histogram(analysis: Analysis) -> Table:
    columns, tab_columns = ["Datetime(UTC)"], ["Datetime(UTC)"]
    for backend in analysis.backends:
        title = backend_title(backend)
        columns += [f"{title} p{p}" for p in PERCENTILES]
        tab_columns += [f"{title}\np{p}" for p in PERCENTILES]
    rows, series = [], {b: [] for b in analysis.backends}
    for ts in analysis.timestamps:
        row = [utc_text(ts)]
        for backend in analysis.backends:
            points = analysis.cell(ts, backend).percentiles()
            row += [_round(p) for p in points] if points else [None] * len(PERCENTILES)
            series[backend].append(points or [None] * len(PERCENTILES))
        rows.append(row)
    plot = {"kind": "percentiles", "x": [datetime.fromtimestamp(t, timezone.utc).replace(tzinfo=None)
                                         for t in analysis.timestamps],
            "series": [{"label": backend_title(b), "p95": [p[0] for p in series[b]], "p50": [p[1] for p in series[b]],
                        "p5": [p[2] for p in series[b]]} for b in analysis.backends],
            "ylabel": sentence(f"{metric_word(analysis)}speedup per model")}
    return Table("histogram", columns, tab_columns, rows, series_notes(analysis, analysis.timestamps),
                 plot_title(analysis, "{m}speedup percentiles p5/p50/p95"), plot)


def newest_runs(analysis: Analysis, backends: list) -> dict:
    """accelerator_model -> its newest run with a speedup of any of `backends`, or else its newest run,
    so that what was left out is still told. Sweeps on different machines have different timestamps, so
    with several accelerators each keeps its own newest run."""
    runs: dict = {}
    for ts in reversed(analysis.timestamps):
        for backend in backends:
            for workload in analysis.cell(ts, backend).speedups:
                runs.setdefault(workload[0], ts)
    for ts in reversed(analysis.timestamps):
        for workload in analysis.universe[ts]:
            runs.setdefault(workload[0], ts)
    return runs


def merged_cell(analysis: Analysis, backend: str, runs: dict) -> Cell:
    """The backend's cell in each accelerator's chosen run, that accelerator's workloads only."""
    cell = Cell()
    for accel, ts in runs.items():
        source = analysis.cell(ts, backend)
        cell.speedups.update((w, v) for w, v in source.speedups.items() if w[0] == accel)
        cell.left_out.update((w, v) for w, v in source.left_out.items() if w[0] == accel)
    return cell


def runs_text(runs: dict) -> str:
    if len(runs) == 1:
        return f"run {utc_text(next(iter(runs.values())))}"
    return "runs " + "; ".join(f"{utc_text(ts)} on {accel}" for accel, ts in sorted(runs.items()))


def report_latest(analysis: Analysis) -> Table:
    columns, tab_columns = ["Workload"], ["Workload"]
    per_backend, notes = [], method_notes(analysis)
    for backend in analysis.backends:
        title = backend_title(backend)
        columns += [speedup_header(analysis, backend, False), "StdDev", f"ModelName({title})"]
        tab_columns += [speedup_header(analysis, backend, True), "StdDev", f"ModelName\n{title}"]
        runs = newest_runs(analysis, [backend])
        cell = merged_cell(analysis, backend, runs)
        # Ascending, as upstream: ties by error, then name.
        per_backend.append(sorted((value, error, analysis.labels[w]) for w, (value, error) in cell.speedups.items()))
        notes.append(cell_note(analysis, title, cell, f"newest {runs_text(runs)}"))
    length = max((len(p) for p in per_backend), default=0)
    rows = []
    for index in range(length):
        row = [index]
        for points in per_backend:
            value, error, name = points[index] if index < len(points) else (None, None, None)
            row += [_round(value), _round(error), name]
        rows.append(row)
    plot = {"kind": "sorted", "series": [
        {"label": backend_title(b), "y": [p[0] for p in pts], "yerr": [p[1] for p in pts], "names": [p[2] for p in pts]}
        for b, pts in zip(analysis.backends, per_backend)],
        "ylabel": sentence(f"{metric_word(analysis)}speedup")}
    return Table("latest", columns, tab_columns, rows, notes,
                 plot_title(analysis, "{m}speedup", "each backend's newest run, sorted"), plot)


def report_latest_grouped(analysis: Analysis) -> Table:
    columns, tab_columns = ["ModelName"], ["ModelName"]
    for backend in analysis.backends:
        columns += [speedup_header(analysis, backend, False), "StdDev"]
        tab_columns += [speedup_header(analysis, backend, True), "StdDev"]
    # One run for all backends (per accelerator), so each row compares like with like.
    runs = newest_runs(analysis, analysis.backends)
    notes = method_notes(analysis)
    for accel, ts in sorted(runs.items()):
        newest = max(t for t in analysis.timestamps if any(w[0] == accel for w in analysis.universe[t]))
        if newest != ts:
            log.warning("the newest run on %s (%s) has no speedups for the selected backends; reporting %s",
                        accel, utc_text(newest), utc_text(ts))
    cells = [merged_cell(analysis, backend, runs) for backend in analysis.backends]
    workloads = sorted((w for accel, ts in runs.items() for w in analysis.universe[ts] if w[0] == accel),
                       key=lambda w: (analysis.labels[w].casefold(), analysis.labels[w]))
    rows = []
    for workload in workloads:
        row = [analysis.labels[workload]]
        for cell in cells:
            value, error = cell.speedups.get(workload, (None, None))
            row += [_round(value), _round(error)]
        rows.append(row)
    geomean_row = ["GEOMEAN"]
    for cell in cells:
        summary = cell.summary()
        geomean_row += [None, None] if summary is None else [_round(summary[0]), _round(summary[1])]
    rows.append(geomean_row)
    for backend, cell in zip(analysis.backends, cells):
        notes.append(cell_note(analysis, backend_title(backend), cell, runs_text(runs)))
    plot = {"kind": "grouped", "names": [r[0] for r in rows], "series": [
        {"label": backend_title(b), "y": [r[1 + 2 * i] for r in rows], "yerr": [r[2 + 2 * i] for r in rows]}
        for i, b in enumerate(analysis.backends)], "xlabel": sentence(f"{metric_word(analysis)}speedup")}
    return Table("latest_grouped", columns, tab_columns, rows, notes,
                 plot_title(analysis, "{m}speedup per model", runs_text(runs)), plot)


# ---------------------------------------------------------------- notes and titles


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def metric_word(analysis: Analysis) -> str:
    return "compile-time " if analysis.options.metric == "compile" else ""


def plot_title(analysis: Analysis, what: str, detail: str = "") -> str:
    """What, against which baseline; then accelerator and test; then the user's --title."""
    options = analysis.options
    title = sentence(what.format(m=metric_word(analysis))) + f" over {options.baseline} {backend_title(analysis.base)}"
    title += (f", {detail}" if detail else "") + f"\n{analysis.accelerator}, {options.test}"
    if options.title:
        title += f"\n{options.title}"
    return title


def method_notes(analysis: Analysis) -> list:
    options = analysis.options
    base = backend_title(analysis.base)
    notes = [f"Speedup = {base} time / backend time (above 1 is faster), against the {options.baseline} {base} "
             "result of each model and batch size; batch sizes of one model combine by geomean."]
    if options.metric == "compile":
        notes.append("Time: compile time = first warm-up run - median timed run (records without warm-up: "
                     "first run - mean of the others).")
    else:
        skip = (f"first {options.skip_samples} samples skipped" if options.skip_samples is not None
                else f"warm-up excluded; records without warm-up skip their first {UPSTREAM_SKIP} samples")
        spread = "1.4826 x MAD" if options.estimator == "median" else "sample std (ddof 1)"
        notes.append(f"Time: {options.estimator} per iteration of the timed samples ({skip}); spread: {spread}.")
    return notes


def _names(items: list) -> str:
    shown = items[:MAX_NAMES]
    text = ", ".join(shown)
    if len(items) > len(shown):
        text += f", +{len(items) - len(shown)} more"
    return text


def left_out_text(left_out: dict, labels: dict) -> str:
    """'1 failed (BERT_pytorch: timeout), 2 missing (a, b)'."""
    parts = []
    for reason in LEFT_OUT:
        items = sorted(((labels[w], detail) for w, (r, detail) in left_out.items() if r == reason),
                       key=lambda item: item[0].casefold())
        if items:
            names = [f"{name}: {detail}" if detail else name for name, detail in items]
            parts.append(f"{len(items)} {reason} ({_names(names)})")
    return ", ".join(parts)


def cell_note(analysis: Analysis, title: str, cell: Cell, where: str) -> str:
    count = len(cell.speedups)
    text = f"{title}: {count} model{'s' if count != 1 else ''} ({where})"
    left = left_out_text(cell.left_out, analysis.labels)
    return text + (f"; left out: {left}" if left else "")


def series_notes(analysis: Analysis, timestamps: list) -> list:
    """Per backend: the newest run's models and left-outs, then the range over earlier runs."""
    notes = method_notes(analysis)
    newest, earlier = timestamps[-1], timestamps[:-1]
    for backend in analysis.backends:
        text = cell_note(analysis, backend_title(backend), analysis.cell(newest, backend),
                         f"newest run, {utc_text(newest)}")
        if earlier:
            counts = [len(analysis.cell(ts, backend).speedups) for ts in earlier]
            merged: dict = {}
            for ts in earlier:
                for workload, why in analysis.cell(ts, backend).left_out.items():
                    merged.setdefault(workload, why)
            span = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)} to {max(counts)}"
            text += (f"; {len(earlier)} earlier run{'s' if len(earlier) > 1 else ''}: {span} "
                     f"model{'' if max(counts) == 1 else 's'}")
            left = left_out_text(merged, analysis.labels)
            if left:
                text += f", left out in some: {left}"
        notes.append(text)
    return notes


# ---------------------------------------------------------------- text output


def format_csv(table: Table) -> str:
    """Upstream's CSV: header prefixed '# ', floats rounded to 8 decimals as Python prints them, '' for none."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([f"# {table.columns[0]}"] + table.columns[1:])
    for row in table.rows:
        writer.writerow(["" if v is None else str(v) for v in row])
    return out.getvalue()


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def format_tab(table: Table) -> str:
    """A plain-text grid (2 decimals, multi-line headers at the bottom of their cell), then the notes."""
    headers = [h.split("\n") for h in table.tab_columns]
    body = [[_cell_text(v) for v in row] for row in table.rows]
    numeric = [any(isinstance(row[i], (int, float)) and not isinstance(row[i], bool) for row in table.rows)
               for i in range(len(headers))]
    widths = [max([len(line) for line in lines] + [len(row[i]) for row in body]) for i, lines in enumerate(headers)]
    height = max(len(lines) for lines in headers)

    def rule(char: str) -> str:
        return "+" + "+".join(char * (w + 2) for w in widths) + "+"

    def line(cells: list, align: bool) -> str:
        parts = []
        for i, text in enumerate(cells):
            parts.append(text.rjust(widths[i]) if align and numeric[i] else text.ljust(widths[i]))
        return "| " + " | ".join(parts) + " |"

    out = [rule("-")]
    for k in range(height):
        out.append(line([(lines[k - (height - len(lines))] if k >= height - len(lines) else "") for lines in headers],
                        False))
    out.append(rule("="))
    for row in body:
        out.append(line(row, True))
        out.append(rule("-"))
    if not body:
        out.append(rule("-"))
    out.append("")
    out.extend(f"Note: {note}" for note in table.notes)
    return "\n".join(out) + "\n"
