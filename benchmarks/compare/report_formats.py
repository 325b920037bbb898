"""compare.py's report as a terminal table (colour on a terminal only), CSV, JSON, Markdown, and a forest plot."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import shlex
import textwrap

from benchmarks.compare import metrics, recorded_noise
from benchmarks.config import axes
from benchmarks.config.experiment_config import backend_name, parse_none
from benchmarks.plumbing.cli_support import command_line, shown
from benchmarks.plumbing.plot_text import figure_bytes, plain_text
from benchmarks.results.change_words import Word

FORMATS = ("table", "csv", "json", "md")
_COLOURS = {Word.SLOWER: "31", Word.NEW_FAILURE: "31;1", Word.FASTER: "32", Word.FIXED: "32;1",
            Word.UNSURE: "33", Word.FAILING: "35"}
# Keys every config label shows in its own way (or never); any other key set is shown as key=value.
_LABEL_KEYS = ("accelerator", "xla", "dynamo", "test", "batch_size", "torch_xla2")


def label_parts(row: dict) -> list:
    """A config's label after its model: accelerator, backend, test, batch size, then every other key set."""
    e = row["experiment"]
    parts = [str(e.get("accelerator") or "?"),
             backend_name(parse_none(e.get("xla")) if isinstance(e.get("xla"), str) else None,
                          parse_none(e.get("dynamo")) if isinstance(e.get("dynamo"), str) else None),
             str(e.get("test") or "?")]
    if e.get("batch_size") is not None:
        parts.append(f"bs{e['batch_size']}")
    return parts + [f"{k}={v}" for k, v in e.items() if k not in _LABEL_KEYS and v not in (None, False)]


def _short(part: str) -> str:
    """A key=value part as a row shows it: an axis's value as its backend label shows it (bf16, max-autotune,
    channels-last), another key's as key=value."""
    key, equals, value = part.partition("=")
    if not equals or key not in axes.BY_KEY:
        return part
    return axes.label_text(key, True if value == "True" else value)


def config_label(row: dict, common=None) -> str:
    """The model and its label_parts. With `common` (the parts every row has, stated once above the table): those
    left out, and an axis's value shown as in a backend label (bf16, not precision=bf16)."""
    name = row["model_name"] or "?"
    if common is None:
        return " ".join([str(name)] + label_parts(row))
    return " ".join([str(name)] + [_short(part) for part in label_parts(row)
                                   if part not in common and not _at_default(part)])


def _at_default(part: str) -> bool:
    """An axis at the value a record without it ran (fp32, static, a compile mode of default): left out of a row's
    label, as backend labels leave it (config/axes.at_default)."""
    key, equals, value = part.partition("=")
    return bool(equals) and key in axes.BY_KEY and axes.at_default(key, True if value == "True" else value)


def common_parts(rows: list) -> list:
    """The label parts every row has (in the first row's order): what the table states once, above it."""
    if len(rows) < 2:
        return []
    shared = set(label_parts(rows[0])).intersection(*(set(label_parts(row)) for row in rows[1:]))
    return [part for part in label_parts(rows[0]) if part in shared]


def _number(value, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}g}"


def _percent(ratio) -> str:
    return "" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def _cells(row: dict, common=None, note=None) -> list:
    unit, factor = metrics.unit(row["metric"])
    median = [_number(None if row[s]["median"] is None else row[s]["median"] * factor) for s in ("control", "treatment")]
    ci = row["ci"]
    outcome = row["verdict"] + (f" +{'+'.join(row['gates'])}" if row.get("gates") else "")
    return [outcome, config_label(row, common), median[0], median[1],
            "" if row["time_ratio"] is None else f"{row['time_ratio']:.3f}",
            "" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]",
            f"{row['control']['n_processes']}/{row['treatment']['n_processes']}", row["note"] if note is None else note]


def _header(report) -> list:
    unit, _ = metrics.unit(report.settings.metric)
    level = f"{report.settings.confidence:.0%}"
    return ["verdict", "config", f"control {unit}".strip(), f"treatment {unit}".strip(), "ratio",
            f"{level} interval", "procs", "note"]


# The outcomes a reader acts on: their configs' rerun commands follow the table.
_CHANGES = (Word.SLOWER, Word.NEW_FAILURE, Word.FAILING)
MAX_RERUNS = 5


def _rerun_lines(report) -> list:
    """The rerun of the first changed configs (slower, newly failing or failing, or past a gate): the runner's flags
    of a sweep of that config (`rerun_flags`; the exact command, `rerun`, is in --format=json and csv)."""
    changed = [row for row in report.rows if row.get("rerun_flags") and (row["verdict"] in _CHANGES or row.get("gates"))]
    if not changed:
        return []
    common = common_parts(report.rows)
    lines = ["", "rerun a changed config alone (the exact command of each record: --format=json or csv, `rerun`):"]
    for row in changed[:MAX_RERUNS]:
        lines += [f"  # {shown(config_label(row, common))}: {row['verdict']}", f"  {_relative(row['rerun_flags'])}"]
    if len(changed) > MAX_RERUNS:
        lines.append(f"  ... and {len(changed) - MAX_RERUNS} more (--format=json or csv: a `rerun` per row)")
    return lines


def _relative(command: str) -> str:
    """A rerun with its --output-dirname relative to this directory where that is shorter."""
    words = shlex.split(command)
    for index, word in enumerate(words):
        if word.startswith("--output-dirname="):
            path = word.split("=", 1)[1]
            try:
                relative = os.path.relpath(path)
            except ValueError:  # another drive
                relative = path
            words[index] = "--output-dirname=" + (relative if len(relative) < len(path) else path)
    return command_line(words)


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


# The widest line of the terminal table: a config label longer than its column leaves is cut ("...": the whole
# label is in --format=csv and json), a note is a number in its column and written out under the table.
WIDTH = 120


def _wrapped(text: str, indent: str = "  ") -> list:
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)


def _heading_lines(report, common: list) -> list:
    """What is said once above the table: the parts of the label every row shares, each side's recorded noise."""
    lines = _wrapped("every row: " + " ".join(common) + "; a row names the axes that differ, but at their default"
                     ) if common else []
    for side in ("control", "treatment"):
        if side in report.noise:
            lines += _wrapped(recorded_noise.text(side, report.noise[side]))
    return lines + [""] if lines else []


def _fit(rows: list, header: list) -> list:
    """Column widths that keep each line within WIDTH, the config column (1) giving up what is needed."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    over = sum(widths) + 2 * (len(widths) - 1) - WIDTH
    if over > 0:
        widths[1] = max(len(header[1]), widths[1] - over)
    return widths


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(0, width - 3)] + "..."


def table(report, colour: bool) -> str:
    # every cell from a record `shown`: a terminal escape or a newline in a name or an error is made visible (\x1b),
    # never sent to the terminal or let start a line of its own
    common = common_parts(report.rows)
    notes = list(dict.fromkeys(row["note"] for row in report.rows if row["note"]))
    number = {note: f"[{place}]" for place, note in enumerate(notes, start=1)}
    header = _header(report)
    rows = [[shown(cell) for cell in _cells(row, common, number.get(row["note"], ""))] for row in report.rows]
    widths = _fit(rows, header)
    for cells in rows:
        cells[1] = _cut(cells[1], widths[1])

    def line(cells: list, outcome: str = "") -> str:
        text = "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths)).rstrip()
        code = _COLOURS.get(outcome)
        return f"\x1b[{code}m{text}\x1b[0m" if colour and code else text

    out = _heading_lines(report, common) + [line(header), "  ".join("-" * w for w in widths)]
    out += [line(cells, row["verdict"]) for cells, row in zip(rows, report.rows)]
    if notes:
        out.append("")
        for note in notes:
            out += _wrapped(f"{number[note]} {shown(note)}", "    ")
    metric = report.settings.metric
    out += [""] + _wrapped(f"metric: {metric}; ratio = treatment / control (above 1: the treatment costs more); "
                           f"threshold ±{report.settings.threshold:.1%}")
    summary = [wrapped for text in _summary_lines(report) for wrapped in _wrapped(text)]
    return "\n".join(out + summary + _rerun_lines(report)) + "\n"


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
    common = common_parts(report.rows)
    header, rows = _header(report), [_cells(row, common) for row in report.rows]
    out = [md_text(line) + "  " for line in _heading_lines(report, common) if line]
    out += [""] if out else []
    out += ["| " + " | ".join(map(md_text, header)) + " |", "|" + "---|" * len(header)]
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
    import matplotlib.pyplot as plt

    figure = forest_figure(report)
    data = figure_bytes(figure, fmt, bbox_inches="tight")
    plt.close(figure)
    return data


@plain_text
def forest_figure(report):
    """forest_plot's matplotlib figure, laid out (every label inside it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in report.rows if row["time_ratio"] is not None][::-1]
    common = common_parts(report.rows)
    labels = [config_label(row, common) for row in rows]
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
    # Wide enough for the longest label beside the plot (about 0.075 inch a character at 8 points): never cut off.
    longest = max((len(label) for label in labels), default=0)
    figure, axes = plt.subplots(figsize=(5 + 0.075 * longest, 1.2 + 0.3 * max(1, len(values))))
    if common:
        axes.set_title("every row: " + " ".join(common), fontsize=8)
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
    return figure
