"""aggregate.py's reports, built from the analysis (analysis.py) as Tables: speedup, histogram, latest,
latest_grouped and dashboard (its lines: dashboard.py).

Reports follow upstream PyTorch/XLA's aggregate.py (same definitions, column names and rounding), without its
limits: any accelerator, any dynamo backend, failed records counted instead of averaged, missing data reported
instead of crashing. Every report carries `notes` (notes.py).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from datetime import datetime, timezone
from typing import Optional

from benchmarks.aggregate import dashboard
from benchmarks.aggregate.analysis import PERCENTILES, Analysis, Cell, Options, prepare
from benchmarks.aggregate.inputs import NoData, backend_title, utc_text
from benchmarks.results import metric_catalog, number_text
from benchmarks.aggregate.notes import cell_note, dashboard_notes, dashboard_title, method_notes, metric_word, \
    plot_title, runs_text, sentence, series_notes

log = logging.getLogger("benchmarks.aggregate")


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
               "latest_grouped": report_latest_grouped, "dashboard": report_dashboard}[options.report]
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
        cell.failed.update((w, v) for w, v in source.failed.items() if w[0] == accel)
        cell.figures.update((w, v) for w, v in source.figures.items() if w[0] == accel)
    return cell


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
    # One run for all backends (per accelerator), so each row compares like with like.
    runs = newest_runs(analysis, analysis.backends)
    cells = [merged_cell(analysis, backend, runs) for backend in analysis.backends]
    columns, tab_columns = ["ModelName"], ["ModelName"]
    for backend, cell in zip(analysis.backends, cells):
        named = figure_header(analysis, backend)
        columns += [speedup_header(analysis, backend, False), "StdDev"] + [
            f"Failed({backend_title(backend)})"] * bool(cell.failed) + list(named[:1])
        tab_columns += [speedup_header(analysis, backend, True), "StdDev"] + ["Failed\ncheck"] * bool(cell.failed) + \
            list(named[1:])
    notes = method_notes(analysis)
    for accel, ts in sorted(runs.items()):
        newest = max(t for t in analysis.timestamps if any(w[0] == accel for w in analysis.universe[t]))
        if newest != ts:
            log.warning("the newest run on %s (%s) has no speedups for the selected backends; reporting %s",
                        accel, utc_text(newest), utc_text(ts))
    workloads = sorted((w for accel, ts in runs.items() for w in analysis.universe[ts] if w[0] == accel),
                       key=lambda w: (analysis.labels[w].casefold(), analysis.labels[w]))
    rows = []
    for workload in workloads:
        row = [analysis.labels[workload]]
        for cell in cells:
            value, error = cell.speedups.get(workload, (None, None))
            row += [_round(value), _round(error)] + [failed_text(cell.failed.get(workload))] * bool(cell.failed)
            row += [_round(cell.figures.get(workload))] * bool(figure_header(analysis, ""))
        rows.append(row)
    geomean_row = ["GEOMEAN"]
    for cell in cells:
        summary = cell.summary()
        geomean_row += [None, None] if summary is None else [_round(summary[0]), _round(summary[1])]
        geomean_row += [f"{number_text.FAILED_MARK} {len(cell.failed)} in it"] * bool(cell.failed)
        geomean_row += [_round(figure_geomean(cell))] * bool(figure_header(analysis, ""))
    rows.append(geomean_row)
    for backend, cell in zip(analysis.backends, cells):
        notes.append(cell_note(analysis, backend_title(backend), cell, runs_text(runs)))
    if any(cell.failed for cell in cells):
        notes.append(number_text.FAILED_LEGEND)
    speedup_at = [columns.index(speedup_header(analysis, b, False)) for b in analysis.backends]
    plot = {"kind": "grouped", "names": [r[0] for r in rows], "series": [
        {"label": backend_title(b), "y": [r[i] for r in rows], "yerr": [r[i + 1] for r in rows]}
        for i, b in zip(speedup_at, analysis.backends)], "xlabel": sentence(f"{metric_word(analysis)}speedup")}
    return Table("latest_grouped", columns, tab_columns, rows, notes,
                 plot_title(analysis, "{m}speedup per model", runs_text(runs)), plot)


def figure_header(analysis: Analysis, backend: str) -> tuple:
    """(CSV, grid) names of the column of a named figure itself (--metric=decode_tokens_per_second: the tokens/s
    beside their speedup), or () for the time and compile words."""
    metric = analysis.options.metric
    if metric not in metric_catalog.speedup_metrics():
        return ()
    unit = metric_catalog.get(metric).unit
    return f"{metric}({backend_title(backend)}) [{unit}]", f"{metric}\n[{unit}]"


def figure_geomean(cell: Cell) -> Optional[float]:
    values = [v for v in cell.figures.values() if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def failed_text(verdict) -> Optional[str]:
    """The Failed cell of a speedup whose config failed its check: `✗fail_accuracy`; None for one that did not."""
    return None if verdict is None else f"{number_text.FAILED_MARK}{verdict}"


# The dashboard's figures: (csv column, tab column, Line attribute, factor), after the pass counts.
DASHBOARD_FIGURES = (("GeomeanSpeedup", "Geomean\nspeedup", "geomean_speedup", 1.0),
                     ("CompileLatency(s)", "Compile\nlatency\n(s)", "compile_latency", 1.0),
                     ("CompressionRatio", "Compression\nratio", "compression_ratio", 1.0),
                     ("PeakMemory(MiB)", "Peak\nmemory\n(MiB)", "peak_memory", 1 / dashboard.MIB))

# Figures a dashboard shows only where a line of it has them: a warm start's cold and warm compile and their saving,
# AOT precompile's load time.
OPTIONAL_FIGURES = (("ColdCompile(s)", "Cold\ncompile\n(s)", "cold_compile", 1.0),
                    ("WarmCompile(s)", "Warm\ncompile\n(s)", "warm_compile", 1.0),
                    ("CompileSaving(s)", "Compile\nsaving\n(s)", "compile_saving", 1.0),
                    ("AOTLoad(ms)", "AOT\nload\n(ms)", "aot_load", 1e3))


def dashboard_figures(lines: list) -> tuple:
    """The dashboard's figures: the four, then each optional one that a line has."""
    return DASHBOARD_FIGURES + tuple(f for f in OPTIONAL_FIGURES if any(getattr(l, f[2]) is not None for l in lines))


def dashboard_label(line: dashboard.Line, axis_keys: list) -> str:
    values = [dashboard.axis_text(line, k) for k in axis_keys]
    values = [v for v in values if v]
    return backend_title(line.backend) + (f"[{','.join(values)}]" if values else "")


def not_passed_text(line: dashboard.Line) -> str:
    """The NotPassed cell: 'not checked: run with --verify' for a line no check judged (no pass rate), then each
    status and its configs ('fail_accuracy: gamma; fail_to_run: delta')."""
    parts = [] if line.checked else [dashboard.NOT_CHECKED_TEXT]
    parts += [f"{status}: {', '.join(names)}" for status, names in line.not_passed().items()]
    return "; ".join(parts)


def report_dashboard(analysis: Analysis) -> Table:
    """One row per run, suite, backend and axis values: the pass rate, then the four figures over the configs
    that passed; the runs oldest first, so a drop shows (docs/aggregate.md)."""
    found = dashboard.lines(analysis)
    axis_keys = sorted({k for line in found for k in line.axes})
    columns = ["Datetime(UTC)", "Suite", "Backend"] + axis_keys + ["Passed", "Total", "PassRate(%)"]
    tab_columns = ["Datetime(UTC)", "Suite", "Backend"] + [k.replace("_", "\n") for k in axis_keys] + \
        ["Passed", "Total", "Pass\nrate\n(%)"]
    shown = dashboard_figures(found)
    columns += [c for c, _, _, _ in shown] + ["NotPassed"]
    tab_columns += [t for _, t, _, _ in shown] + ["Not passed"]
    rows, series = [], {}
    for line in found:
        figures = [getattr(line, name) for _, _, name, _ in shown]
        figures = [None if v is None else v * factor for v, (_, _, _, factor) in zip(figures, shown)]
        rows.append([utc_text(line.timestamp), line.suite, backend_title(line.backend)]
                    + [dashboard.axis_text(line, k) for k in axis_keys]
                    + [line.passed if line.checked else None, line.total, _round(line.pass_rate)]
                    + [_round(v) for v in figures] + [not_passed_text(line)])
        label = dashboard_label(line, axis_keys) + (f" ({line.suite})" if len({l.suite for l in found}) > 1 else "")
        points = series.setdefault(label, {"x": [], "pass_rate": [], "figures": [[] for _ in DASHBOARD_FIGURES[:3]]})
        points["x"].append(datetime.fromtimestamp(line.timestamp, timezone.utc).replace(tzinfo=None))
        points["pass_rate"].append(line.pass_rate)
        for values, value in zip(points["figures"], figures[:3]):
            values.append(value)
    panels = [("Pass rate (%)", "pass_rate", None)] + [(t.replace("\n", " "), None, i)
                                                       for i, (_, t, _, _) in enumerate(DASHBOARD_FIGURES[:3])]
    plot = {"kind": "dashboard", "series": [
        {"label": label, "x": p["x"], "panels": [p["pass_rate"]] + p["figures"]} for label, p in series.items()],
        "panels": [title for title, _, _ in panels]}
    return Table("dashboard", columns, tab_columns, rows, dashboard_notes(analysis, found),
                 dashboard_title(analysis), plot)
