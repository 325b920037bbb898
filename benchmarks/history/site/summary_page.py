"""index.html: per summary line (suite x backend label x test x machine) the dashboard's five numbers in the
newest run beside the baseline run, each change coloured by whether history's change points put a change
between the two runs; then a trend chart of each number over every run, the change points marked."""

from __future__ import annotations

from benchmarks.history.site import dashboard_numbers as numbers
from benchmarks.history.site import page, significance
from benchmarks.results import metric_catalog, page_links
from benchmarks.results.html_style import esc

FORMATS = {"pass_rate": "{:.0f}%", "speedup": "{:.2f}x", "compile_latency": "{:.2f}", "compression": "{:.2f}x",
           "peak_memory": "{:.0f}"}


def _text(metric: str, value) -> str:
    value = page.finite(value)
    return "" if value is None else FORMATS[metric].format(value)


def _runs_cell(g, view) -> str:
    newest = g.runs[view.newest]
    baseline = g.runs[view.baseline] if view.baseline is not None else None
    title = f"newest {newest.text()}, baseline {baseline.text() if baseline else '-'}"
    return (f'<td class="small" title="{esc(title)}">{esc(newest.date[:10])}<br>vs '
            f'{esc(baseline.date[:10]) if baseline else "-"}</td>')


def render(site, lines: list) -> str:
    """site: build.Site (grid, detector, chosen rows, facts); lines: its LineView list."""
    g = site.grid
    heads = "".join(f"<th>{esc(numbers.TITLES[m])}</th>" for m in numbers.METRICS)
    rows = []
    for view in lines:
        line = view.line
        if view.newest is None:
            continue
        line_page = page_links.file_href(f"suite/{line.slug}.html", None)  # a slug is safe_name's: checked anyway
        cells = [f"<td>{page_links.anchor(line_page, esc(line.suite))}</td>",
                 f"<td>{page_links.anchor(line_page, esc(line.backend))}</td>",
                 f"<td>{esc(line.test)}</td>", f"<td>{esc(line.machine)}</td>",
                 f'<td class="num">{len(line.columns)}</td>',
                 _runs_cell(g, view)]
        for metric in numbers.METRICS:
            values = line.values[metric]
            newest = values[view.newest]
            baseline = values[view.baseline] if view.baseline is not None else None
            shift = view.significant.get(metric)
            if metric == "pass_rate" and page.finite(newest) is None and len(line.columns):
                cells.append('<td class="num unsure" data-metric="pass_rate" title="no config of this line was '
                             'checked in the newest run: run with --verify">not checked</td>')
                continue
            untested = significance.untested(values[:view.newest + 1], site.detector.settings, site.detector.window)
            cells.append(page.change_cell(baseline, newest, shift, metric_catalog.higher_is_better(metric),
                                          _text(metric, newest), ratio=metric != "pass_rate",
                                          extra=f' data-metric="{metric}"', exact=metric == "pass_rate",
                                          untested=untested))
        rows.append(f'<tr data-line="{esc(line.slug)}">' + "".join(cells) + "</tr>")
    charts = []
    x = [round(run.timestamp) for run in g.runs]
    run_texts = [run.text() for run in g.runs]
    suites = sorted({view.line.suite for view in lines})
    for suite in suites:  # a chart per suite and number: its lines are the backend labels
        for metric in numbers.METRICS:
            series = []
            for view in lines:
                values = view.line.values[metric]
                if view.line.suite != suite or not (values == values).any():  # nan everywhere: eager's speedup
                    continue
                label = " ".join(part for part in (view.line.backend, view.line.test, view.line.machine
                                                   if len({v.line.machine for v in lines}) > 1 else "") if part)
                series.append({"label": label, "values": page.values_list(values, digits=4),
                               "marks": [s.after for s in view.shifts.get(metric, [])]})
            if series:
                charts.append({"id": f"chart-{page.slug(suite)}-{metric}",
                               "title": f"{suite}: {numbers.TITLES[metric]}", "x": x, "runs": run_texts, "series": series, "metric": metric})
    body = [f"<h1>{esc(site.title)}</h1>", site.facts_html(),
            "<h2>Newest run against the baseline</h2>",
            '<p class="small">Each cell: the newest run\'s number, under it the change from the baseline run. '
            "Red or green: history's change detection puts a change point between the two runs (worse or "
            "better; hover for its p-value); grey: none (hover: the difference is within the series' noise, or the "
            "series was not tested: too few runs for the test to find any change). "
            "Pass rate: configs that ran without an accuracy failure; the other numbers are over the passing "
            "configs, against the same run's eager config (aggregate.py --report=dashboard's definitions).</p>",
            '<p><input id="filter" placeholder="filter lines (suite, backend, test...)"></p>',
            '<div class="wide"><table id="summary" class="sortable"><thead><tr><th>Suite</th><th>Backend</th>'
            f"<th>Test</th><th>Machine</th><th>Configs</th><th>Runs</th>{heads}</tr></thead><tbody>\n"
            + "\n".join(rows) + "\n</tbody></table></div>",
            "<h2>Over time</h2>",
            '<p class="small">Hover for a run\'s values and commit; drag to zoom a time range, double-click to '
            "zoom out; dashed lines and dots: change points detected in the newest "
            f"{site.detector.window} runs.</p>",
            '<div class="charts">' + "".join(f'<div class="chart" id="{c["id"]}"></div>' for c in charts) + "</div>"]
    return page.shell(site.title, "\n".join(body), 0, charts)
