"""aggregate.py's analysis: each config's datapoint in each run (its time, through results/measurement.py),
the baseline, and every (run, backend) cell of per-model speedups with what was left out and why: the
common ground of every report (reports.py) and of the HTML page.

A *workload* is (accelerator_model, suite, model). Its speedup for a backend in one run (timestamp) is
the geomean over batch sizes of baseline time / backend time, the baseline being the first backend's
oldest (or newest) result for that workload and batch size at the same precision, quantization and other
shared axes (results/against_eager.shared_axes: the dashboard's rule), so that every table of a report has
one speedup per config.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from typing import Optional

from benchmarks.aggregate.inputs import CANONICAL_ORDER, NoData, check_backends, expand_inputs, load_rows, order_backends, \
    select_accelerator
from benchmarks.config import axes
from benchmarks.plumbing.cli_support import UsageError, unknown_name
from benchmarks.results import accuracy_status, against_eager, measurement, metric_catalog, metric_words, records, stats
from benchmarks.results.selection import TESTS, Selection

log = logging.getLogger("benchmarks.aggregate")

REPORTS = ("speedup", "histogram", "latest", "latest_grouped", "dashboard")
ESTIMATORS = ("median", "mean")
BASELINES = ("oldest", "latest")
# What --across may name: the axes a config shares with its baseline (precision, quantization, ...), never
# torch.compile's own (against_eager.BACKEND_ONLY_AXES).
ACROSS_AXES = tuple(key for key in axes.KEYS if key not in against_eager.BACKEND_ONLY_AXES)
PERCENTILES = (95, 50, 5)
# As upstream aggregate.py: records without warm-up lose their first 3 samples (compilation, then caches).
WARMUP = measurement.FIRST_THREE


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
    # Axes the speedup is measured across (--across): a config's baseline is the first backend's config at the same
    # other axes, at the first backend's own value of these (--across quantization: TorchAO's speedup of a recipe).
    across: tuple = ()
    # The experiment axes to keep (--precision, --compile-mode, --channels-last, ...): axis key -> the values asked
    # for (results/selection.py's AXES), empty: every value.
    axes: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_flags(cls, flags, **given) -> "Options":
        """From the parsed command line: every field of the flag of its name (none is dropped on the way), the axes
        as Selection.of reads them; `given`: fields the flags spell otherwise."""
        values = {field.name: getattr(flags, field.name) for field in dataclasses.fields(cls)
                  if field.name != "axes" and hasattr(flags, field.name)}
        values["axes"] = Selection.of(flags).axes
        return cls(**{**values, **given})

    @property
    def warmup(self) -> measurement.WarmupPolicy:
        return WARMUP if self.skip_samples is None else measurement.skip_exactly(self.skip_samples)


# ---------------------------------------------------------------- datapoints


def datapoint_samples(m: measurement.Measurement, options: Options) -> tuple:
    """(the samples one successful record adds to its datapoint, None), or (None, why it adds none): the metric
    word's (results/metric_words.py): its steady-state per-iteration times, (--metric=compile) its first run, or a
    generate figure's samples by name (a rate inverted)."""
    import numpy as np

    if options.metric == metric_words.COMPILE:
        value, why = metric_words.compile_seconds(m)
        return (None, why) if value is None else (np.array([value]), None)
    if options.metric in metric_catalog.speedup_metrics():
        return metric_words.named_samples(m, options.metric, options.warmup)
    return metric_words.time_samples(m, options.warmup)


def datapoint(found: list, options: Options) -> tuple:
    """(time, spread, None) of the successful records of one config in one run, their samples pooled (each
    --rounds round, or each resumed run of the same sweep, is one more process); or (None, None, why not)."""
    import numpy as np

    pooled, why = [], None
    for m in found:
        values, reason = datapoint_samples(m, options)
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


def paired_point(found: list, options: Options) -> Optional[tuple]:
    """(speedup, spread) of a config run with --speedup=paired: the estimator over its per-pair ratios eager/backend
    (every process's pairs pooled), which stands for baseline time / its time; None for an isolated config, or
    with --metric=compile (the pairs time steady runs only)."""
    import numpy as np

    found = [ratios for ratios in (m.paired_ratios() for m in found) if ratios is not None]
    if not found or options.metric != "exec":
        return None
    return stats.estimate(np.concatenate(found), options.estimator)


# ---------------------------------------------------------------- analysis


@dataclasses.dataclass
class Cell:
    """One backend in one run: per-workload speedups (value, error), and what was left out and why."""

    speedups: dict = dataclasses.field(default_factory=dict)
    paired: set = dataclasses.field(default_factory=set)  # workloads whose speedup is their own paired one
    left_out: dict = dataclasses.field(default_factory=dict)  # workload -> (reason, detail)
    # workload -> the accuracy status of a speedup whose config's outputs failed their check (accuracy_status.failed):
    # still in `speedups` and the geomean, as upstream's, and marked wherever it is shown
    failed: dict = dataclasses.field(default_factory=dict)
    # workload -> the figure itself in its unit (--metric naming a figure: 309 tokens/s), beside its speedup
    figures: dict = dataclasses.field(default_factory=dict)

    def summary(self) -> Optional[tuple]:
        return stats.geomean(list(self.speedups.values())) if self.speedups else None

    def passing_summary(self) -> Optional[tuple]:
        """The geomean over the speedups whose configs did not fail their check (the dashboard's rule)."""
        kept = [value for workload, value in self.speedups.items() if workload not in self.failed]
        return stats.geomean(kept) if kept else None

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
    # --metric: exec, the time per iteration (a generate run's: the whole call, the harness's); compile, the first run;
    # or a metric by name (results/metric_catalog.py's `speedup` ones, read when asked: a metric declared since counts),
    # a rate by its inverse so that a speedup is still baseline / backend: backend rate / baseline rate.
    metrics = ("exec", "compile", *metric_catalog.speedup_metrics())
    for name, value, choices in (("test", options.test, TESTS), ("report", options.report, REPORTS),
                                 ("metric", options.metric, metrics), ("estimator", options.estimator, ESTIMATORS),
                                 ("baseline", options.baseline, BASELINES)):
        if value not in choices:
            raise UsageError(f"--{name} must be one of {', '.join(choices)}, not {value!r}")
    for axis in options.across:
        if axis not in ACROSS_AXES:
            raise UsageError(unknown_name("--across: axis", axis, ACROSS_AXES))
    if options.across and options.report == "dashboard":
        raise UsageError("--across measures the speedup tables' baseline; the dashboard's figures are each config's "
                         "against eager at its own axes: pass one of them")
    if options.skip_samples is not None and options.skip_samples < 0:
        raise UsageError(f"--skip-samples must be zero or more, not {options.skip_samples}")
    rows = load_rows(expand_inputs(options.input_files))
    if not rows:
        raise NoData("no records in the input files")
    in_files = {r.backend for r in rows}
    # A name that no record of the files has and that is none of upstream's backends is a typo: exit 2, with the
    # close matches (upstream's names stay a warning and an empty column, as upstream's tool gives).
    for name in check_backends(options.backends) if options.backends else ():
        if name not in in_files and name not in CANONICAL_ORDER:
            raise UsageError(unknown_name("--backends: backend", name, order_backends(in_files))
                             + f" (the files hold: {', '.join(order_backends(in_files))})")
    rows, accelerator = select_accelerator(rows, options.accelerator)
    rows = Selection(test=options.test).select(rows, view=lambda row: row.measurement)
    if not rows:
        raise NoData(f"no {options.test} records for {accelerator}")
    models = Selection(filter=options.filter, exclude=options.exclude, filter_by_tier=options.filter_by_tier,
                       exclude_by_tier=options.exclude_by_tier, axes=dict(options.axes))
    whole = dataclasses.replace(models, axes={}).select(rows, view=lambda row: row.measurement)
    rows = models.select(whole, view=lambda row: row.measurement)
    if not rows:
        raise NoData(f"no {options.test} records for {accelerator} match the selection ({models.text()})")
    rows, family = with_baseline(rows, whole, options)
    present = order_backends({r.backend for r in rows})
    backends = check_backends(options.backends) if options.backends else present
    for name in backends:
        if name not in present:
            log.warning("no %s records for backend %s (found: %s)", options.test, name, ", ".join(present))
    first = next((r.measurement for r in rows if r.backend == backends[0]), None)
    # The baseline backend's configs at other shared axes (eager[bf16] for inductor[bf16]) are baselines even
    # when --backends leaves them out: one baseline rule for every table of a report (baseline_family).
    baselines = [r for r in rows + family if r.backend not in backends and first is not None
                 and baseline_family(r.measurement) == baseline_family(first)]
    rows = [r for r in rows if r.backend in backends]
    if not rows:
        raise NoData(f"no {options.test} records of backend(s) {', '.join(backends)} for {accelerator} "
                     f"(found: {', '.join(present)})")
    rows, baselines = deduplicate(rows), deduplicate(baselines)
    for row in rows + baselines:
        if row.status == records.RecordStatus.OK:  # failed records are never measured, whatever they hold
            row.value, row.spread, row.why = datapoint(row.pooled, options)
            if row.value is not None:
                row.paired = paired_point(row.pooled, options)
    return compute(rows, options, backends, accelerator, baselines)


def with_baseline(rows: list, whole: list, options: Options) -> tuple:
    """(`rows` with the baseline backend's configs, baseline-only rows): the axis flags select `rows` from `whole`,
    but a speedup stays over the baseline the whole report reads (`--dynamo=inductor` reports Inductor over eager,
    not over itself). The baseline is the first of --backends, else of the files' backends; its configs that only
    torch.compile's own axes (--dynamo, --xla, --compile-mode, ...) left out come back, a column as in the whole
    report, and its family at other shared axes (eager[bf16] for inductor[bf16]) as baselines only. The axes a
    config shares with its baseline (--precision, --quantization, ...) still select them."""
    base = (check_backends(options.backends) if options.backends else order_backends({r.backend for r in whole}))[0]
    first = next((r.measurement for r in whole if r.backend == base), None)
    if not options.axes or first is None or any(r.backend == base for r in rows):
        return rows, []
    shared = {key: values for key, values in options.axes.items()
              if key in axes.KEYS and key not in against_eager.BACKEND_ONLY_AXES}
    taken = {id(r) for r in rows}
    family = Selection(axes=shared).select(
        [r for r in whole if id(r) not in taken and baseline_family(r.measurement) == baseline_family(first)],
        view=lambda row: row.measurement)
    return [r for r in family if r.backend == base] + rows, [r for r in family if r.backend != base]


def baseline_family(m: measurement.Measurement) -> str:
    """The backend label without the axes a config shares with its baseline (against_eager.shared_axes): the
    baseline backend's configs at every precision, quantization, ... are one family."""
    return m.backend_label(omit=tuple(against_eager.shared_axes(m)))


def baseline_key(row, across: tuple = ()) -> tuple:
    """Which baseline result a row's speedup is over: the same workload and batch size, at the same shared axes
    (precision, quantization, ...), as the dashboard and the end-of-sweep table pair a config with eager; `across`
    (--across): axes left out, the baseline's own value of them being the first backend's (across_value)."""
    shared = {k: v for k, v in against_eager.shared_axes(row.measurement).items() if k not in across}
    return row.workload, row.batch_key, json.dumps(shared, sort_keys=True, default=str)


def across_values(m: measurement.Measurement, across: tuple) -> tuple:
    """A config's values of the --across axes (None: the axis's default), which a baseline must share with the
    first backend."""
    return tuple(m.axes.get(axis) for axis in across)


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
        ok = [r for r in same if r.status == records.RecordStatus.OK]
        row = ok[-1] if ok else same[-1]
        row.pooled = [r.measurement for r in ok]
        out.append(row)
    if len(out) < len(rows):
        differing = sum(1 for v in variants.values() if len(v) > 1)
        if differing:
            log.warning("%d result(s) have records of different configs (xla_flags, functionalization, ...) "
                        "under one backend name; the last record read is used", differing)
        log.info("%d record(s) pooled with others of the same config and run", len(rows) - len(out))
    return out


def compute(rows: list, options: Options, backends: list, accelerator: str, baselines: list = ()) -> Analysis:
    """Every (run, backend) cell; `baselines`: the baseline backend's configs at shared axes no selected backend
    has (they only serve as baselines)."""
    baseline: dict = {}
    across = tuple(options.across)
    first = next((r.measurement for r in rows if r.backend == backends[0]), None)
    family = [r for r in rows if first is not None and baseline_family(r.measurement) == baseline_family(first)]
    base_rows = sorted((r for r in family + list(baselines) if r.value is not None
                        and across_values(r.measurement, across) == across_values(first, across)),
                       key=lambda r: r.timestamp)
    for row in base_rows:
        key = baseline_key(row, across)
        if options.baseline == "latest" or key not in baseline:
            baseline[key] = (row.value, row.spread)

    # A paired config's own speedup is against eager: it stands for the baseline's only when the baseline is eager.
    eager_base = any(r.measurement.base_backend == against_eager.EAGER for r in rows if r.backend == backends[0])
    if not eager_base or across:  # across an axis, the baseline is another config than its own eager
        for row in rows:
            row.paired = None
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
            pairs = [r.paired if r.paired is not None else stats.speedup(baseline[baseline_key(r, across)],
                                                                          (r.value, r.spread))
                     for r in group if r.paired is not None or (r.value is not None
                                                                and baseline_key(r, across) in baseline)]
            if any(r.paired is not None for r in group):
                cell.paired.add(workload)
            if pairs:
                # Batch sizes of one model combine by geomean (upstream does so even for one).
                cell.speedups[workload] = stats.geomean(pairs)
                figure = figure_of(group, options.metric)
                if figure is not None:
                    cell.figures[workload] = figure
                verdict = failed_verdict(group)
                if verdict:
                    cell.failed[workload] = verdict
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


def figure_of(rows: list, metric: str) -> Optional[float]:
    """A named figure's value itself for a workload (its batch sizes' geomean, in the metric's unit: a rate as a
    rate), or None for the time and compile words (their speedup is the report)."""
    if metric not in metric_catalog.speedup_metrics():
        return None
    values = [r.value for r in rows if r.value is not None]
    if not values:
        return None
    value = math.exp(sum(math.log(v) for v in values) / len(values))
    return 1.0 / value if metric_catalog.higher_is_better(metric) else value


def failed_verdict(rows: list):
    """The first failing accuracy status of the ok records a workload's speedup is made of (every round, every batch
    size), or None: a speedup from outputs that failed their check is no win."""
    for row in rows:
        for m in row.pooled or ([row.measurement] if row.status == records.RecordStatus.OK else []):
            verdict = m.accuracy
            if accuracy_status.failed(verdict):
                return verdict
    return None


def left_out_reason(rows: list) -> tuple:
    statuses = [r.status for r in rows]
    if any(r.value is not None for r in rows):
        return "no baseline", None
    failed = [s for s in statuses if s in records.FAILED_STATUSES]
    if failed:
        return "failed", failed[-1]
    if records.RecordStatus.SKIP in statuses:
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
