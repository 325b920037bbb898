"""compare.py's report as a terminal table (colour on a terminal only), CSV, JSON, Markdown, and a forest plot."""

from __future__ import annotations

import csv
import html
import io
import json
import re

from benchmarks.compare import metrics
from benchmarks.config.experiment_config import backend_name, parse_none
from benchmarks.plumbing.plot_text import figure_bytes, plain_text
from benchmarks.plumbing.cli_support import shown
from benchmarks.results.change_words import Word

FORMATS = ("table", "csv", "json", "md")
_COLOURS = {Word.SLOWER: "31", Word.NEW_FAILURE: "31;1", Word.FASTER: "32", Word.FIXED: "32;1",
            Word.UNSURE: "33", Word.FAILING: "35"}
# Keys every config label shows in its own way (or never); any other key set is shown as key=value.
_LABEL_KEYS = ("accelerator", "xla", "dynamo", "test", "batch_size", "torch_xla2")


def config_label(row: dict) -> str:
    e = row["experiment"]
    parts = [str(e.get("accelerator") or "?"),
             backend_name(parse_none(e.get("xla")) if isinstance(e.get("xla"), str) else None,
                          parse_none(e.get("dynamo")) if isinstance(e.get("dynamo"), str) else None),
             str(e.get("test") or "?")]
    if e.get("batch_size") is not None:
        parts.append(f"bs{e['batch_size']}")
    parts += [f"{k}={v}" for k, v in e.items() if k not in _LABEL_KEYS and v not in (None, False)]
    name = row["model_name"] or "?"
    return f"{name} " + " ".join(parts)


def _number(value, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}g}"


def _percent(ratio) -> str:
    return "" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def _cells(row: dict) -> list:
    unit, factor = metrics.unit(row["metric"])
    median = [_number(None if row[s]["median"] is None else row[s]["median"] * factor) for s in ("control", "treatment")]
    ci = row["ci"]
    outcome = row["verdict"] + (f" +{'+'.join(row['gates'])}" if row.get("gates") else "")
    return [outcome, config_label(row), median[0], median[1],
            "" if row["time_ratio"] is None else f"{row['time_ratio']:.3f}", _percent(row["time_ratio"]),
            "" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]",
            f"{row['control']['n_processes']}/{row['treatment']['n_processes']}", row["note"]]


def _header(report) -> list:
    unit, _ = metrics.unit(report.settings.metric)
    level = f"{report.settings.confidence:.0%}"
    return ["verdict", "config", f"control {unit}".strip(), f"treatment {unit}".strip(), "ratio", "change",
            f"{level} interval", "processes", "note"]


# The outcomes a reader acts on: their configs' rerun commands follow the table.
_CHANGES = (Word.SLOWER, Word.NEW_FAILURE, Word.FAILING)
MAX_RERUNS = 5


def _rerun_lines(report) -> list:
    """The rerun command (each record's `rerun`: the config alone, in a directory of its own) of the first changed
    configs: slower, newly failing or failing, or past a gate."""
    changed = [row for row in report.rows if row.get("rerun") and (row["verdict"] in _CHANGES or row.get("gates"))]
    if not changed:
        return []
    lines = ["", "rerun a changed config alone (its treatment record's `rerun`; every record carries one):"]
    for row in changed[:MAX_RERUNS]:
        lines += [f"  # {shown(config_label(row))}: {row['verdict']}", f"  {row['rerun']}"]
    if len(changed) > MAX_RERUNS:
        lines.append(f"  ... and {len(changed) - MAX_RERUNS} more (--format=json or csv: a `rerun` per row)")
    return lines


def _summary_lines(report) -> list:
    lines = []
    g = report.geomean
    if g:
        lines.append(f"geomean ratio {g['time_ratio']:.3f} ({_percent(g['time_ratio'])}), "
                     f"{report.settings.confidence:.0%} interval [{g['ci'][0]:.3f}, {g['ci'][1]:.3f}] over "
                     f"{g['n_configs']} config(s): {g['verdict']}")
    else:
        lines.append("geomean: no config measured on both sides")
    lines.append(", ".join(f"{n} {name}" for name, n in report.counts.items()))
    return lines


def table(report, colour: bool) -> str:
    # every cell from a record `shown`: a terminal escape or a newline in a name or an error is made visible (\x1b),
    # never sent to the terminal or let start a line of its own
    header, rows = _header(report), [[shown(cell) for cell in _cells(row)] for row in report.rows]
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(cells: list, outcome: str = "") -> str:
        text = "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths)).rstrip()
        code = _COLOURS.get(outcome)
        return f"\x1b[{code}m{text}\x1b[0m" if colour and code else text

    out = [line(header), "  ".join("-" * w for w in widths)]
    out += [line(cells, row["verdict"]) for cells, row in zip(rows, report.rows)]
    metric = report.settings.metric
    out += ["", f"metric: {metric}; ratio = treatment / control (above 1: the treatment costs more); "
                f"threshold ±{report.settings.threshold:.1%}"]
    return "\n".join(out + _summary_lines(report) + _rerun_lines(report)) + "\n"


# What Markdown (GitHub's included) reads as markup inside a table cell: each is shown as itself, backslashed.
# `<`, `>` and `&` become entities (no raw HTML from a record); a line break would end the table's row; another
# control character (a terminal escape) is written as its \xNN escape.
_MD_MARKUP = re.compile(r"([\\`*_\[\]|~])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def md_text(text) -> str:
    """A record's text (a model name, a note, an error) as Markdown that shows it, never markup or a link."""
    text = html.escape(re.sub(r"\s+", " ", str(text)), quote=False)
    text = _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)
    return _MD_MARKUP.sub(r"\\\1", text)


def _fence(lines: list) -> str:
    """A code fence longer than any run of backticks in `lines` (a record's rerun can't close it early)."""
    longest = max((len(run) for line in lines for run in re.findall("`+", line)), default=0)
    return "`" * max(3, longest + 1)


def markdown(report) -> str:
    header, rows = _header(report), [_cells(row) for row in report.rows]
    out = ["| " + " | ".join(map(md_text, header)) + " |", "|" + "---|" * len(header)]
    for cells in rows:
        cells = [md_text(cell) for cell in cells]
        cells[0] = f"**{cells[0]}**" if cells[0] in (Word.SLOWER, Word.NEW_FAILURE) else cells[0]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out += [line + "  " for line in _summary_lines(report)]
    reruns = _rerun_lines(report)
    if reruns:
        # One line each (a newline in a record can't forge a line), in a fence no record's backticks can close.
        commands = [" ".join(line.strip().splitlines()) for line in reruns[2:]]
        fence = _fence(commands)
        out += ["", reruns[1], "", fence] + commands + [fence]
    return "\n".join(out) + "\n"


def csv_text(report) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["verdict", "suite_name", "model_name", "config", "experiment", "metric", "control_median",
                     "control_n_samples", "control_n_processes", "treatment_median", "treatment_n_samples",
                     "treatment_n_processes", "time_ratio", "ci_low", "ci_high", "note", "gates", "rerun"])
    for row in report.rows:
        ci = row["ci"] or [None, None]
        writer.writerow([row["verdict"], row["suite_name"], row["model_name"], config_label(row),
                         json.dumps(row["experiment"], sort_keys=True), row["metric"]]
                        + [row[s][k] for s in ("control", "treatment") for k in ("median", "n_samples", "n_processes")]
                        + [row["time_ratio"], ci[0], ci[1], row["note"], " ".join(row.get("gates") or []),
                           row.get("rerun") or ""])
    if report.geomean:
        g = report.geomean
        writer.writerow([g["verdict"], "", "geomean", "", "", report.settings.metric] + [""] * 6
                        + [g["time_ratio"], g["ci"][0], g["ci"][1], f"{g['n_configs']} configs", "", ""])
    return buffer.getvalue()


def render(report, fmt: str, colour: bool = False) -> str:
    if fmt == "json":
        return json.dumps(report.as_json(), indent=1) + "\n"
    if fmt == "csv":
        return csv_text(report)
    if fmt == "md":
        return markdown(report)
    return table(report, colour)


@plain_text
def forest_plot(report, fmt: str) -> bytes:
    """Each measured config's ratio and interval, one line each, the geomean last: PNG or SVG (`fmt`) bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in report.rows if row["time_ratio"] is not None][::-1]
    labels = [config_label(row) for row in rows]
    values = [row["time_ratio"] for row in rows]
    lows = [row["time_ratio"] - row["ci"][0] for row in rows]
    highs = [row["ci"][1] - row["time_ratio"] for row in rows]
    colours = [{Word.SLOWER: "tab:red", Word.FASTER: "tab:green", Word.UNSURE: "tab:orange"}.get(
        row["verdict"], "tab:gray") for row in rows]
    if report.geomean:
        g = report.geomean
        labels.insert(0, "geomean")
        values.insert(0, g["time_ratio"])
        lows.insert(0, g["time_ratio"] - g["ci"][0])
        highs.insert(0, g["ci"][1] - g["time_ratio"])
        colours.insert(0, "black")
    figure, axes = plt.subplots(figsize=(8, 1 + 0.3 * max(1, len(values))))
    for y, (value, low, high, colour) in enumerate(zip(values, lows, highs, colours)):
        axes.errorbar([value], [y], xerr=[[low], [high]], fmt="D" if labels[y] == "geomean" else "o", color=colour,
                      capsize=3)
    threshold = report.settings.threshold
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.axvspan(1 - threshold, 1 + threshold, color="gray", alpha=0.15, label=f"±{threshold:.0%}")
    axes.set_yticks(range(len(labels)))
    axes.set_yticklabels(labels, fontsize=8)
    axes.set_xlabel(f"treatment / control ({report.settings.metric}); {report.settings.confidence:.0%} intervals")
    axes.legend(loc="best", fontsize=8)
    figure.tight_layout()
    data = figure_bytes(figure, fmt)
    plt.close(figure)
    return data
