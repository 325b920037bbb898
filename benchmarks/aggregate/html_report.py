"""aggregate.py --format=html: one self-contained page to share (a review, a bug, a mail attachment).

Top to bottom: a line on how to open and share it; the dashboard (reports.report_dashboard: pass rate, speedup,
compile latency, compression ratio and peak memory per backend, the newest run, then over time); what was run
(suites, models, backends, test, accelerator, dates, the environment and its noise warnings); the geomean speedup
per backend over the baseline with the number of models behind each (the numbers of --report=latest_grouped); from
two runs on, the speedup over time; the newest run's per-model plot (plots as inline SVG, their notes said once, as
text); a per-model table of the newest run (batch size, each backend's time, speedup and, where it was checked,
the record's verdict: `accuracy`, results/accuracy_status.py),
sortable and filterable by a few lines of plain JavaScript, where failed and skipped configs show their
status, phase and message and link to their log. Nothing is fetched: no external script, style or font.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from typing import Optional

from benchmarks.aggregate import dashboard, inputs, notes, reports, roofline_report
from benchmarks.aggregate.analysis import Analysis, Options, prepare
from benchmarks.config.rerun_command import trusted_rerun
from benchmarks.results import accuracy_status, html_style, number_text, page_links, records
from benchmarks.results.html_style import esc  # html_style: the look history's pages share


def share_line(page_path: Optional[str]) -> str:
    """How to open and share the page, at its top: it is one file, so it travels as it is."""
    name = os.path.basename(page_path) if page_path else "this page"
    return (f"One self-contained file (plots, styles and scripts inline; nothing is fetched): open {name} in any "
            f"browser (double-click it, or chromium {name}), or attach it to a mail, an issue or a review as it is. "
            "Links to failed configs' logs work while the page stays beside its results directory.")


def _svg(table, width: float, height: float) -> str:
    """A report's plot as inline SVG (no XML prolog, no fixed size: it scales with the page), without the notes
    a PNG carries under its axes: the page says each note once, as text (Notes)."""
    import dataclasses

    from benchmarks.aggregate import plots

    text = plots.render(dataclasses.replace(table, notes=[]), "svg", width, height).decode("utf-8")
    text = text[text.index("<svg"):]
    return re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r"<svg\1", text, count=1)


class Notes:
    """The page's notes, each said once: the reports share some (how speedup and time are measured), and a
    note said in one section is not repeated in the next."""

    def __init__(self):
        self.said: set = set()

    def html(self, found: list) -> list:
        fresh = [note for note in found if note not in self.said]
        self.said.update(fresh)
        return [f'<p class="small">{esc(note)}</p>' for note in fresh]


def _date(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _distinct(values) -> list:
    out = []
    for value in values:
        if value not in (None, "") and value not in out:
            out.append(value)
    return out


def _facts_section(analysis: Analysis) -> str:
    rows = analysis.rows
    environments = [r.record.get("environment") or {} for r in rows]
    environments = [e for e in environments if isinstance(e, dict)]
    versions = []
    for name in ("python", "torch", "torch_xla", "torchvision"):
        found = _distinct(e.get(name) for e in environments)
        if found:
            versions.append(f"{name} {', '.join(map(str, found))}")
    gpus = _distinct(g for e in environments for g in (e.get("gpu_names") or []))
    commits = _distinct(e.get("git_commit") for e in environments)
    executors = _distinct(f"{x.get('kind')} (--jobs {x.get('jobs')})" for e in environments
                          if isinstance(x := e.get("executor"), dict))
    facts = [
        ("Suites", ", ".join(_distinct(r.suite for r in rows))),
        ("Models", f"{len({r.workload for r in rows})}"),
        ("Backends", ", ".join(inputs.backend_title(b) for b in analysis.backends)
         + f" (baseline: {analysis.options.baseline} {inputs.backend_title(analysis.base)})"),
        ("Test", analysis.options.test),
        ("Accelerator", analysis.accelerator),
        ("Runs", "; ".join(_date(ts) for ts in analysis.timestamps)),
        ("Versions", "; ".join(versions) or "not recorded"),
        ("CPU", ", ".join(map(str, _distinct(e.get("cpu_model") for e in environments))) or "not recorded"),
        ("GPU", ", ".join(gpus) or "none"),
        ("Hosts", ", ".join(map(str, _distinct(e.get("hostname") for e in environments))) or "not recorded"),
        ("Executor", ", ".join(executors) or "not recorded"),
        ("Code", ", ".join(c[:12] for c in commits) or "not recorded"),
    ]
    out = ['<h2>What was run</h2><table class="facts">']
    out += [f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in facts]
    out.append("</table>")
    problems = _distinct(p for e in environments for p in ((e.get("noise") or {}).get("problems") or [])
                         if isinstance(e.get("noise"), dict))
    if problems:
        out.append('<div class="warn"><b>Noise warnings</b> (recorded when the sweeps started):<ul>')
        out += [f"<li>{esc(p if isinstance(p, str) else p[0] if isinstance(p, (list, tuple)) else p)}</li>"
                for p in problems]
        out.append("</ul></div>")
    return "\n".join(out)


def _geomean_section(grouped: reports.Table, analysis: Analysis, said: Notes) -> str:
    """Each backend's geomean speedup, labelled with the records it covers: over every model with a speedup (as
    upstream's reports count them, failed checks included and marked), and over those whose check did not fail (the
    dashboard's rule: the dashboard above gives that one)."""
    runs = reports.newest_runs(analysis, analysis.backends)
    cells = [reports.merged_cell(analysis, backend, runs) for backend in analysis.backends]
    any_failed = any(cell.failed for cell in cells)
    out = ["<h2>Geomean speedup over the baseline</h2>",
           f'<p class="small">{esc(grouped.title.splitlines()[0])}. Speedup = baseline time / backend time: '
           "above 1 is faster. <b>All models</b>: every model with a speedup, whether or not its outputs passed a "
           "check (unchecked ones are not checked, failed ones count too and are marked "
           f"{esc(number_text.FAILED_MARK)}); <b>passing only</b>: without the models whose check failed, the "
           "dashboard's rule (its geomean also leaves out the configs never checked).</p>",
           '<table id="geomean"><thead><tr><th>Backend</th><th>Geomean speedup, all models</th><th>StdDev</th>'
           "<th>Models</th><th>Geomean speedup, passing only</th><th>Models failing their check</th></tr></thead>"
           "<tbody>"]
    for backend, cell in zip(analysis.backends, cells):
        value, error = cell.summary() or (None, None)
        passing = cell.passing_summary()
        failed = ", ".join(f"{analysis.labels[w]} ({v})" for w, v in sorted(cell.failed.items(), key=lambda i: str(i)))
        out.append(f'<tr><td>{esc(inputs.backend_title(backend))}</td>'
                   f'<td class="num" data-backend="{esc(backend)}">{"" if value is None else f"{value:.4f}"}</td>'
                   f'<td class="num">{"" if error is None else f"{error:.4f}"}</td>'
                   f'<td class="num">{len(cell.speedups)}</td>'
                   f'<td class="num">{"" if passing is None else f"{passing[0]:.4f}"}</td>'
                   f'<td class="{"failed" if failed else "msg"}">'
                   f'{esc(number_text.FAILED_MARK + " " + failed) if failed else "none" if any_failed else ""}</td></tr>')
    out.append("</tbody></table>")
    out += said.html(grouped.notes)
    return "\n".join(out)


# The dashboard's column names as the page writes them: which configs its geomean covers.
DASHBOARD_HEADS = {"GeomeanSpeedup": "GeomeanSpeedup (passing configs)"}


def _dashboard_section(table: reports.Table, runs: int, fig_width: float, fig_height: float, said: Notes) -> str:
    """The newest run's dashboard lines (the HUD's pass rate display, "75%, 3/4"), then, over several runs,
    its numbers over time."""
    columns = table.columns
    newest = [row for row in table.rows if row[0] == table.rows[-1][0]] if table.rows else []
    first_figure = columns.index("PassRate(%)") + 1
    head = columns[1:columns.index("Passed")] + ["Pass rate"] + columns[first_figure:]
    out = ['<h2 id="dashboard">Dashboard' + (f" ({esc(newest[0][0])} UTC)" if newest else "") + "</h2>",
           '<p class="small">Its figures (geomean speedup, compile latency, ...) are over the configs that passed '
           "their check, as PyTorch's dashboard computes them; the geomeans below also give one over every model.</p>",
           '<table class="dashboard"><thead><tr>' + "".join(f"<th>{esc(DASHBOARD_HEADS.get(h, h))}</th>" for h in head)
           + "</tr></thead><tbody>"]
    for row in newest:
        passed, total, rate = row[columns.index("Passed")], row[columns.index("Total")], row[first_figure - 1]
        cells = [f"<td>{esc(v)}</td>" for v in row[1:columns.index("Passed")]]
        if passed is None:  # no config of the line judged for accuracy: no pass rate, not 0%
            cells.append(f'<td class="msg unchecked">{esc(dashboard.NOT_CHECKED_TEXT)}</td>')
        else:
            cells.append(f'<td class="num">{"" if rate is None else f"{rate:.0f}%"}, {passed}/{total}</td>')
        cells += [f'<td class="num">{"" if v is None else f"{v:.2f}"}</td>' for v in row[first_figure:-1]]
        message = row[-1] or ""
        if passed is None:  # said in the pass rate's cell already
            message = message.removeprefix(dashboard.NOT_CHECKED_TEXT).removeprefix("; ")
        cells.append(f'<td class="msg">{esc(message)}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    if runs > 1:
        out.append(f'<div class="plot">{_svg(table, fig_width, fig_height)}</div>')
    out += said.html(table.notes)
    return "\n".join(out)


def _log_link(record: dict, results_dir: str, page_dir: str) -> str:
    log = (record.get("error") or {}).get("log")
    if not isinstance(log, str) or not log:
        return ""
    href = page_links.record_file_href(log, results_dir, page_dir)
    if href is None:  # not a path inside the results folder (a scheme, `/`, `..`): its text, never a link
        return f' <span class="msg">log: {esc(log)}</span>'
    return f' {page_links.anchor(href, "log")}'


def _rerun(record: dict) -> str:
    """A failure's rerun command (the record's `rerun`: that config alone, in a directory of its own), folded; none
    when the stored command is not the runner's for this record (rerun_command.trusted_rerun: a shared file's
    `rerun` could say `...; touch PWNED`)."""
    command = trusted_rerun(record)
    if not command:
        return ""
    return f'<details class="rerun"><summary>rerun</summary><code>{esc(command)}</code></details>'


def _verdict_cell(record: dict) -> str:
    verdict = accuracy_status.derive(record) if accuracy_status.checked(record) else ""
    failed = accuracy_status.failed(verdict)
    kind = ' class="failed"' if failed else ""
    ran = records.record_status(record) == records.RecordStatus.OK  # a failed run's rerun is in its time cell
    return f"<td{kind}>{esc(verdict)}{_rerun(record) if failed and ran else ''}</td>"


def _cell(row: Optional[inputs.Row], speedup, results_dir: str, page_dir: str, verified: bool) -> list:
    """The time, speedup (and, where the backend was checked, the record's verdict) cells of one backend for one
    model and batch size."""
    if row is None:
        cells = ['<td class="msg" data-sort="">no record</td>', '<td class="num" data-sort=""></td>']
        return cells + ["<td></td>"] * verified
    record = row.record
    verification = [_verdict_cell(record)] * verified
    if row.status == records.RecordStatus.OK and row.value is not None:
        ms = row.value * 1e3
        speed = "" if speedup is None else number_text.significant(speedup, 4)
        verdict = accuracy_status.derive(record)
        mark = (f' <span class="failed">{esc(number_text.FAILED_MARK + verdict)}</span>'
                if accuracy_status.failed(verdict) and speed else "")
        return [f'<td class="num" data-sort="{ms:.6g}">{ms:.3f}{_spread(row)}</td>',
                f'<td class="num" data-sort="{speed}">{speed}{mark}{_beside(record)}</td>'] + verification
    error = record.get("error") or {}
    kind = "skipped" if row.status == records.RecordStatus.SKIP else "failed"
    message = records.short_message(str(error.get("message") or row.why or ""), 200)
    phase = f" in {error.get('phase')}" if error.get("phase") else ""
    text = (f'<span class="{kind}">{esc(row.status)}{esc(phase)}</span>'
            f'{_log_link(record, results_dir, page_dir)}<div class="msg">{esc(message)}</div>{_rerun(record)}')
    # No colspan: every row keeps one cell per column, so that sorting reads the same column in each.
    return [f'<td data-sort="{esc(row.status)}">{text}</td>', '<td class="num" data-sort=""></td>'] + verification


def _spread(row: inputs.Row) -> str:
    """A cell's spread over its timed runs (every round pooled), with pyperf's unstable mark."""
    values = [float(v) for m in row.pooled for v in (m.per_iter_time() if m.per_iter_time() is not None else [])]
    text, unstable = number_text.spread(values)
    return f' <span class="small">{esc(text)}{number_text.UNSTABLE_MARK * unstable}</span>' if text else ""


def _beside(record: dict) -> str:
    """Graph breaks and the roofline fraction beside a speedup (runner/summary_table.py's words)."""
    found = number_text.beside_speedup(record)
    return f' <span class="small">({esc(", ".join(found))})</span>' if found else ""


def _models_section(analysis: Analysis, results_dir: str, page_dir: str) -> str:
    runs = reports.newest_runs(analysis, analysis.backends)
    cells = {b: reports.merged_cell(analysis, b, runs) for b in analysis.backends}
    newest = {}
    for row in analysis.rows:
        if runs.get(row.workload[0]) == row.timestamp:
            newest[(row.workload, row.batch_key, row.backend)] = row
    keys = sorted({(w, b) for w, b, _ in newest}, key=lambda k: (analysis.labels[k[0]].casefold(), str(k[1])))
    verified = {b: any(accuracy_status.checked(r.record) for (_, _, rb), r in newest.items() if rb == b) for b in analysis.backends}
    head = ["Model", "Batch"]
    for backend in analysis.backends:
        title = inputs.backend_title(backend)
        head += [f"{title} ms", f"{title} speedup"] + [f"{title} accuracy"] * verified[backend]
    out = [f"<h2>Per model ({esc(notes.runs_text(runs))})</h2>",
           '<p><input id="filter" type="search" placeholder="Filter rows (model, status, message ...)"> '
           '<span class="small">Click a column header to sort.</span></p>',
           '<div class="wide"><table id="models" class="sortable"><thead><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head)
           + "</tr></thead><tbody>"]
    for workload, batch in keys:
        cells_html = [f"<td>{esc(analysis.labels[workload])}</td>", f'<td class="num">{esc(batch)}</td>']
        for backend in analysis.backends:
            speedup = cells[backend].speedups.get(workload, (None, None))[0]
            row = newest.get((workload, batch, backend))
            cells_html += _cell(row, speedup, results_dir, page_dir, verified[backend])
        out.append("<tr>" + "".join(cells_html) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _generate_section(analysis: Analysis) -> str:
    """The LLM rows of the newest run (run by generate): their figures as vLLM's bench and optimum-benchmark print
    them (TTFT, TPOT, ITL p50/p99, tokens/s, the decode bandwidth fraction), not only the whole generate call."""
    runs = reports.newest_runs(analysis, analysis.backends)
    found = []
    for row in analysis.rows:
        if runs.get(row.workload[0]) == row.timestamp and row.pooled:
            figures = dict(number_text.generate_figures(row.pooled[-1]))
            if figures:
                found.append((analysis.labels[row.workload], inputs.backend_title(row.backend), figures))
    if not found:
        return ""
    labels = ("TTFT", "TPOT", "ITL p50", "ITL p99", "tokens/s", "bandwidth", "generate")
    heads = ("TTFT", "TPOT", "ITL p50", "ITL p99", "Decode", "Bandwidth (of the measured)", "Whole generate")
    out = ["<h2 id=\"generate\">LLM rows (run by generate)</h2>",
           '<p class="small">Medians over the timed generate calls, as vLLM\'s bench and optimum-benchmark print '
           "them: time to first token, time per output token after it, inter-token latency percentiles, decode "
           "tokens per second and its memory bandwidth as a fraction of the machine's measured one "
           "(docs/generation.md).</p>",
           '<table id="generate-figures"><thead><tr><th>Model</th><th>Backend</th>'
           + "".join(f"<th>{esc(h)}</th>" for h in heads) + "</tr></thead><tbody>"]
    for model, backend, figures in sorted(found):
        out.append(f"<tr><td>{esc(model)}</td><td>{esc(backend)}</td>"
                   + "".join(f'<td class="num">{esc(figures.get(label, ""))}</td>' for label in labels) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _over_time_section(over_time: reports.Table, runs: int, fig_width: float, fig_height: float, said: Notes) -> str:
    """The geomean speedup per run, from two runs on; with one run, a line on why there is no plot (one run is
    one column of points: the geomeans table above says it all)."""
    if runs < 2:
        return ('<p class="small" id="no-over-time">No speedup-over-time plot: these results hold one run. It appears '
                "once they hold two or more (sweeps at different times, e.g. nightly ones, into one results file or "
                "directory).</p>")
    return "\n".join(["<h2>Speedup over time</h2>", f'<div class="plot">{_svg(over_time, fig_width, fig_height)}</div>']
                     + said.html(over_time.notes))


def render(options: Options, page_path: Optional[str], fig_width: float, fig_height: float) -> str:
    """The page for `options` (aggregate's selection flags); links to logs are relative to `page_path`."""
    analysis = prepare(options)
    grouped = reports.report_latest_grouped(analysis)
    if not any(v is not None for row in grouped.rows for v in row[1:]):
        raise inputs.NoData(f"no speedups to report for {analysis.accelerator} ({options.test})", grouped.notes)
    over_time = reports.report_speedup(analysis)
    latest = reports.report_latest(analysis)
    files = inputs.expand_inputs(options.input_files)
    results_dir = os.path.dirname(os.path.abspath(files[0])) if files else os.getcwd()
    page_dir = os.path.dirname(os.path.abspath(page_path)) if page_path else os.getcwd()
    title = f"Benchmark report: {analysis.accelerator}, {options.test}"
    runs, said = len(analysis.timestamps), Notes()
    body = [
        f"<h1>{esc(title)}</h1>",
        f'<p class="small">Made by aggregate.py on {esc(_date(datetime.now(timezone.utc).timestamp()))} from '
        f"{esc(', '.join(files))}.</p>",
        f'<p class="small" id="share">{esc(share_line(page_path))}</p>',
        _dashboard_section(reports.report_dashboard(analysis), runs, fig_width, fig_height, said),
        _facts_section(analysis),
        _geomean_section(grouped, analysis, said),
        _over_time_section(over_time, runs, fig_width, fig_height, said),
        "<h2>Newest run, per model</h2>",
        f'<div class="plot">{_svg(latest, fig_width, fig_height)}</div>',
        # Its per-backend notes name the same newest run as the geomeans' do: said once.
        *said.html([note.replace("(newest run", "(run") for note in latest.notes]),
        _models_section(analysis, results_dir, page_dir),
        _generate_section(analysis),
        roofline_report.section(analysis, lambda table: _svg(table, fig_width, fig_height)),
    ]
    return (html_style.head(esc(title)) + "\n".join(body)
            + f"\n<script>{html_style.table_script()}</script>\n</body></html>\n")
