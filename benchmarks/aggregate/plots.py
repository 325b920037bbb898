"""PNG and SVG for aggregate.py's reports (matplotlib, Agg backend; imported only for those formats).

Speedups are ratios: a grey line marks 1 (no change), values below it stay below it, and a wide range
switches the speedup axis to a log scale so that 0.5x and 2x look equally far from 1.
"""

from __future__ import annotations

import io
import math

from benchmarks.plumbing.plot_text import figure_bytes, plain_text

MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*")
LOG_SCALE_RATIO = 20.0  # max/min speedup beyond which a linear axis hides the small ones
NOTE_FONT_SIZE = 7


def _finite(values) -> list:
    return [v for v in values if v is not None and math.isfinite(v) and v > 0]


def _nan(values) -> list:
    return [math.nan if v is None else v for v in values]


def _maybe_log(ax, which: str, values: list) -> bool:
    values = _finite(values)
    if not values or max(values) / min(values) <= LOG_SCALE_RATIO:
        return False
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    axis = ax.yaxis if which == "y" else ax.xaxis
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # 0.5, 1, 2, 5, 10 rather than 10^0
    axis.set_minor_formatter(NullFormatter())
    return True


@plain_text
def render(table, fmt: str, fig_width: float, fig_height: float) -> bytes:
    """The report `table` (reports.Table) as PNG or SVG bytes."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    # Keep SVG text as text: searchable, selectable, smaller.
    matplotlib.rcParams["svg.fonttype"] = "none"
    plot = table.plot
    if plot["kind"] == "grouped":
        # One bar per model and backend: grow the figure rather than overlap the labels.
        rows = len(plot.get("names", ())) * max(1, len(plot.get("series", ())))
        fig_height = max(fig_height, 1.5 + 0.22 * rows)
    fig = Figure(figsize=(fig_width, fig_height), layout="constrained")
    if plot["kind"] == "dashboard":
        _dashboard(fig, plot)
        fig.suptitle(table.title, fontsize=10)
    else:
        ax = fig.add_subplot()
        {"timeseries": _timeseries, "percentiles": _percentiles, "sorted": _sorted,
         "grouped": _grouped, "roofline": _roofline}[plot["kind"]](ax, plot)
        ax.set_title(table.title, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="best")
    if table.notes:
        # supxlabel takes part in the constrained layout, so the notes never overlap the axes.
        fig.supxlabel("\n".join(_wrap(note, fig_width) for note in table.notes), fontsize=NOTE_FONT_SIZE,
                      x=0.01, ha="left", multialignment="left")
    metadata = {"Title": table.title.replace("\n", " - ")}
    if fmt == "svg":
        metadata["Date"] = None  # reproducible files
    return figure_bytes(fig, fmt, metadata=metadata, dpi=100)


def _wrap(text: str, fig_width: float) -> str:
    import textwrap

    # About 19 characters per inch at 7 pt.
    return "\n".join(textwrap.wrap(text, width=max(40, int(fig_width * 19)), subsequent_indent="    "))


def _dates(ax, x: list) -> None:
    import datetime

    import matplotlib.dates as mdates

    if len(set(x)) == 1:  # one run: a day either side, not an axis of years
        ax.set_xlim(x[0] - datetime.timedelta(days=1), x[0] + datetime.timedelta(days=1))
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlabel("Run (UTC)")


def _timeseries(ax, plot: dict) -> None:
    ax.axhline(1.0, color="grey", linewidth=0.8)
    everything = []
    for i, series in enumerate(plot["series"]):
        everything += series["y"]
        if not _finite(series["y"]):
            continue
        ax.errorbar(plot["x"], _nan(series["y"]), yerr=_nan(series["yerr"]), label=series["label"],
                    marker=MARKERS[i % len(MARKERS)], capsize=3, elinewidth=0.8)
    log = _maybe_log(ax, "y", everything)
    ax.set_ylabel(plot["ylabel"] + (" (log scale)" if log else ""))
    _dates(ax, plot["x"])


def _percentiles(ax, plot: dict) -> None:
    ax.axhline(1.0, color="grey", linewidth=0.8)
    everything = []
    for i, series in enumerate(plot["series"]):
        p5, p50, p95 = _nan(series["p5"]), _nan(series["p50"]), _nan(series["p95"])
        everything += series["p5"] + series["p95"]
        if not _finite(series["p50"]):
            continue
        below = [m - lo for m, lo in zip(p50, p5)]
        above = [hi - m for m, hi in zip(p50, p95)]
        bars = ax.errorbar(plot["x"], p50, yerr=[below, above], label=f"{series['label']} p50 (bars: p5 to p95)",
                           marker=MARKERS[i % len(MARKERS)], capsize=4, elinewidth=1.0)
        if len(plot["x"]) > 1:
            ax.fill_between(plot["x"], p5, p95, alpha=0.12, color=bars[0].get_color(), linewidth=0)
    log = _maybe_log(ax, "y", everything)
    ax.set_ylabel(plot["ylabel"] + (" (log scale)" if log else ""))
    _dates(ax, plot["x"])


def _sorted(ax, plot: dict) -> None:
    ax.axhline(1.0, color="grey", linewidth=0.8)
    everything = []
    many = max((len(s["y"]) for s in plot["series"]), default=0)
    for i, series in enumerate(plot["series"]):
        everything += series["y"]
        if not series["y"]:
            continue
        x = list(range(len(series["y"])))
        bars = ax.errorbar(x, series["y"], yerr=series["yerr"], label=series["label"],
                           marker=MARKERS[i % len(MARKERS)], capsize=3, elinewidth=0.8)
        for j, name in enumerate(series["names"]):
            # Alternate sides per backend so that close lines keep readable names.
            ax.annotate(name, (j, series["y"][j]), rotation=45, fontsize=6 if many > 30 else 7, alpha=0.7,
                        color=bars[0].get_color(), va=("bottom", "top")[i % 2], ha=("left", "right")[i % 2])
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    log = _maybe_log(ax, "y", everything)
    ax.set_xlabel("Workload (sorted by speedup)")
    ax.set_ylabel(plot["ylabel"] + (" (log scale)" if log else ""))


def _grouped(ax, plot: dict) -> None:
    names, series = plot.get("names", []), plot.get("series", [])
    if not names:
        return
    ax.axvline(1.0, color="grey", linewidth=0.8)
    count = max(1, len(series))
    height = 0.8 / count
    positions = list(range(len(names)))
    everything = []
    for i, s in enumerate(series):
        everything += s["y"]
        y = [p + (i - (count - 1) / 2) * height for p in positions]
        bars = ax.barh(y, _nan(s["y"]), height=height, xerr=_nan(s["yerr"]), label=s["label"],
                       capsize=2, error_kw={"elinewidth": 0.8})
        ax.bar_label(bars, labels=["" if v is None else f"{v:.2f}" for v in s["y"]], fontsize=6, padding=2)
    ax.set_yticks(positions, names, fontsize=7)
    if names[-1] == "GEOMEAN" and len(names) > 1:
        ax.axhline(len(names) - 1.5, color="grey", linewidth=0.8, linestyle="--")
    ax.invert_yaxis()  # first model on top, GEOMEAN at the bottom
    log = _maybe_log(ax, "x", everything)
    if not log:
        ax.set_xlim(left=0)
    ax.set_xlabel(plot["xlabel"] + (" (log scale)" if log else ""))


def _dashboard(fig, plot: dict) -> None:
    """The dashboard's numbers over time, a panel each (pass rate, speedup, compile latency, compression
    ratio), a line per backend and axis values (one colour and marker in every panel): a drop in one shows
    against the runs before it."""
    import datetime

    import matplotlib.dates as mdates

    axes = fig.subplots(2, 2, sharex=True).flatten()
    xs = [x for series in plot["series"] for x in series["x"]]
    for k, (ax, title) in enumerate(zip(axes, plot["panels"])):
        if k in (1, 3):  # ratios: 1 is no change
            ax.axhline(1.0, color="grey", linewidth=0.8)
        for i, series in enumerate(plot["series"]):
            y = series["panels"][k]
            if any(v is not None for v in y):
                ax.plot(series["x"], _nan(y), marker=MARKERS[i % len(MARKERS)], color=f"C{i % 10}",
                        label=series["label"])
        ax.set_ylabel(title, fontsize=8)
        ax.grid(True, which="major", alpha=0.3)
    if xs:
        if len(set(xs)) == 1:  # one run: a day either side
            axes[0].set_xlim(xs[0] - datetime.timedelta(days=1), xs[0] + datetime.timedelta(days=1))
        locator = mdates.AutoDateLocator(maxticks=5)
        axes[2].xaxis.set_major_locator(locator)
        axes[2].xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        for ax in axes[2:]:
            ax.set_xlabel("Run (UTC)")
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=7, loc="best")


def _roofline(ax, plot) -> None:
    """The roofline (aggregate/roofline_report.py): log-log, each backend's points (x FLOPs per byte, y achieved
    FLOP/s), the bandwidth ceilings (the memory's, the caches') up to the FLOP ceilings of the dtypes the points used."""
    import numpy as np

    xs = [x for points in plot["points"].values() for x, _, _ in points]
    low, high = min(xs + [1.0]) / 4, max(xs + [1.0]) * 4
    peaks = {dtype: peak for dtype, peak in plot["flops"].items() if peak}
    ys = [y for points in plot["points"].values() for _, y, _ in points]
    top = max(peaks.values()) if peaks else max(ys) * 4  # no FLOP ceiling drawn: the bandwidths stop above the points
    grid = np.logspace(np.log10(low), np.log10(high), 200)
    for name, bandwidth, style in (("memory", plot.get("bytes_per_second"), "-"),
                                   ("caches", plot.get("cache_bytes_per_second"), ":")):
        if bandwidth:
            ax.plot(grid, np.minimum(grid * bandwidth, top), style, color="0.3", linewidth=1,
                    label=f"{name} {bandwidth / 1e9:.3g} GB/s")
    for dtype, peak in sorted(peaks.items(), key=lambda item: item[1]):
        ax.axhline(peak, color="0.55", linestyle="--", linewidth=0.8)
        ax.annotate(f"{dtype} {peak / 1e9:.4g} GFLOP/s", (high, peak), fontsize=7, ha="right", va="bottom",
                    color="0.35")
    for backend, points in plot["points"].items():
        ax.scatter([x for x, _, _ in points], [y for _, y, _ in points], s=18, label=backend, zorder=3)
        for x, y, name in points:
            ax.annotate(name, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_xlabel("arithmetic intensity (FLOPs per byte)")
    ax.set_ylabel("achieved FLOP/s")
