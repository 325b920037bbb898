"""What `history show` and `history detect` print: tables, CSV, JSON, plots and an HTML section. Runs are
named by their date (UTC) and commit everywhere, plots' axes too; the HTML page has aggregate's look
(results/html_style.py)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from datetime import datetime, timezone
from typing import Optional

from benchmarks.history import changes
from benchmarks.plumbing.cli_support import shown as visible
from benchmarks.plumbing.plot_text import figure_bytes, plain_text
from benchmarks.results import accuracy_status, html_style, metric_catalog
from benchmarks.results.change_words import Word
from benchmarks.results.records import RecordStatus


@dataclasses.dataclass(frozen=True)
class Figure:
    """A generate run's figure as show names it (its declaration, unit and direction: results/metric_catalog.py)."""

    column: str  # the CSV's and JSON's name, with its unit
    metric: str  # the record's metric
    factor: float  # from the record's unit (seconds; tokens per second)
    header: Optional[str]  # the text table's header (None: CSV and JSON only)
    title: str  # a page's header, with its unit
    what: str

    @property
    def direction(self) -> str:
        return metric_catalog.direction(self.metric)

    @property
    def page_title(self) -> str:
        """The title with "(higher is better)" where more is (a rate): a page's column or chart."""
        return self.title + (" (higher is better)" if metric_catalog.higher_is_better(self.metric) else "")

    def of(self, point) -> Optional[float]:
        """The figure of a series.Point in this unit, or None."""
        value = point.figures.get(self.metric)
        return None if value is None else value * self.factor


GENERATION_COLUMNS = (
    Figure("ttft_ms", "time_to_first_token", 1e3, "ttft ms", "Time to first token (ms)",
           "time to first token (the prefill)"),
    Figure("decode_ms_per_token", "decode_per_token_time", 1e3, "decode ms/token", "Decode time per token (ms)",
           "the median time of each new token after the first"),
    Figure("decode_p90_ms_per_token", "decode_per_token_p90_time", 1e3, None, "Decode time per token, p90 (ms)",
           "their 90th percentile"),
    Figure("decode_tokens_per_s", "decode_tokens_per_second", 1.0, "tokens/s", "Decode tokens per second",
           "decode tokens per second"),
    # vLLM's and optimum-benchmark's per-token figures (docs/generation.md), in the CSV and JSON and on the config
    # page's table; the text table keeps the four above.
    Figure("tpot_ms", "time_per_output_token", 1e3, None, "TPOT (ms)",
           "time per output token: (the whole call - time to first token) / (new tokens - 1)"),
    *(Figure(f"itl_{stat}_ms", f"inter_token_latency_{stat}", 1e3, None, f"Inter-token latency, {stat} (ms)",
             f"the {stat} of the times between consecutive new tokens") for stat in ("mean", "p50", "p90", "p95", "p99",
                                                                                       "stdev")),
    Figure("itl_cv_pct", "inter_token_latency_cv", 100.0, None, "Inter-token latency, CV (%)",
           "the inter-token latencies' stdev / mean"),
    *(Figure(f"ttft_{stat}_ms", f"time_to_first_token_{stat}", 1e3, None, f"Time to first token, {stat} (ms)",
             f"the {stat} of the time to first token over the record's timed calls") for stat in ("p50", "p90", "p95",
                                                                                                 "p99")),
    # vLLM's own, every gap of every timed call pooled: its column names exactly (the itl_*_ms above are per call)
    *(Figure(f"{stat}_itl_ms", f"{stat}_itl", 1e3, None, f"Inter-token latency pooled over the calls, {stat} (ms)",
             f"the {stat} of every gap between new tokens of every timed call, pooled (vLLM's)")
      for stat in ("mean", "median", "p90", "p95", "p99", "std")),
    Figure("decode_gb_per_s", "decode_bytes_per_second", 1e-9, None, "Decode GB/s",
           "bytes per decoded token x decode tokens per second (gpt-fast's GB/s)"),
    Figure("decode_bandwidth_pct", "decode_bandwidth_fraction", 100.0, None, "Decode bandwidth (% of the ceiling)",
           "decode GB/s over the machine's measured memory bandwidth"),
)
# The figures the config page charts (the others are in its table).
CHARTED = ("time_to_first_token", "decode_per_token_time", "decode_per_token_p90_time", "decode_tokens_per_second",
           "time_per_output_token", "inter_token_latency_cv", "decode_bytes_per_second")
# Fixed: a forward model's rows leave the generation columns empty (each figure is the median over a record's timed
# runs, then over the run's rounds).
SERIES_COLUMNS = ("suite", "model", "backend", "test", "precision", "accelerator_model", "batch_size", "timestamp",
                  "time_utc", "commit", "host", "median_ms", "compile_s", "peak_mib", "status", "verification",
                  "accuracy", "graph_breaks", "processes", "change") + tuple(f.column for f in GENERATION_COLUMNS)


def _number(value, scale: float = 1.0, digits: int = 4) -> str:
    return "" if value is None else f"{value * scale:.{digits}g}"


def change_text(change) -> str:
    return f"{change.direction} x{change.ratio:.3f} [{change.ci[0]:.3f}, {change.ci[1]:.3f}]"


def shortage_text(shortage) -> str:
    """One line: how many configs are too short to decide, and the runs a change needs."""
    return (f"{len(shortage.series)} config(s) not tested for changes at alpha {shortage.alpha:g}: "
            + changes.minimum_text(shortage.alpha, shortage.min_size))


def _shortage_lines(shortage, limit: int = 20) -> list:
    lines = [shortage_text(shortage) + ":"]
    for one in shortage.series[:limit]:
        lines.append(f"  {visible(one.label)}  [{visible(one.labels['accelerator_model'])}]: "
                     f"{shortage.not_tested(one)} (smallest possible p-value {shortage.smallest_p(one):.3g})")
    if len(shortage.series) > limit:
        lines.append(f"  ... and {len(shortage.series) - limit} more (--format=json lists them all)")
    return lines


def _marks(changes: list) -> dict:
    """(config id, run id) -> the change that starts at that run."""
    return {(c.series.config_id, c.after.run_id): c for c in changes}


def has_figures(all_series: list) -> bool:
    """Whether any run of these series has generation figures (a roofline fraction alone is not one)."""
    return any(f.of(point) is not None for one in all_series for point in one.points for f in GENERATION_COLUMNS)


def series_rows(all_series: list, changes: list) -> list:
    marks = _marks(changes)
    rows = []
    for one in all_series:
        for point in one.points:
            change = marks.get((one.config_id, point.run_id))
            rows.append({**{k: one.labels[k] for k in SERIES_COLUMNS[:7]}, "timestamp": point.timestamp,
                         "time_utc": point.when(), "commit": point.commit, "host": point.host,
                         "median_ms": _number(point.median, 1e3, 6), "compile_s": _number(point.compile_s),
                         "peak_mib": _number(point.peak_memory, 1 / 2**20), "status": point.status,
                         "verification": point.verification, "accuracy": point.accuracy or "",
                         "graph_breaks": "" if point.graph_breaks is None else point.graph_breaks,
                         "processes": len(point.processes), "change": change_text(change) if change else "",
                         **{f.column: _number(f.of(point), digits=6) for f in GENERATION_COLUMNS}})
    return rows


def series_json(all_series: list, changes: list) -> str:
    """show --format json: each config's labels and runs, numbers as numbers (null: none), and each figure's
    direction."""
    marks = _marks(changes)
    configs = []
    for one in all_series:
        runs = []
        for point in one.points:
            change = marks.get((one.config_id, point.run_id))
            runs.append({"run_id": point.run_id, "timestamp": point.timestamp, "time_utc": point.when(),
                         "commit": point.commit, "host": point.host,
                         "median_ms": None if point.median is None else point.median * 1e3,
                         "compile_s": point.compile_s,
                         "peak_mib": None if point.peak_memory is None else point.peak_memory / 2**20,
                         "status": point.status, "verification": point.verification, "accuracy": point.accuracy,
                         "graph_breaks": point.graph_breaks, "processes": len(point.processes),
                         "change": None if change is None else {"direction": change.direction, "ratio": change.ratio,
                                                                "ci": list(change.ci), "p_value": change.p_value},
                         **{f.column: f.of(point) for f in GENERATION_COLUMNS}})
        configs.append({"config": one.label, "labels": one.labels, "runs": runs})
    directions = {"median_ms": metric_catalog.direction("time"), "compile_s": metric_catalog.direction("compile"),
                  "peak_mib": metric_catalog.direction("memory"),
                  **{f.column: f.direction for f in GENERATION_COLUMNS}}
    return json.dumps({"configs": configs, "directions": directions}, indent=2) + "\n"


def _width(figure: Figure) -> int:
    return max(len(figure.header), 9)


def figures_legend() -> list:
    """Lines naming the generation columns of the text table, with their directions."""
    return ["generation figures (medians over each run's timed runs):"] + [
        f"  {f.header}: {f.what}, {f.direction}" for f in GENERATION_COLUMNS if f.header]


def csv_text(rows: list, columns) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def series_table(all_series: list, changes: list, shortage=None) -> str:
    """Per config, a line per run; the generation figures' columns only where a shown series has them, so a table of
    forward models is as it always was."""
    marks = _marks(changes)
    figures = [f for f in GENERATION_COLUMNS if f.header] if has_figures(all_series) else []
    lines = []
    for one in all_series:
        # what a record said (a label, a commit, a host, a status) `visible`: a terminal escape or a newline from a
        # shared results file is shown as \x1b or \n, never sent to the terminal
        lines.append(f"{visible(one.label)}  [{visible(one.labels['accelerator_model'])}]")
        lines.append(f"  {'run (UTC)':19}  {'commit':10}  {'host':12}  {'median ms':>10}  {'compile s':>9}  "
                     f"{'peak MiB':>8}  " + "".join(f"{f.header:>{_width(f)}}  " for f in figures) + "status")
        for point in one.points:
            change = marks.get((one.config_id, point.run_id))
            lines.append(f"  {point.when():19}  {visible(point.commit[:10]):10}  {visible(point.host[:12]):12}  "
                         f"{_number(point.median, 1e3, 5):>10}  {_number(point.compile_s):>9}  "
                         f"{_number(point.peak_memory, 1 / 2**20):>8}  "
                         + "".join(f"{_number(f.of(point)):>{_width(f)}}  " for f in figures)
                         + visible(point.status) + (f"   <- {change_text(change)}" if change else ""))
        lines.append("")
    if figures:
        lines += figures_legend() + [""]
    if shortage is not None and shortage.series:
        lines += _shortage_lines(shortage) + [""]
    return "\n".join(lines)


def _run_text(point) -> str:
    return visible(point.run_text()) + (f" ({visible(point.host)})" if point.host else "")


def detect_text(changes: list, groups: list, found_events: list, method: str, n_series: int, shortage=None) -> str:
    untested = len(shortage.series) if shortage is not None else 0
    tested = f"{n_series - untested} config(s) tested" + (f" ({untested} not tested: too few runs)" if untested else "")
    lines = [f"{len(changes)} change(s) in {tested}, {len(found_events)} event(s); {method}"]
    if shortage is not None and shortage.series:
        lines += [""] + _shortage_lines(shortage)
    for found in groups:
        first = found.changes[0]
        scope = (f"platform-wide: {len(found.models)} models moved together" if found.platform
                 else f"{len(found.changes)} config(s)")
        lines.append(f"\nchange group {found.number} ({scope}), first run after: {_run_text(first.after)}")
        for change in found.changes:
            lines.append(f"  {change_text(change):40}  {visible(change.series.label)}")
            lines.append(f"      last before {_run_text(change.before)}; first after {_run_text(change.after)}; "
                         f"p={change.p_value:.3f}")
    if found_events:
        lines.append("\nevents:")
        for event in found_events:
            lines.append(f"  {event.kind:17} {visible(event.series.label)}: {visible(event.detail)}")
            lines.append(f"      last before {_run_text(event.before)}; first after {_run_text(event.after)}")
    return "\n".join(lines) + "\n"


def _point_json(point) -> dict:
    return {"run_id": point.run_id, "timestamp": point.timestamp, "time_utc": point.when(), "commit": point.commit,
            "host": point.host}


def detect_json(changes: list, groups: list, found_events: list, shortage=None) -> str:
    data = {
        "changes": [{"config": c.series.label, "labels": c.series.labels, "direction": c.direction,
                     "ratio": c.ratio, "ci": list(c.ci), "p_value": c.p_value, "group": c.group,
                     "before": _point_json(c.before), "after": _point_json(c.after)} for c in changes],
        "groups": [{"group": g.number, "platform": g.platform, "configs": len(g.changes),
                    "models": sorted(g.models)} for g in groups],
        "events": [{"kind": e.kind, "config": e.series.label, "labels": e.series.labels, "detail": e.detail,
                    "before": _point_json(e.before), "after": _point_json(e.after)} for e in found_events],
    }
    if shortage is not None:
        data["too_short"] = {"alpha": shortage.alpha, "runs_needed": shortage.runs_needed,
                             "configs": [{"config": one.label, "labels": one.labels, "runs": len(one.measured()),
                                          "smallest_p": shortage.smallest_p(one)} for one in shortage.series]}
    return json.dumps(data, indent=2) + "\n"


DETECT_COLUMNS = ("kind", "config", "direction", "ratio", "ci_low", "ci_high", "p_value", "group", "platform",
                  "before_time_utc", "before_commit", "after_time_utc", "after_commit", "detail")


def detect_rows(changes: list, groups: list, found_events: list, shortage=None) -> list:
    platform = {g.number: g.platform for g in groups}
    rows = [{"kind": "change", "config": c.series.label, "direction": c.direction, "ratio": f"{c.ratio:.4f}",
             "ci_low": f"{c.ci[0]:.4f}", "ci_high": f"{c.ci[1]:.4f}", "p_value": f"{c.p_value:.4f}",
             "group": c.group, "platform": platform.get(c.group, False), "before_time_utc": c.before.when(),
             "before_commit": c.before.commit, "after_time_utc": c.after.when(), "after_commit": c.after.commit}
            for c in changes]
    rows += [{"kind": e.kind, "config": e.series.label, "before_time_utc": e.before.when(),
              "before_commit": e.before.commit, "after_time_utc": e.after.when(), "after_commit": e.after.commit,
              "detail": e.detail} for e in found_events]
    if shortage is not None:
        rows += [{"kind": "too-short", "config": one.label,
                  "p_value": f"{shortage.smallest_p(one):.4f}",
                  "detail": f"{shortage.not_tested(one)} at alpha {shortage.alpha:g}"} for one in shortage.series]
    return rows


MAX_PLOTS = 16
# Up to this many runs in a panel, each run gets its own tick: its date and commit.
LABELLED_RUNS = 12


def _date(point):
    return datetime.fromtimestamp(point.timestamp, timezone.utc).replace(tzinfo=None)


def _tick_text(point, same_day: bool) -> str:
    when = _date(point).strftime("%m-%d %H:%M" if same_day else "%Y-%m-%d")
    return f"{when}\n{point.commit[:8]}" if point.commit else when


def _run_axis(axis, points: list) -> str:
    """The x axis of a panel: run dates (UTC), each run labelled with its date and commit when there are few
    (else the commits are named at the changes); returns the axis' title."""
    import matplotlib.dates as mdates

    days = [_date(p).date() for p in points]
    if len(points) <= LABELLED_RUNS:
        same_day = len(set(days)) < len(days)
        axis.set_xticks([_date(p) for p in points], [_tick_text(p, same_day) for p in points], fontsize=7)
        return "run date (UTC) and commit"
    else:
        locator = mdates.AutoDateLocator()
        axis.xaxis.set_major_locator(locator)
        axis.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        axis.tick_params(axis="x", labelsize=7)
        return "run date (UTC); commits at the changes"


@plain_text
def plot(all_series: list, changes: list, fmt: str) -> bytes:
    """One panel per config (the first MAX_PLOTS): per-iteration median by run date, changes as dashed lines
    between the last run before and the first after, labelled with their size and first commit after."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text: searchable, smaller (as aggregate's)
    shown = [s for s in all_series if s.measured()][:MAX_PLOTS]
    rows = max(1, len(shown))
    figure, axes = plt.subplots(rows, 1, figsize=(9, 2.6 * rows), squeeze=False)
    for axis, one in zip(axes[:, 0], shown):
        points = one.points
        measured = one.measured()
        axis.plot([_date(p) for p in measured], [p.median * 1e3 for p in measured], marker=".", lw=1)
        failed = [_date(p) for p in points if not p.processes and p.status != RecordStatus.SKIP]
        if failed:
            axis.plot(failed, [min(p.median for p in measured) * 1e3] * len(failed), "rx", label="failed")
        x_title = _run_axis(axis, points)
        for change in changes:
            if change.series is one:
                at = _date(change.before) + (_date(change.after) - _date(change.before)) / 2
                axis.axvline(at, color="tab:red", ls="--", lw=1)
                label = f"x{change.ratio:.3f}" + (f" at {change.after.commit[:8]}" if change.after.commit else "")
                axis.annotate(label, (at, axis.get_ylim()[1]), fontsize=8, color="tab:red", va="top")
        axis.set_title(one.label, fontsize=9)
        axis.set_ylabel("ms / iteration", fontsize=8)
    if shown:
        axes[-1, 0].set_xlabel(x_title, fontsize=8)
    figure.tight_layout()
    data = figure_bytes(figure, fmt)
    plt.close(figure)
    return data


def _inline_svg(all_series: list, changes: list) -> str:
    """The plot as inline SVG that scales with the page (no prolog, no fixed size: as aggregate's)."""
    svg = plot(all_series, changes, "svg").decode("utf-8")
    svg = svg[svg.index("<svg"):]
    return re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r"<svg\1", svg, count=1)


def _run_cells(point) -> str:
    return (f"<td>{html_style.esc(point.when())}</td><td><code>{html_style.esc(point.commit[:12])}</code></td>"
            f"<td>{html_style.esc(point.host)}</td>")


def _direction_class(direction: str) -> str:
    return {Word.SLOWER: "failed", Word.FASTER: "ok"}.get(direction, "")


def _event_class(kind: str) -> str:
    return "ok" if kind in (Word.FIXED, Word.ACCURACY_FIXED) else "failed"


def _changes_table(changes: list, found_events: list) -> str:
    head = ("<table class=\"changes\"><thead><tr><th>Config</th><th>Change</th><th>Size [95% interval]</th>"
            "<th>Last run before (UTC)</th><th>Commit</th><th>Host</th><th>First run after (UTC)</th><th>Commit</th>"
            "<th>Host</th></tr></thead><tbody>")
    rows = [f"<tr><td>{html_style.esc(c.series.label)}</td><td class=\"{_direction_class(c.direction)}\">{c.direction}</td>"
            f"<td class=\"num\">x{c.ratio:.3f} [{c.ci[0]:.3f}, {c.ci[1]:.3f}]</td>"
            f"{_run_cells(c.before)}{_run_cells(c.after)}</tr>" for c in changes]
    rows += [f"<tr><td>{html_style.esc(e.series.label)}</td><td class=\"{_event_class(e.kind)}\">"
             f"{html_style.esc(e.kind)}</td><td class=\"msg\">{html_style.esc(e.detail)}</td>{_run_cells(e.before)}"
             f"{_run_cells(e.after)}</tr>" for e in found_events]
    return head + "".join(rows) + "</tbody></table>" if rows else "<p>No change, no event.</p>"


def _series_table(one, marks: dict) -> str:
    shown = [f for f in GENERATION_COLUMNS if f.header] if has_figures([one]) else []
    rows = []
    for point in one.points:
        change = marks.get((one.config_id, point.run_id))
        kind = "ok" if point.status == RecordStatus.OK else "skipped" if point.status == RecordStatus.SKIP else "failed"
        verdict = point.accuracy or ""  # the run's one verdict (results/accuracy_status.py), not upstream's code
        rows.append(f"<tr>{_run_cells(point)}<td class=\"num\">{_number(point.median, 1e3, 5)}</td>"
                    f"<td class=\"num\">{_number(point.compile_s)}</td>"
                    f"<td class=\"num\">{_number(point.peak_memory, 1 / 2**20)}</td>"
                    + "".join(f"<td class=\"num\">{_number(f.of(point))}</td>" for f in shown) +
                    f"<td class=\"{kind}\">{html_style.esc(point.status)}</td>"
                    f"<td class=\"{'failed' if accuracy_status.failed(verdict) else ''}\">{html_style.esc(verdict)}</td>"
                    f"<td class=\"{_direction_class(change.direction) if change else ''}\">"
                    f"{html_style.esc(change_text(change)) if change else ''}</td></tr>")
    return (f"<h3>{html_style.esc(one.label)} <span class=\"small\">[{html_style.esc(one.labels['accelerator_model'])}]</span></h3>"
            "<div class=\"wide\"><table class=\"series\"><thead><tr><th>Run (UTC)</th><th>Commit</th><th>Host</th>"
            "<th>Median ms</th><th>Compile s</th><th>Peak MiB</th>"
            + "".join(f"<th title=\"{html_style.esc(f.what)}\">{html_style.esc(f.page_title)}</th>" for f in shown)
            + "<th>Status</th><th>Accuracy</th>"
            "<th>Change starting here</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")


def html_section(all_series: list, changes: list, found_events: list, shortage=None) -> str:
    """A <section class="history"> for an HTML page: the changes and events (runs by date, commit and host),
    the series plot (inline SVG), the configs too short to decide, and each config's runs as a table."""
    parts = ["<section class=\"history\"><h2>Changes and events</h2>",
             f"<p class=\"small\">{len(all_series)} config(s), {len(changes)} change(s), "
             f"{len(found_events)} event(s).</p>", _changes_table(changes, found_events)]
    if shortage is not None and shortage.series:
        items = "".join(f"<li>{html_style.esc(one.label)}: {html_style.esc(shortage.not_tested(one))} (smallest "
                        f"possible p-value {shortage.smallest_p(one):.3g})</li>" for one in shortage.series)
        parts.append(f"<div class=\"warn\"><b>Not tested.</b> {html_style.esc(shortage_text(shortage))}."
                     f"<ul>{items}</ul></div>")
    if any(one.measured() for one in all_series):
        shown = min(MAX_PLOTS, sum(1 for one in all_series if one.measured()))
        parts += ["<h2>Series</h2>", f"<p class=\"small\">Per-iteration median of each run (the first {shown} "
                  "config(s) with measurements); dashed lines mark the changes.</p>",
                  f"<div class=\"plot\">{_inline_svg(all_series, changes)}</div>"]
    marks = _marks(changes)
    parts += ["<h2>Runs per config</h2>"] + [_series_table(one, marks) for one in all_series]
    return "\n".join(parts) + "\n</section>\n"


def html_page(section: str, title: str = "Benchmark history") -> str:
    """A self-contained page around `section`, with aggregate's look."""
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (html_style.head(html_style.esc(title)) + f"<h1>{html_style.esc(title)}</h1>\n"
            f"<p class=\"small\">Made by history.py on {made}. Runs are named by their date (UTC), commit and "
            "host.</p>\n" + section + "</body></html>\n")
