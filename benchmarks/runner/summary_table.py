"""The end-of-sweep table (runner/progress.py prints it): per (model, accelerator, test, batch size) and backend,
the median ms per iteration over every round's timed runs, their spread (an unstable mark, as pyperf's), the speedup
over eager with significant digits, dynamo's graph breaks and the roofline fraction beside it, and a mark on a config
whose outputs failed their check; then a legend for the marks shown, and for the LLM rows (run by generate) the
figures vLLM and optimum-benchmark print. Every name taken from a record is `shown`."""

from __future__ import annotations

import statistics

from benchmarks.plumbing.cli_support import shown
from benchmarks.results import accuracy_status, metric_catalog, number_text
from benchmarks.results.records import RecordStatus

PAIRED_LEGEND = ("(Nx paired, low-high: --speedup=paired, the median of eager/backend over pairs of alternating runs "
                 "in the config's own process, and its order-statistic interval; Nx: the eager config's median / this)")
FIGURES_LEGEND = ("N breaks: dynamo's graph breaks; roofline N%: the fraction of the machine's attainable ceiling "
                  "reached (docs/roofline.md)")


def pooled_ms(cell: list) -> list:
    """The steady per-iteration times (ms) of a cell's ok records, every round pooled."""
    values = []
    for m in cell:
        if m.record["status"] == RecordStatus.OK:
            found = m.per_iter_time()
            values += [] if found is None else [float(v) * 1e3 for v in found.tolist()]
    return values


def ms_text(ms: float) -> str:
    return f"{ms:.3f}" if ms >= 0.1 else number_text.significant(ms)


def progress_figures(record: dict) -> str:
    """The medians of the record's metrics declared `progress` (results/metric_catalog.py: microbench's TFLOP/s),
    each with its unit: " 1.23 TFLOP/s"."""
    text = ""
    for name in metric_catalog.progress_metrics():
        values = (record.get("metrics") or {}).get(name)
        if isinstance(values, list) and values:
            text += f" {statistics.median(values):.3g} {metric_catalog.get(name).unit}"
    return text


def cell_text(cell: list, eager_ms, marks: set) -> str:
    """One backend's cell: `0.780 ±2% (0.250x, 2 breaks, roofline 0.2%)`, `✗fail_accuracy` after a config whose
    outputs failed its check, a status for one that did not run. `marks` collects the legends it needs."""
    from benchmarks.results import against_eager

    ok = [m for m in cell if m.record["status"] == RecordStatus.OK]
    if not ok:
        return shown(cell[-1].record["status"])
    values = pooled_ms(ok)
    if not values:
        return "no time"
    ms = statistics.median(values)
    spread, unstable = number_text.spread(values)
    text = ms_text(ms) + (f" {spread}" if spread else "") + (number_text.UNSTABLE_MARK if unstable else "")
    marks.add("spread") if spread else None
    text += progress_figures(ok[-1].record)
    paired = against_eager.paired_speedup(ok)
    inside = number_text.beside_speedup(ok[-1].record)
    if paired:  # its own eager runs, alternating with the backend's: median of the pairs, interval
        inside.insert(0, f"{number_text.ratio(paired['median'])} paired, {number_text.significant(paired['low'])}-"
                         f"{number_text.significant(paired['high'])}")
        marks.add("paired")
    elif eager_ms:
        inside.insert(0, number_text.ratio(eager_ms / ms))
    if inside:
        text += f" ({', '.join(inside)})"
        marks.add("figures") if len(inside) > 1 or not (paired or eager_ms) else None
    verdicts = [accuracy_status.derive(m.record) for m in ok]
    failed = next((v for v in verdicts if accuracy_status.failed(v)), None)
    if failed:
        text += f" {number_text.FAILED_MARK}{shown(failed)}"
        marks.add("failed")
    return text


def legend(marks: set) -> list:
    """The legend lines of the marks a table shows."""
    out = []
    if "failed" in marks:
        out.append(number_text.FAILED_LEGEND)
    if "spread" in marks:
        out.append(number_text.SPREAD_LEGEND)
    if "figures" in marks:
        out.append(FIGURES_LEGEND)
    if "paired" in marks:
        out.append(PAIRED_LEGEND)
    return out


def generate_line(m) -> str:
    """An LLM row's figures, medians over its timed calls: `TTFT 4.10 ms, TPOT 2.31 ms, ITL p50 2.20 ms p99 3.10
    ms, 432 tokens/s, bandwidth 0.75% of the measured, generate 54.4 ms`; '' for a record not run by generate."""
    figures = number_text.generate_figures(m)
    if not figures:
        return ""
    words = {"ITL p99": "p99", "tokens/s": "", "bandwidth": "bandwidth"}
    parts = [f"{words.get(label, label)} {text}".strip() if label != "tokens/s" else text for label, text in figures]
    parts = [part + " of the measured" if part.startswith("bandwidth") else part for part in parts]
    return ", ".join(parts).replace(" ms, p99", " ms p99")


def generate_lines(groups: dict) -> list:
    """The LLM rows' lines, one per ok config (its newest round's record)."""
    lines = []
    for (model, *_), cells in groups.items():
        for backend, cell in cells.items():
            ok = [m for m in cell if m.record["status"] == RecordStatus.OK]
            text = generate_line(ok[-1]) if ok else ""
            if text:
                lines.append(f"  {shown(model)} {shown(backend)}: {text}")
    if not lines:
        return []
    return ["LLM rows (run by generate; medians over the timed calls; ms per token where per token):"] + lines


def group(views: list, shared: set) -> tuple:
    """({(model, accel, test, batch): {backend label: [Measurement, ...] (every round)}}, backend labels in order)."""
    groups, backends = {}, []
    for m in views:
        record, exp = m.record, m.experiment
        backend = m.backend_label(omit=shared)  # with the axes off their default that differ: inductor[batch]
        if backend not in backends:
            backends.append(backend)
        key = (record["model"]["model_name"], exp.get("accelerator"), exp.get("test"),
               record.get("requested_batch_size") or exp.get("batch_size"))
        groups.setdefault(key, {}).setdefault(backend, []).append(m)
    return groups, backends
