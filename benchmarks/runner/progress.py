"""What the sweep shows a person: a progress bar with counts, a line per finished config, and the
end-of-sweep table (median per-iteration time per backend and speedup over eager). Every name and message taken from
a record is `shown` (a newline or a terminal escape made visible): one record never forges a line of its own."""

from __future__ import annotations

import logging
import os
import statistics
import sys

from benchmarks.config.rerun_command import trusted_rerun
from benchmarks.plumbing.cli_support import shown
from benchmarks.results import accuracy_status, records
from benchmarks.runner import summary_table
from benchmarks.results.records import RecordStatus

log = logging.getLogger("benchmarks.runner.sweep")


class Progress:
    """A tqdm bar over configs (when wanted) plus one log line per finished config (always)."""

    def __init__(self, total: int, enabled: bool):
        self.total = total
        self.bar = None
        self._redirect = None
        self._label = None
        if enabled and total:
            from tqdm import tqdm
            from tqdm.contrib.logging import logging_redirect_tqdm

            self.bar = tqdm(total=total, unit="config", dynamic_ncols=True)
            self._redirect = logging_redirect_tqdm()

    def __enter__(self):
        if self._redirect:
            self._redirect.__enter__()
        return self

    def __exit__(self, *exc):
        if self._redirect:
            self._redirect.__exit__(*exc)
        if self.bar:
            self.bar.close()

    def write(self, line: str) -> None:
        if self.bar:
            self.bar.write(line)
        else:
            print(line, file=sys.stderr)

    def running(self, configs: list, counts: dict) -> None:
        """Show which configs are running now (one for a serial sweep, up to --jobs otherwise)."""
        if not self.bar:
            return
        names = [f"{shown(c.model['model_name'])} {c.experiment.backend}" for c in configs]
        label = names[0] if len(names) == 1 else f"{len(names)} running: " + ", ".join(names[:3]) + (
            ", ..." if len(names) > 3 else "")
        if label != self._label:
            self._label = label
            self.bar.set_description(label, refresh=False)
            self.bar.set_postfix(counts)

    def done(self, index: int, config, record: dict, counts: dict) -> None:
        log.info("[%d/%d] %s: %s", index, self.total, config.label(), done_text(record))
        if self.bar:
            self.bar.set_postfix(counts)
            self.bar.update(1)


def done_text(record: dict) -> str:
    """What the progress line says of a finished config: its status, median time and the medians of the metrics
    the catalog marks `progress` (results/metric_catalog.py), its verdict; or its failure."""
    status = record["status"]
    if status == RecordStatus.OK:
        ms = _median_ms(record)
        verdict = accuracy_status.derive(record)  # a config that ran but failed its check is not `ok`
        figures = summary_table.progress_figures(record)
        what = f"{verdict if accuracy_status.failed(verdict) else 'ok'}, median " \
               f"{float('nan') if ms is None else ms:.3f} ms/iter" + (f",{figures}" if figures else "")
        why = verdict_detail(record, verdict)
        what += f" ({shown(why)})" if why else ""
    else:
        error = record.get("error") or {}
        what = f"{status} in {error.get('phase')}: {shown(error.get('message'))}"
    if record.get("verify"):
        code, message = record.get("verification_code"), record.get("verification_message")
        what += f"; upstream's verification_code {code}" + (f" ({shown(message)})" if message and status == RecordStatus.OK
                                                            else "")
    return what


def verdict_detail(record: dict, verdict: str):
    """Why an ok record's verdict fails, in a line: the golden check's message, or --verify's accuracy message."""
    if not accuracy_status.failed(verdict):
        return None
    if verdict in accuracy_status.GOLDEN_FAILURES:
        return f"golden: {(record.get('golden') or {}).get('message')}"
    return record.get("accuracy_message") or record.get("accuracy_reason")


def config_text(record: dict) -> str:
    """A record's config as the progress line names it: the model and the experiment's slug (and round)."""
    from benchmarks.config.experiment_config import ExperimentConfig

    experiment = ExperimentConfig.from_dict(dict(record["experiment"], batch_size=record.get("requested_batch_size")))
    text = f"{shown((record.get('model') or {}).get('model_name'))} {experiment.slug()}"
    return f"{text} round {record['round']}" if record.get("round") else text


def not_passing(latest: dict) -> list:
    """(config text, verdict, its record's rerun command or None) of the sweep's configs whose verdict is a failure
    (accuracy_status.failed; a failed status always is), in order. A rerun is shown only when it is the runner's
    command for that record (rerun_command.trusted_rerun): a resumed file's record may say anything."""
    found = [(config_text(r), accuracy_status.derive(r), records.record_status(r), trusted_rerun(r))
             for r in latest.values()]
    return [(text, verdict, rerun) for text, verdict, status, rerun in found
            if accuracy_status.failed(verdict) or status in records.FAILED_STATUSES]


def _median_ms(record: dict):
    """The median per-iteration time (ms), as results/measurement.py defines it."""
    from benchmarks.results.measurement import Measurement  # numpy: only once a record is in

    values = Measurement(record).per_iter_time()
    return None if values is None else float(statistics.median(values.tolist())) * 1e3


def table(rows: list, header: list) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header] + rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def speedup_table(sweep_records: list) -> str:
    """Per (model, accelerator, test, batch size): each backend's median ms/iter over every round, its spread, and
    its speedup over its eager baseline (results/against_eager.py: eager at the same axes, torch.compile's own
    aside) or, for a paired config (--speedup=paired), its own paired speedup and interval, with graph breaks and
    the roofline fraction beside it and a mark on a config that failed its check (runner/summary_table.py); then
    the legend of the marks shown, and the LLM rows' figures. Columns are backend labels without the axes every
    record shares (a microbench sweep's one dtype)."""
    from benchmarks.results import against_eager
    from benchmarks.results.measurement import Measurement  # numpy: only once a record is in

    views = [Measurement(record) for record in sweep_records]
    keys = {key for m in views for key in m.axes}
    shared = {key for key in keys if len({repr(m.axes.get(key)) for m in views}) == 1}
    shared.discard("cudagraphs")  # a column says whether its CUDA graphs were on, even when every one's were
    eager_of = against_eager.EagerIndex((m, None, m) for m in views)
    groups, backends = summary_table.group(views, shared)
    if not groups:
        return ""
    rows, marks = [], set()
    for key, cells in groups.items():
        model, accelerator, test, batch = key
        row = [shown(model), shown(accelerator), shown(test), shown(batch) if batch is not None else "-"]
        for backend in backends:
            cell = cells.get(backend)
            row.append("" if cell is None else summary_table.cell_text(cell, eager_ms(cell, cells, eager_of, shared),
                                                                        marks))
        rows.append(row)
    header = ["model", "accel", "test", "batch"] + [f"{shown(b)} ms" for b in backends]
    lines = [table(rows, header)] + summary_table.legend(marks) + summary_table.generate_lines(groups)
    return "\n".join(lines)


def eager_ms(cell: list, cells: dict, eager_of, shared: set):
    """The median ms/iter of a cell's eager baseline (every round of it pooled), None for eager itself or without
    one."""
    from benchmarks.results import against_eager

    m = cell[-1]
    eager = eager_of.find(m) if m.base_backend != against_eager.EAGER else None
    if eager is None:
        return None
    values = summary_table.pooled_ms(cells.get(eager.backend_label(omit=shared)) or [eager])
    return statistics.median(values) if values else None


def latest_records(results_path: str, configs: list) -> dict:
    """fingerprint -> the newest record of each of `configs` in the results file (earlier sweeps' included)."""
    wanted = {config.fingerprint for config in configs}
    latest = {}
    if os.path.exists(results_path):
        fingerprint_of = records.RecordFingerprints()
        for record in records.stream_records(results_path, warn=False):
            key = fingerprint_of(record)
            if key in wanted:
                latest[key] = record
    return latest


MAX_NAMED = 20  # configs the summary's "not passing" line names; the rest are counted
MAX_RERUNS = 3  # failing configs whose rerun command the summary prints


def end_of_sweep(results_path: str, latest: dict, options, counts: dict, already: int, seconds: float,
                 resume: str, beside: int = 0, jobs: int = 1) -> str:
    """The closing summary; `latest`: latest_records of the sweep's configs."""
    text = speedup_table(list(latest.values()))
    lines = [text, ""] if text else []
    lines.append(f"{counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped"
                 f" ({already} already done) in {seconds:.1f} s")
    codes = {}
    for record in latest.values():
        if record.get("verify"):
            codes[record.get("verification_code")] = codes.get(record.get("verification_code"), 0) + 1
    if codes:
        lines.append("upstream's verification_code: " + ", ".join(f"{count} {code}" for code, count in
                                                               sorted(codes.items())))
    if any(accuracy_status.checked(r) for r in latest.values()):
        accuracy = {}  # the harness's statuses (docs/accuracy.md): what the dashboard's pass rate counts
        for record in latest.values():
            status = accuracy_status.derive(record)
            accuracy[status] = accuracy.get(status, 0) + 1
        lines.append("accuracy: " + ", ".join(f"{count} {status}" for status, count in sorted(accuracy.items())))
    failing = not_passing(latest)
    if failing:  # the configs the exit status counts against the sweep, named (their verdict: results/accuracy_status)
        more = len(failing) - MAX_NAMED
        lines.append(f"not passing ({len(failing)}): " + "; ".join(f"{text}: {verdict}" for text, verdict, _ in
                                                                   failing[:MAX_NAMED])
                     + (f"; and {more} more (their records' `accuracy`)" if more > 0 else ""))
        reruns = [(text, rerun) for text, _, rerun in failing if rerun][:MAX_RERUNS]
        if reruns:  # what a user does next: that config alone, in a directory of its own (every record's `rerun`)
            lines.append("rerun one alone (each record's `rerun` holds its command):")
            lines.extend(f"  # {text}\n  {rerun}" for text, rerun in reruns)
    if beside:
        lines.append(f"note: {beside} config(s) were timed while other children ran beside them (--jobs {jobs}); "
                     "they shared the machine's memory bandwidth and caches: for final timings run with --jobs 1")
    lines.append(f"results: {results_path}")
    lines.append(f"logs:    {os.path.join(options.output_dirname, 'logs')}")
    lines.append(f"resume:  {resume}")
    return "\n".join(lines)
