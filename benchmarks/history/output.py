"""What `history show` and `history detect` print: tables, CSV, JSON, plots and an HTML section."""

from __future__ import annotations

import csv
import html
import io
import json

SERIES_COLUMNS = ("suite", "model", "backend", "test", "precision", "accelerator_model", "batch_size", "timestamp",
                  "time_utc", "commit", "host", "median_ms", "compile_s", "peak_mib", "status", "verification",
                  "graph_breaks", "processes", "change")


def _number(value, scale: float = 1.0, digits: int = 4) -> str:
    return "" if value is None else f"{value * scale:.{digits}g}"


def change_text(change) -> str:
    return f"{change.direction} x{change.ratio:.3f} [{change.ci[0]:.3f}, {change.ci[1]:.3f}]"


def _marks(changes: list) -> dict:
    """(config id, run id) -> the change that starts at that run."""
    return {(c.series.config_id, c.after.run_id): c for c in changes}


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
                         "verification": point.verification,
                         "graph_breaks": "" if point.graph_breaks is None else point.graph_breaks,
                         "processes": len(point.processes), "change": change_text(change) if change else ""})
    return rows


def csv_text(rows: list, columns) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def series_table(all_series: list, changes: list) -> str:
    marks = _marks(changes)
    lines = []
    for one in all_series:
        lines.append(f"{one.label}  [{one.labels['accelerator_model']}]")
        lines.append(f"  {'run (UTC)':19}  {'commit':10}  {'host':12}  {'median ms':>10}  {'compile s':>9}  "
                     f"{'peak MiB':>8}  status")
        for point in one.points:
            change = marks.get((one.config_id, point.run_id))
            lines.append(f"  {point.when():19}  {point.commit[:10]:10}  {point.host[:12]:12}  "
                         f"{_number(point.median, 1e3, 5):>10}  {_number(point.compile_s):>9}  "
                         f"{_number(point.peak_memory, 1 / 2**20):>8}  {point.status}"
                         + (f"   <- {change_text(change)}" if change else ""))
        lines.append("")
    return "\n".join(lines)


def _run_text(point) -> str:
    return point.run_text() + (f" ({point.host})" if point.host else "")


def detect_text(changes: list, groups: list, found_events: list, method: str, n_series: int) -> str:
    lines = [f"{len(changes)} change(s) in {n_series} config(s), {len(found_events)} event(s); {method}"]
    for found in groups:
        first = found.changes[0]
        scope = (f"platform-wide: {len(found.models)} models moved together" if found.platform
                 else f"{len(found.changes)} config(s)")
        lines.append(f"\nchange group {found.number} ({scope}), first run after: {_run_text(first.after)}")
        for change in found.changes:
            lines.append(f"  {change_text(change):40}  {change.series.label}")
            lines.append(f"      last before {_run_text(change.before)}; first after {_run_text(change.after)}; "
                         f"p={change.p_value:.3f}")
    if found_events:
        lines.append("\nevents:")
        for event in found_events:
            lines.append(f"  {event.kind:17} {event.series.label}: {event.detail}")
            lines.append(f"      last before {_run_text(event.before)}; first after {_run_text(event.after)}")
    return "\n".join(lines) + "\n"


def _point_json(point) -> dict:
    return {"run_id": point.run_id, "timestamp": point.timestamp, "time_utc": point.when(), "commit": point.commit,
            "host": point.host}


def detect_json(changes: list, groups: list, found_events: list) -> str:
    data = {
        "changes": [{"config": c.series.label, "labels": c.series.labels, "direction": c.direction,
                     "ratio": c.ratio, "ci": list(c.ci), "p_value": c.p_value, "group": c.group,
                     "before": _point_json(c.before), "after": _point_json(c.after)} for c in changes],
        "groups": [{"group": g.number, "platform": g.platform, "configs": len(g.changes),
                    "models": sorted(g.models)} for g in groups],
        "events": [{"kind": e.kind, "config": e.series.label, "labels": e.series.labels, "detail": e.detail,
                    "before": _point_json(e.before), "after": _point_json(e.after)} for e in found_events],
    }
    return json.dumps(data, indent=2) + "\n"


DETECT_COLUMNS = ("kind", "config", "direction", "ratio", "ci_low", "ci_high", "p_value", "group", "platform",
                  "before_time_utc", "before_commit", "after_time_utc", "after_commit", "detail")


def detect_rows(changes: list, groups: list, found_events: list) -> list:
    platform = {g.number: g.platform for g in groups}
    rows = [{"kind": "change", "config": c.series.label, "direction": c.direction, "ratio": f"{c.ratio:.4f}",
             "ci_low": f"{c.ci[0]:.4f}", "ci_high": f"{c.ci[1]:.4f}", "p_value": f"{c.p_value:.4f}",
             "group": c.group, "platform": platform.get(c.group, False), "before_time_utc": c.before.when(),
             "before_commit": c.before.commit, "after_time_utc": c.after.when(), "after_commit": c.after.commit}
            for c in changes]
    rows += [{"kind": e.kind, "config": e.series.label, "before_time_utc": e.before.when(),
              "before_commit": e.before.commit, "after_time_utc": e.after.when(), "after_commit": e.after.commit,
              "detail": e.detail} for e in found_events]
    return rows


MAX_PLOTS = 16


def plot(all_series: list, changes: list, fmt: str) -> bytes:
    """One panel per config (the first MAX_PLOTS): per-iteration median by run, changes as dashed lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [s for s in all_series if s.measured()][:MAX_PLOTS]
    rows = max(1, len(shown))
    figure, axes = plt.subplots(rows, 1, figsize=(9, 2.4 * rows), squeeze=False)
    for axis, one in zip(axes[:, 0], shown):
        points = one.points
        place = {p.run_id: i for i, p in enumerate(points)}
        measured = one.measured()
        axis.plot([place[p.run_id] for p in measured], [p.median * 1e3 for p in measured], marker=".", lw=1)
        failed = [place[p.run_id] for p in points if not p.processes and p.status != "skip"]
        if failed:
            axis.plot(failed, [min(p.median for p in measured) * 1e3] * len(failed), "rx", label="failed")
        for change in changes:
            if change.series is one:
                axis.axvline(place[change.after.run_id] - 0.5, color="tab:red", ls="--", lw=1)
                axis.annotate(f"x{change.ratio:.3f}", (place[change.after.run_id] - 0.5, axis.get_ylim()[1]),
                              fontsize=8, color="tab:red", va="top")
        axis.set_title(one.label, fontsize=9)
        axis.set_ylabel("ms / iteration", fontsize=8)
    axes[-1, 0].set_xlabel("run (oldest first)")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt)
    plt.close(figure)
    return buffer.getvalue()


def html_section(all_series: list, changes: list, found_events: list) -> str:
    """A <section> for an HTML page: the plot (inline SVG) and the changes and events as a table."""
    svg = plot(all_series, changes, "svg").decode("utf-8")
    svg = svg[svg.index("<svg"):]
    rows = "".join(f"<tr><td>{html.escape(c.series.label)}</td><td>{c.direction}</td><td>x{c.ratio:.3f} "
                   f"[{c.ci[0]:.3f}, {c.ci[1]:.3f}]</td><td>{html.escape(_run_text(c.before))}</td>"
                   f"<td>{html.escape(_run_text(c.after))}</td></tr>" for c in changes)
    rows += "".join(f"<tr><td>{html.escape(e.series.label)}</td><td>{e.kind}</td><td>{html.escape(e.detail)}</td>"
                    f"<td>{html.escape(_run_text(e.before))}</td><td>{html.escape(_run_text(e.after))}</td></tr>"
                    for e in found_events)
    return ("<section class=\"history\"><h2>History</h2>\n"
            f"<p>{len(all_series)} config(s), {len(changes)} change(s), {len(found_events)} event(s).</p>\n"
            "<table><thead><tr><th>config</th><th>change</th><th>size</th><th>last run before</th>"
            f"<th>first run after</th></tr></thead><tbody>{rows}</tbody></table>\n{svg}\n</section>\n")


def html_page(section: str) -> str:
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>history</title><style>"
            "body{font-family:sans-serif} td,th{padding:2px 8px;text-align:left}</style></head><body>\n"
            f"{section}</body></html>\n")
