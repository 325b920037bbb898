"""The site's page shell and its shared bits: the tools' look (results/html_style.STYLE) with the site's
few additions, a chart's data for site.js, numbers as the tables show them, a change's colour and title."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from benchmarks.results.html_style import STYLE, esc, script_json

SITE_STYLE = """
td.worse{background:#fde7e7;color:#9b1c14}td.better{background:#e6f4ea;color:#14591f}td .delta{font-size:.85em}
td.unsure .delta{color:#777}tr.newfail td{background:#fff0ee}.newfail-mark{color:#b3261e;font-weight:700}
.chart{margin:1em 0;min-height:300px}.u-legend{font-size:11px;line-height:1.2}.u-legend .u-series{padding:0 .2em}
.u-legend .u-series th{font-weight:normal}.runinfo{color:#555;font-size:.9em;min-height:1.3em}
nav{margin-bottom:1em;color:#555}nav a{margin-right:.8em}pre.cmd{background:#f4f5f8;padding:.6em .8em;
overflow-x:auto;border:1px solid #dde}.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));
gap:0 1.5em}
"""


def shell(title: str, body: str, depth: int, charts: Optional[list] = None) -> str:
    """A whole page; `depth`: how many directories below the site's root it is (for the assets' paths)."""
    up = "../" * depth
    data = f"<script>window.SITE_CHARTS={script_json(charts)};</script>\n" if charts else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><link rel=\"stylesheet\" href=\"{up}assets/uPlot.min.css\">"
            f"<link rel=\"stylesheet\" href=\"{up}assets/site.css\"></head><body>\n"
            f"<nav><a href=\"{up}index.html\">Summary</a></nav>\n{body}\n{data}"
            f"<script src=\"{up}assets/table_sort.js\"></script><script src=\"{up}assets/uPlot.iife.min.js\"></script>"
            f"<script src=\"{up}assets/site.js\"></script>\n"
            "</body></html>\n")


def css() -> str:
    return STYLE + SITE_STYLE


def slug(text: str) -> str:
    from benchmarks.plumbing.safe_paths import safe_name

    return safe_name(text)


def number(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return f"{value:.{digits}f}"


def finite(value) -> Optional[float]:
    value = None if value is None else float(value)
    return value if value is not None and math.isfinite(value) else None


def values_list(values: np.ndarray, scale: float = 1.0, digits: int = 6) -> list:
    """A chart's values: None for nan (uPlot's gap), rounded to keep the pages small."""
    return [None if not math.isfinite(v) else round(float(v) * scale, digits) for v in values]


def change_cell(baseline, newest, shift, higher_is_better: bool, text: str, ratio: bool = True,
                extra: str = "", exact: bool = False, untested: Optional[str] = None) -> str:
    """A table cell: the newest value, its change from the baseline under it, coloured when history's change
    points put a change between the two runs (worse red, better green), grey otherwise. exact: a count of
    events (a pass rate), not a noisy measurement: any difference is coloured."""
    baseline, newest = finite(baseline), finite(newest)
    if newest is None:
        return f'<td class="num"{extra}></td>'
    delta = ""
    css_class = "num"
    title = f"baseline {number(baseline, 4) or '-'}, newest {number(newest, 4)}"
    if baseline is not None:
        if ratio and baseline != 0:
            delta = f"{100 * (newest / baseline - 1):+.1f}%"
        else:
            delta = f"{newest - baseline:+.3g}"
        if exact and newest != baseline:
            css_class += " better" if (newest > baseline) == higher_is_better else " worse"
            title += "; configs passed or failed between them (events, not noise)"
        elif exact:
            css_class += " unsure"
        elif shift is not None:
            better = (newest > baseline) == higher_is_better
            css_class += " better" if better else " worse"
            title += f"; a change point between them (p = {shift.p_value:.3g})"
        else:
            css_class += " unsure"
            title += f"; {untested}" if untested else "; no change point between them"
    before = "" if baseline is None else f"{baseline:.6g}"
    return (f'<td class="{css_class}" data-sort="{newest:.6g}" data-baseline="{before}"'
            f' data-newest="{newest:.6g}" title="{esc(title)}"{extra}>{esc(text)}'
            + (f'<br><span class="delta">{delta}</span>' if delta else "") + "</td>")
