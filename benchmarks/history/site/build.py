"""`history site`: the whole static site from the history database, written incrementally (writer.py).

    DIR/index.html              the summary (summary_page.py)
    DIR/suite/<line>.html       one per suite x backend label x test x machine (suite_page.py)
    DIR/config/<id>.html        one per config (config_page.py)
    DIR/assets/                 uPlot (vendored, pinned: vendor/README.md), site.js, table_sort.js, site.css
"""

from __future__ import annotations

import dataclasses
import os
import time
from importlib import resources
from typing import Optional

import numpy as np

from benchmarks.history import changes
from benchmarks.history.site import config_page, dashboard_numbers, grid as grid_module, page, run_choice
from benchmarks.history.site import significance, suite_page, summary_page, writer as writer_module
from benchmarks.results import html_style
from benchmarks.results.html_style import esc

ASSETS = ("vendor/uPlot.iife.min.js", "vendor/uPlot.min.css", "vendor/uPlot.LICENSE", "site.js")


@dataclasses.dataclass
class LineView:
    line: object  # dashboard_numbers.Line
    newest: Optional[int]
    baseline: Optional[int]
    shifts: dict  # metric -> [Shift]
    significant: dict  # metric -> the Shift between baseline and newest, or None


@dataclasses.dataclass
class Site:
    grid: object
    detector: significance.Detector
    title: str
    database: str
    newest: int
    baseline: Optional[int]
    config_shifts: list  # per grid column: its time's [Shift]
    method: str

    def facts_html(self) -> str:
        g = self.grid
        rows = [("Database", self.database), ("Runs", f"{len(g.runs)}: {g.runs[0].text()} to {g.runs[-1].text()}"),
                ("Configs", str(len(g.configs))),
                ("Newest run", g.runs[self.newest].text()),
                ("Baseline run", "each line's run before its newest" if self.baseline is None
                 else g.runs[self.baseline].text()),
                ("Change detection", self.method)]
        return '<table class="facts">' + "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>"
                                                 for k, v in rows) + "</table>"


def _asset(name: str) -> str:
    return resources.files("benchmarks.history.site").joinpath(name).read_text(encoding="utf-8")


@dataclasses.dataclass
class BuildReport:
    pages: str
    seconds: float
    runs: int
    configs: int
    measurements: int
    tested: int  # series whose change points were computed (not cached)

    def summary(self) -> str:
        return (f"{self.runs} run(s), {self.configs} config(s), {self.measurements} measurement(s): {self.pages}; "
                f"{self.tested} series tested for changes; {self.seconds:.1f} s")


def build(connection, directory: str, database: str, settings, window: int, newest_text: Optional[str] = None,
          baseline_text: Optional[str] = None, title: str = "Nightly runs") -> BuildReport:
    started = time.perf_counter()
    g = grid_module.load(connection)
    newest = run_choice.choose(g.runs, newest_text, "--newest")
    baseline = None if baseline_text in (None, run_choice.PREVIOUS) else run_choice.choose(g.runs, baseline_text,
                                                                                           "--baseline")
    out = writer_module.SiteWriter(directory)
    detector = significance.Detector(settings, window, dict(out.detections))
    method = (f"history's E-divisive means over each series' newest {window} runs: alpha {settings.alpha:g}, "
              f"{settings.permutations} permutations, changes of at least {100 * settings.min_change:g}% (times); "
              + changes.minimum_text(settings.alpha, settings.min_size))
    config_shifts = [detector.shifts(g.median[:, c.column], log=True) for c in g.configs]
    site = Site(g, detector, title, database, newest, baseline, config_shifts, method)
    views = []
    for line in dashboard_numbers.lines(g):
        present = (g.status[:, line.columns] != grid_module.MISSING).any(axis=1)
        line_newest, line_baseline = run_choice.line_rows(present, newest, baseline)
        shifts = {m: detector.shifts(line.values[m], log=m != "pass_rate") for m in dashboard_numbers.METRICS}
        significant = {m: significance.between(shifts[m], line_baseline, line_newest)
                       if line_baseline is not None else None for m in dashboard_numbers.METRICS}
        views.append(LineView(line, line_newest, line_baseline, shifts, significant))
    for name in ASSETS:
        out.write(os.path.join("assets", os.path.basename(name)), _asset(name))
    out.write("assets/table_sort.js", html_style.table_script())
    out.write("assets/site.css", page.css())
    out.write("index.html", summary_page.render(site, views))
    suite_dir = os.path.join(directory, "suite")
    for view in views:
        if view.newest is not None:
            out.write(f"suite/{view.line.slug}.html", suite_page.render(site, view, suite_dir))
    for config in g.configs:
        if np.any(g.status[:, config.column] != grid_module.MISSING):
            out.write(f"config/{config.id}.html", config_page.render(site, config))
    # Keep only the cache entries this build used (a series that grew has a new key).
    used = {key: detector.cache[key] for key in detector.cache if key in detector.used}
    out.finish(used)
    return BuildReport(out.summary(), time.perf_counter() - started, len(g.runs), len(g.configs),
                       int(np.count_nonzero(g.status)), detector.tested)
