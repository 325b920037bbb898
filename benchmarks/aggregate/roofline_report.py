"""The roofline in aggregate's HTML page (docs/roofline.md): the newest run's configs as points on the machine's
roofline (log-log: x the arithmetic intensity in FLOPs per byte, y the achieved FLOP/s, a point per model and
backend, the FLOP ceiling of each dtype the points were held to and the bandwidth ceilings drawn), and a table per model and backend of the
record's `roofline`: FLOPs and bytes per iteration, intensity, achieved FLOP/s, bound, fraction of attainable, or why
there is none. Read from each record's `roofline` and environment.ceilings (results/roofline_figures.py)."""

from __future__ import annotations

from typing import Optional

from benchmarks.aggregate import inputs, reports
from benchmarks.results import roofline_figures
from benchmarks.results.html_style import esc

COLUMNS = ["model", "batch_size", "backend", "flops", "bytes", "arithmetic_intensity", "achieved_gflops_per_second",
           "bound", "fraction_of_attainable", "why_not"]


def newest_rows(analysis) -> list:
    """The newest run's rows (per accelerator model, as the per-model table takes them) that have a `roofline`."""
    runs = reports.newest_runs(analysis, analysis.backends)
    rows = [row for row in analysis.rows if runs.get(row.workload[0]) == row.timestamp
            and isinstance(row.record.get("roofline"), dict)]
    return sorted(rows, key=lambda r: (analysis.labels[r.workload].casefold(), str(r.batch_key), r.backend))


def _number(value) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def table_rows(analysis) -> list:
    out = []
    for row in newest_rows(analysis):
        roofline = row.record["roofline"]
        per = "token" if "flops_per_token" in roofline else "iteration"
        achieved = _number(roofline.get(roofline_figures.ACHIEVED_FLOPS))
        out.append([analysis.labels[row.workload], row.batch_key, inputs.backend_title(row.backend),
                    _number(roofline.get(f"flops_per_{per}")), _number(roofline.get(f"bytes_per_{per}")),
                    _number(roofline.get(roofline_figures.INTENSITY)), achieved / 1e9 if achieved else None,
                    roofline.get("bound"), roofline_figures.fraction_of(row.record),
                    roofline.get(roofline_figures.WHY_NOT)])
    return out


def plot_table(analysis) -> Optional[reports.Table]:
    """The roofline plot's Table (plots.render's kind `roofline`), None when no record has a point to draw."""
    points: dict = {}
    ceilings: Optional[dict] = None
    used = set()  # the FLOP ceilings the points were held to: only those are drawn
    for row in newest_rows(analysis):
        roofline = row.record["roofline"]
        x, y = _number(roofline.get(roofline_figures.INTENSITY)), _number(roofline.get(roofline_figures.ACHIEVED_FLOPS))
        if roofline_figures.fraction_of(row.record) is None or not x or not y:
            continue
        points.setdefault(inputs.backend_title(row.backend), []).append((x, y, analysis.labels[row.workload]))
        used.add(roofline.get(roofline_figures.CEILING_DTYPE) or roofline.get("dtype"))
        found = (row.record.get("environment") or {}).get("ceilings")
        if ceilings is None and isinstance(found, dict) and found.get("flops_per_second"):
            ceilings = found
    if not points or ceilings is None:
        return None
    flops = {dtype: peak for dtype, peak in ceilings["flops_per_second"].items() if dtype in used}
    return reports.Table("roofline", COLUMNS, COLUMNS, [], [], "Roofline: achieved FLOP/s against arithmetic intensity",
                         {"kind": "roofline", "points": points, "flops": flops,
                          "bytes_per_second": ceilings.get("bytes_per_second"),
                          "cache_bytes_per_second": ceilings.get("cache_bytes_per_second")})


def _cell(value, digits: int = 4) -> str:
    if value is None:
        return '<td class="num" data-sort=""></td>'
    if isinstance(value, float):
        return f'<td class="num" data-sort="{value:.6g}">{value:.{digits}g}</td>'
    return f"<td>{esc(value)}</td>"


def section(analysis, svg) -> str:
    """The page's roofline section; `svg(table)` renders a plot. Empty where no record has a `roofline`."""
    rows = table_rows(analysis)
    if not rows:
        return ""
    out = ['<h2 id="roofline">Roofline, newest run</h2>',
           '<p class="small">Each config\'s work counted once outside its timed runs (FLOPs by torch\'s FlopCounterMode, '
           "compulsory bytes), against the machine's ceilings measured by the child (environment.ceilings): "
           "fraction of attainable = max(FLOPs / peak FLOP/s, bytes / peak bytes/s) / median time per iteration "
           "(docs/roofline.md).</p>"]
    plot = plot_table(analysis)
    if plot is not None:
        out.append(f'<div class="plot">{svg(plot)}</div>')
    head = ["Model", "Batch", "Backend", "FLOPs", "Bytes", "FLOP/byte", "Achieved GFLOP/s", "Bound",
            "Fraction of attainable", "Why none"]
    out.append('<div class="wide"><table id="roofline-table" class="sortable"><thead><tr>'
               + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>")
    for model, batch, backend, flops, nbytes, intensity, achieved, bound, fraction, why in rows:
        out.append("<tr>" + f"<td>{esc(model)}</td>" + _cell(batch) + f"<td>{esc(backend)}</td>" + _cell(flops)
                   + _cell(nbytes) + _cell(intensity) + _cell(achieved) + f"<td>{esc(bound or '')}</td>"
                   + _cell(fraction, 3) + f'<td class="msg">{esc(why or "")}</td></tr>')
    out.append("</tbody></table></div>")
    return "\n".join(out)
