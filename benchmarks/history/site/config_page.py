"""config/<id>.html: one config's series (per-iteration time, and speedup over its eager config) over every
run with history's change points marked; for each change, the runs around it, the commits between the runs
before and after, and the `history bisect` command line that finds the commit; its pass/fail transitions. A model run
by generate also shows its generation figures (time to first token, decode time per token, decode tokens per second,
where more is better) over the runs, charted and in a table of its newest runs; a config with a roofline fraction of
attainable (docs/roofline.md) charts it too."""

from __future__ import annotations

import numpy as np

from benchmarks.config import rerun_command
from benchmarks.history.formats import CHARTED, GENERATION_COLUMNS
from benchmarks.history.site import dashboard_numbers as numbers
from benchmarks.history.site import grid as grid_module
from benchmarks.history import changes
from benchmarks.history.site import page, significance, suite_page
from benchmarks.plumbing.cli_support import command_line
from benchmarks.plumbing.safe_paths import safe_name
from benchmarks.results import roofline_figures
from benchmarks.results.change_words import Word
from benchmarks.results.html_style import esc

AROUND = 3  # runs shown on each side of a change
NEWEST_FIGURES = 10  # runs in the generation figures' table (the charts have them all)


def runner_flags(config) -> list:
    """The runner flags that run this one config again (its suite, model, backend, test, batch size, axes)."""
    model = dict(config.model, suite_name=config.model.get("suite_name") or config.labels["suite"],
                 model_name=config.labels["model"])
    return rerun_command.sweep_flags(model, config.experiment)


def rerun_sweep(config) -> str:
    """The sweep of this one config, into a directory of its own: what a reader runs to see it again (its model
    alone, case and all; the files and scripts suites' --search-dir a placeholder to fill in, as the record keeps
    no path; its folder under rerun/ named as the runner names a model's, so no name leads it elsewhere)."""
    flags = runner_flags(config) + [f"--output-dirname=rerun/{safe_name(config.labels['model'])}"]
    return command_line(["experiment_runner.py"] + flags)


def bisect_command(config, good: str, bad: str) -> str:
    return (command_line(["history.py", "bisect", "--repo", "PATH/TO/YOUR/REPO", "--good", good, "--bad", bad,
                          "--setup", "pip install -e ."]) + " -- " + command_line(runner_flags(config)))


def _run_row(g, row: int, column: int, speedup: np.ndarray, mark: str = "") -> str:
    run = g.runs[row]
    median = g.median[row, column]
    return (f"<tr><td>{esc(run.date)}</td><td><code>{esc(run.commit[:12])}</code></td><td>{esc(run.torch or '')}</td>"
            f"<td>{esc(suite_page.status_text(g, row, column))}</td>"
            f'<td class="num">{page.number(page.finite(median * 1000), 3)}</td>'
            f'<td class="num">{page.number(page.finite(speedup[row]), 2)}</td><td>{mark}</td></tr>')


def _change_section(g, config, shift, speedup: np.ndarray) -> str:
    column = config.column
    before, after = g.runs[shift.before], g.runs[shift.after]
    direction = Word.SLOWER if shift.ratio > 1 else Word.FASTER
    present = np.flatnonzero(g.status[:, column] != grid_module.MISSING)
    low = present[present <= shift.before][-AROUND:]
    high = present[present >= shift.after][:AROUND]
    rows = [_run_row(g, int(r), column, speedup, "last before" if r == shift.before else
                     "first after" if r == shift.after else "") for r in list(low) + list(high)]
    commits = []
    for row in range(shift.before, shift.after + 1):
        commit = g.runs[row].commit
        if commit and commit not in commits:
            commits.append(commit)
    out = [f'<h3 class="change" data-after="{esc(after.commit)}">{esc(after.date)}: {shift.ratio:.3f}x time '
           f"({direction}), p = {shift.p_value:.3g}</h3>",
           '<table class="runs"><thead><tr><th>Run</th><th>Commit</th><th>Torch</th><th>Status</th><th>Time (ms)</th>'
           "<th>Speedup</th><th></th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>",
           "<p>Commits of the runs from the last before to the first after: "
           + ", ".join(f"<code>{esc(c[:12])}</code>" for c in commits) + ". The commits between them: "
           + (f"<code>git log --oneline {esc(before.commit)}..{esc(after.commit)}</code></p>"
              if before.commit and after.commit else "the runs name no commit.</p>")]
    if before.torch and after.torch and before.torch != after.torch:  # the code under test is not all that changed
        out.append(f'<p class="torch-changed">The torch changed between these runs too: {esc(before.torch)} &rarr; '
                   f"{esc(after.torch)}.</p>")
    if direction == Word.SLOWER and before.commit and after.commit and before.commit != after.commit:
        out.append("<p>The first bad commit, measured again (docs/history.md, bisect):</p>"
                   f'<pre class="cmd bisect">{esc(bisect_command(config, before.commit, after.commit))}</pre>')
    return "\n".join(out)


def _transitions(g, column: int) -> list:
    """(row before, row after, before text, after text) of each pass <-> fail change between a config's runs."""
    rows = [int(r) for r in np.flatnonzero((g.status[:, column] == grid_module.OK)
                                           | (g.status[:, column] == grid_module.FAILED))]
    return [(a, b, suite_page.status_text(g, a, column), suite_page.status_text(g, b, column))
            for a, b in zip(rows, rows[1:]) if bool(g.passed[a, column]) != bool(g.passed[b, column])]


def generation_figures(g, column: int) -> list:
    """(Figure, its values over the runs in its unit) of each generation figure this config has (none: not run by
    generate)."""
    found = []
    for figure in GENERATION_COLUMNS:
        values = g.figures.get(figure.metric)
        if values is not None and np.isfinite(values[:, column]).any():
            found.append((figure, values[:, column] * figure.factor))
    return found


def _figure_charts(figures: list, name: str, x: list, run_texts: list) -> list:
    """A chart per figure; the decode time's median and p90 share one."""
    by_metric = {figure.metric: (figure, values) for figure, values in figures}
    charts = []
    for figure, values in figures:
        if figure.metric == "decode_per_token_p90_time" or figure.metric not in CHARTED:
            continue
        series = [{"label": name, "values": page.values_list(values, digits=6), "marks": []}]
        if figure.metric == "decode_per_token_time" and "decode_per_token_p90_time" in by_metric:
            series[0]["label"] = f"{name} median"
            series.append({"label": f"{name} p90", "marks": [],
                           "values": page.values_list(by_metric["decode_per_token_p90_time"][1], digits=6)})
        charts.append({"id": f"chart-{figure.column.replace('_', '-')}", "title": figure.page_title, "x": x,
                       "runs": run_texts, "series": series})
    return charts


def roofline_chart(g, column: int, name: str, x: list, run_texts: list) -> list:
    """The config's fraction of its roofline's attainable over the runs (docs/roofline.md), where it has one."""
    values = g.figures.get(roofline_figures.FRACTION)
    if values is None or not np.isfinite(values[:, column]).any():
        return []
    return [{"id": "chart-roofline", "title": "Fraction of the roofline's attainable (more is better)", "x": x,
             "runs": run_texts, "series": [{"label": name, "values": page.values_list(values[:, column], digits=4),
                                            "marks": []}]}]


def _figures_table(g, figures: list) -> str:
    """The newest runs that have the figures, newest first."""
    rows = [r for r in range(len(g.runs)) if any(np.isfinite(values[r]) for _, values in figures)][-NEWEST_FIGURES:]
    body = "".join(f"<tr><td>{esc(g.runs[r].date)}</td><td><code>{esc(g.runs[r].commit[:12])}</code></td>"
                   f"<td>{esc(g.runs[r].torch or '')}</td>"
                   + "".join(f'<td class="num">{page.number(page.finite(values[r]), 3)}</td>' for _, values in figures)
                   + "</tr>" for r in reversed(rows))
    head = "".join(f'<th title="{esc(figure.what)}">{esc(figure.page_title)}</th>' for figure, _ in figures)
    return (f'<table class="generation"><thead><tr><th>Run</th><th>Commit</th><th>Torch</th>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _no_change(site, g, column) -> str:
    """Where no change point was found: not tested (too few runs: the test could find none), or tested and none."""
    untested = significance.untested(g.median[:, column], site.detector.settings, site.detector.window)
    if untested:
        return (f'<p class="untested">{esc(untested[0].upper() + untested[1:])}: '
                f"{esc(changes.minimum_text(site.detector.settings.alpha, site.detector.settings.min_size))}.</p>")
    runs = min(int(np.count_nonzero(np.isfinite(g.median[:, column]))), site.detector.window)
    return f"<p>No change point in its {runs} runs: the time moved within its noise.</p>"


def render(site, config) -> str:
    g, column = site.grid, config.column
    shifts = site.config_shifts[column]
    speedup = numbers.speedups(g, np.array([column]))[:, 0]
    x = [round(run.timestamp) for run in g.runs]
    run_texts = [run.text() for run in g.runs]
    charts = [{"id": "chart-time", "title": "Per-iteration time (ms)", "x": x, "runs": run_texts,
               "series": [{"label": config.name, "values": page.values_list(g.median[:, column], 1000.0),
                           "marks": [s.after for s in shifts]}]}]
    if np.isfinite(speedup).any():
        charts.append({"id": "chart-speedup", "title": "Speedup over eager", "x": x, "runs": run_texts,
                       "series": [{"label": config.name, "values": page.values_list(speedup, digits=4),
                                   "marks": [s.after for s in shifts]}]})
    figures = generation_figures(g, column)
    charts += _figure_charts(figures, config.name, x, run_texts)
    charts += roofline_chart(g, column, config.name, x, run_texts)
    labels = dict(config.labels)
    facts = "".join(f"<tr><td>{esc(name)}</td><td>{esc(value)}</td></tr>" for name, value in labels.items() if value)
    transitions = _transitions(g, column)
    events = "".join(f"<li>{esc(g.runs[b].text())}: {esc(before)} &rarr; {esc(after)} (previous run "
                     f"{esc(g.runs[a].text())})</li>" for a, b, before, after in transitions)
    title = f"{config.labels['suite']}/{config.name} {config.labels['backend']} {config.labels['test']}"
    body = [f"<h1>{esc(title)}</h1>", f'<table class="facts">{facts}</table>',
            '<div class="charts">' + "".join(f'<div class="chart" id="{c["id"]}"></div>' for c in charts) + "</div>",
            *([f"<h2>Generation figures (the newest {NEWEST_FIGURES} runs that have them)</h2>",
               "<p>Medians over each run's timed generate calls (the mean over its rounds); the whole generate call "
               "is the time above.</p>", _figures_table(g, figures)] if figures else []),
            f"<h2>Changes in its time (the newest {site.detector.window} runs)</h2>",
            "\n".join(_change_section(g, config, s, speedup) for s in reversed(shifts)) or _no_change(site, g, column),
            "<h2>Pass and fail</h2>", f'<ul class="transitions">{events}</ul>' if events
            else "<p>No pass &harr; fail transition.</p>",
            "<h2>Run it again</h2>", "<p>This config alone, from the project's directory (each record also carries "
            "the exact command of its own run, `rerun`):</p>", f'<pre class="cmd rerun">{esc(rerun_sweep(config))}</pre>']
    return page.shell(title, "\n".join(body), 1, charts)
