"""suite/<line>.html: one row per config (model and batch size) of a summary line: its status in the baseline
and the newest run (a pass -> fail transition marked), speedup, per-iteration time, compile latency, peak memory
and graph breaks in both, sortable and filterable; links to its config page, and to its log and results file
where the run's output directory is reachable from where the site is built."""

from __future__ import annotations

import os

import numpy as np

from benchmarks.history.site import dashboard_numbers as numbers
from benchmarks.history.site import grid as grid_module
from benchmarks.history.site import page, significance
from benchmarks.results import page_links
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.html_style import esc
from benchmarks.results.records import RecordStatus

COLUMNS = ("Model", "Status", "Speedup", "Time (ms)", "Compile latency (s)", "Peak memory (MiB)", "Graph breaks",
           "Links")


NOT_CHECKED = "not checked"  # ran without --verify: aggregate's word, never "pass"


def status_text(g, row, column) -> str:
    if row is None:
        return "-"
    code = g.status[row, column]
    if code == grid_module.MISSING:
        return "-"
    if code == grid_module.SKIPPED:
        return RecordStatus.SKIP
    if g.unchecked[row, column]:
        return NOT_CHECKED
    return AccuracyStatus.PASS if g.passed[row, column] else g.failures.get((row, column), "fail")


def is_new_failure(g, baseline, newest, column) -> bool:
    """Passed in the baseline run, ran and did not pass in the newest."""
    return (baseline is not None and newest is not None and bool(g.passed[baseline, column])
            and g.status[newest, column] in (grid_module.OK, grid_module.FAILED) and not g.passed[newest, column])


def _link(path, page_dir: str, text: str) -> str:
    """A link to a file found on disk (a run's log or results file, named by the database): page_links' href."""
    return page_links.anchor(page_links.file_href(path, page_dir), text) if path else ""


def render(site, view, page_dir: str) -> str:
    g, line = site.grid, view.line
    newest, baseline = view.newest, view.baseline
    speedup = numbers.speedups(g, line.columns)
    eager = [g.configs[c].eager for c in line.columns]
    rows = []
    for place, column in enumerate(line.columns):
        config = g.configs[column]
        shift = significance.between(site.config_shifts[column], baseline, newest) if baseline is not None else None
        new_failure = is_new_failure(g, baseline, newest, column)
        before, now = status_text(g, baseline, column), status_text(g, newest, column)
        mark = '<span class="newfail-mark" title="passed in the baseline run, fails in the newest">' \
               '&#9660; </span>' if new_failure else ""
        status = f'<td data-sort="{esc(now)}" data-status-newest="{esc(now)}" data-status-baseline="{esc(before)}">' \
                 f"{mark}{esc(before)} &rarr; {esc(now)}</td>"

        untested = significance.untested(g.median[:newest + 1, column], site.detector.settings, site.detector.window)

        def pair(values, higher, digits, shift_here=None, scale=1.0, tested=False):
            value_now = values[newest] * scale
            value_before = values[baseline] * scale if baseline is not None else None
            return page.change_cell(value_before, value_now, shift_here, higher,
                                    page.number(page.finite(value_now), digits),
                                    untested=untested if tested else "not tested (the time and the speedup are)")

        latency = (g.first_run[:, column] - g.first_run[:, eager[place]]) if eager[place] is not None \
            else np.full(len(g.runs), np.nan)
        source = g.source_of(newest, column)
        record = source if source and os.path.isfile(source) else None
        log = grid_module.log_path(config, source) if record else None
        links = " ".join(filter(None, [page_links.anchor(page_links.file_href(f"../config/{config.id}.html", None),
                                                         "series"),
                                       _link(log, page_dir, "log"), _link(record, page_dir, "record")]))
        rows.append(f'<tr data-config="{config.id}"' + (' class="newfail"' if new_failure else "") + ">"
                    + f'<td data-sort="{esc(config.name)}">{esc(config.name)}</td>' + status
                    + pair(speedup[:, place], True, 2, shift, tested=True)
                    + pair(g.median[:, column], False, 3, shift, 1000.0, tested=True)
                    + pair(latency, False, 2)
                    + pair(g.peak[:, column], False, 1, scale=1 / 2 ** 20)
                    + pair(g.breaks[:, column], False, 0)
                    + f"<td>{links}</td></tr>")
    failing = sum(1 for column in line.columns if is_new_failure(g, baseline, newest, column))
    title = f"{line.suite} {line.backend} {line.test}"
    body = [f"<h1>{esc(title)}</h1>",
            '<table class="facts">'
            f"<tr><td>Suite</td><td>{esc(line.suite)}</td></tr><tr><td>Backend</td><td>{esc(line.backend)}</td></tr>"
            f"<tr><td>Test</td><td>{esc(line.test)}</td></tr><tr><td>Machine</td><td>{esc(line.machine)}</td></tr>"
            f"<tr><td>Newest run</td><td>{esc(g.runs[newest].text())}</td></tr>"
            f"<tr><td>Baseline run</td><td>{esc(g.runs[baseline].text()) if baseline is not None else '-'}</td></tr>"
            f'<tr><td>New failures</td><td id="new-failures">{failing}</td></tr></table>',
            '<p class="small">Each cell: the newest run, under it the change from the baseline; speedup and time '
            "are red or green where history's change detection puts a change point in the config's time between "
            "the two runs. Status: baseline &rarr; newest; &#9660; marks a config that passed and now fails.</p>",
            '<p><input id="filter" placeholder="filter models"></p>',
            '<div class="wide"><table id="models" class="sortable"><thead><tr>'
            + "".join(f"<th>{esc(name)}</th>" for name in COLUMNS) + "</tr></thead><tbody>\n"
            + "\n".join(rows) + "\n</tbody></table></div>"]
    return page.shell(title, "\n".join(body), 1)
