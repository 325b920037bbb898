"""The parity report's table (scripts/parity/report.py): per (model, test, precision) the dynamo harness's figures
beside ours, read from the harness's CSV files and our results file, and every difference named, with the
known reason where the two tools define a figure differently (docs/parity.md). Pure Python and numpy over files
already written: no harness, no torch.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import statistics
from pathlib import Path
from typing import Optional

from benchmarks.results import against_eager, records
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.measurement import EVERY_SAMPLE, Measurement

# Beyond these relative gaps a figure is named as a difference (speedup: the "within 10%"; compile
# latency: what the two tools measured alike on 5 models, about 20%).
SPEEDUP_GAP = 0.10
COMPILE_GAP = 0.25
COMPRESSION_GAP = 0.10
# Accuracy statuses that are a judgement of the outputs (the others: a run failed, or nothing was checked).
JUDGED = frozenset({AccuracyStatus.PASS, AccuracyStatus.FAIL_ACCURACY, AccuracyStatus.EAGER_TWO_RUNS_DIFFER,
                    AccuracyStatus.PASS_DUE_TO_SKIP})
# The harness's CPU memory figure is psutil's memory_percent() x total / 1e9: 100 x the resident set in GB; its CUDA
# figure is torch.cuda.max_memory_allocated() / 1e9 (get_peak_memory): GB.
HARNESS_MEMORY_TO_BYTES = 1e9 / 100
HARNESS_CUDA_MEMORY_TO_BYTES = 1e9

# Why a figure may differ where the tools define it differently (the keys the differences cite).
REASONS = {
    "timing": "the harness times eager and compiled alternately in one process (median of the pairs); ours "
              "divides the medians of two processes, whose C allocator history differs (issue #30, item 5)",
    "paired": "ours paired (`paired_speedup`) times eager and the backend alternately in one process, as the "
              "harness does, and reports the median of the per-pair ratios; the harness's CSV reports the ratio of "
              "its two medians, which a few disturbed runs move far more (its own pairs' median is read from its "
              "raw timings, --dump-raw-metrics, which the report asks for)",
    "compile": "the harness's compilation_latency is 5 compiled warm-up iterations (compile included) minus 5 "
               "eager ones, in one process; ours is the compiled child's first run minus eager's first run, two "
               "processes; both start from empty Inductor caches",
    "cuda-memory": "both read torch.cuda.max_memory_allocated, over different spans: the harness's peak is over its "
                   "warm-up iterations (the compiled one's compile and autotuning included), one process for both "
                   "sides; ours is the peak of the timed runs, reset after warm-up, each side in its own child",
    "cpu-memory": "the harness's CPU memory is the whole process's resident set after warm-up (a current figure, "
                  "not a peak; eager and compiled in one process); ours is the peak resident set above the "
                  "pre-model baseline during the timed runs, one process per side (the same with and without "
                  "--verify; the harness's own figure is our metrics.process_rss_bytes)",
    "accuracy-rule": "the harness judges against an fp64 reference (cosine similarity if fp64 fails) unless its "
                     "own lists call the model non-deterministic; ours names its rule in `accuracy_reference` "
                     "(`mean_rel_error`: upstream's mean relative error, because the suite declared the config's "
                     "output random) and why in `accuracy_reason`",
    "train-step": "training: the harness's accuracy CSV counts its compiled check, its performance CSV its "
                  "compiled warm-up, whose calls also collect the results (collect_results: one more break); ours "
                  "count the whole child, under --train-step=harness (the default for these suites) the harness's "
                  "step, under forward_loss forward + loss only (issue #30, item 3)",
    "batch-size": "the tools ran different batch sizes (the model chose its own, or a tool capped it)",
    "no-figure": "one side failed or has no figure: see its log (harness: <out>/harness/<suite>/*.log; ours: the "
                 "record's error and <out>/ours/logs/)",
    "graphs": "dynamo's counters: the harness's accuracy CSV counts the compiled run of check_accuracy, its "
              "performance CSV the compiled warm-up; ours count the whole child",
}


@dataclasses.dataclass(frozen=True)
class Spec:
    """One row: a model of a suite, at one test, precision and requested batch size."""

    suite: str
    model: str
    test: str
    precision: str
    batch_size: int

    @property
    def stem(self) -> str:
        return f"{self.model}-{self.test}-{self.precision}-bs{self.batch_size}"


@dataclasses.dataclass
class Side:
    """One tool's figures for a row (None: not measured, or failed: see `problem`)."""

    accuracy: Optional[str] = None
    batch_size: Optional[int] = None
    speedup: Optional[float] = None
    paired_speedup: Optional[float] = None  # ours: paired_speedup's median; the harness: its pairs' median ratio
    compile_latency: Optional[float] = None  # seconds
    graph_breaks: Optional[int] = None
    calls_captured: Optional[int] = None
    compression: Optional[float] = None
    latency: Optional[float] = None  # ms per iteration of the compiled model: the harness's abs_latency, ours' median
    process_compression: Optional[float] = None  # ours: the same ratio of metrics.process_rss_bytes (the harness's kind)
    eager_memory: Optional[float] = None  # bytes
    compiled_memory: Optional[float] = None  # bytes
    accuracy_rule: Optional[str] = None  # ours: accuracy_reference (None: the fallback)
    problems: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Difference:
    what: str
    text: str
    reason: Optional[str] = None  # a key of REASONS

    def __str__(self) -> str:
        return f"{self.text} [{self.reason}]" if self.reason else self.text


# --- the harness's side ---

def harness_csv(out: Path, spec: Spec, mode: str) -> Path:
    """Where the report keeps one harness run's CSV (its log beside it, .log)."""
    return out / "harness" / spec.suite / f"{spec.stem}-{mode}.csv"


def read_csv_row(path: Path, model: str) -> Optional[dict]:
    """The last row of `path` naming `model`, or None (no file, no row). A short row (the harness's failure row)
    keeps only the columns it has."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError:
        return None
    if not rows:
        return None
    header, found = rows[0], None
    for row in rows[1:]:
        if len(row) > 1 and row[1] == model:
            found = dict(zip(header, row))
    return found


def float_field(row: Optional[dict], key: str) -> Optional[float]:
    try:
        value = float(row[key]) if row and row.get(key) not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def int_field(row: Optional[dict], key: str) -> Optional[int]:
    value = float_field(row, key)
    return int(value) if value is not None else None


def harness_side(out: Path, spec: Spec, device: str = "cpu") -> Side:
    side = Side()
    to_bytes = HARNESS_CUDA_MEMORY_TO_BYTES if device == "cuda" else HARNESS_MEMORY_TO_BYTES
    accuracy = read_csv_row(harness_csv(out, spec, "accuracy"), spec.model)
    performance = read_csv_row(harness_csv(out, spec, "performance"), spec.model)
    if accuracy is None:
        side.problems.append("no accuracy run")
    else:
        side.accuracy = accuracy.get("accuracy") or None
        side.batch_size = int_field(accuracy, "batch_size") or None
        side.graph_breaks = int_field(accuracy, "graph_breaks")
        side.calls_captured = int_field(accuracy, "calls_captured")
    if performance is None:
        side.problems.append("no performance run")
    elif not float_field(performance, "speedup"):  # the harness's failure row: dev,name,0,0.0,0.0
        side.problems.append("performance run failed")
    else:
        side.batch_size = side.batch_size or int_field(performance, "batch_size") or None
        side.speedup = float_field(performance, "speedup")
        side.compile_latency = float_field(performance, "compilation_latency")
        side.latency = float_field(performance, "abs_latency") or None
        side.paired_speedup = harness_pair_median(out, spec)
        side.compression = float_field(performance, "compression_ratio") or None
        eager, compiled = float_field(performance, "eager_peak_mem"), float_field(performance, "dynamo_peak_mem")
        side.eager_memory = eager * to_bytes if eager else None
        side.compiled_memory = compiled * to_bytes if compiled else None
        # graph breaks: the accuracy CSV's, the dashboard's figure (the performance CSV's warm-up also collects
        # the results, one more break in training); calls captured: the performance CSV's, which runs the model
        # in the mode ours times (the accuracy check trains TorchBench models in eval mode)
        breaks, calls = int_field(performance, "graph_breaks"), int_field(performance, "calls_captured")
        side.graph_breaks = side.graph_breaks if side.graph_breaks is not None else breaks
        side.calls_captured = calls if calls is not None else side.calls_captured
    return side


def harness_raw_timings(out: Path, spec: Spec, device: str = "cpu") -> Path:
    """Where the harness's --dump-raw-metrics puts a performance run's timings on `device`: (repeat, 2) seconds,
    eager then compiled per pair, in numpy's format."""
    csv_path = harness_csv(out, spec, "performance")
    return csv_path.with_name(f"{csv_path.stem}-raw_timings-{spec.model}-{device}.npy")


def harness_pair_median(out: Path, spec: Spec) -> Optional[float]:
    """The median of the harness's per-pair ratios eager / compiled (what ours reports as paired_speedup), from
    its raw timings; None without them. Its CSV's speedup is the ratio of the two medians instead, which a few
    disturbed runs move far more."""
    found = [harness_raw_timings(out, spec, device) for device in ("cpu", "cuda")]
    found = [path for path in found if path.exists()]
    if not found:
        return None
    path = found[0]
    import numpy as np

    try:
        timings = np.load(path)
    except (OSError, ValueError):
        return None
    if timings.ndim != 2 or timings.shape[1] != 2:
        return None
    ratios = [e / c for e, c in timings if e > 0 and c > 0 and math.isfinite(e) and math.isfinite(c)]
    return float(statistics.median(ratios)) if ratios else None


# --- our side ---

def load_ours(results: Path) -> list:
    """Every record of our results file as a Measurement (a torn last line skipped); [] without a file."""
    if not results.exists():
        return []
    return [Measurement(record) for record in records.stream_records(str(results))]


def _precision(m: Measurement) -> str:
    return str(m.experiment.get("precision") or "fp32")


def _latest(found: list) -> Optional[Measurement]:
    return found[-1] if found else None  # file order: the newest last


def paired_speedup(m: Measurement) -> Optional[float]:
    """The record's `paired_speedup`: a number, or an object holding one (median, ratio, speedup or value)."""
    value = m.record.get("paired_speedup")
    if isinstance(value, dict):
        value = next((value[k] for k in ("median", "ratio", "speedup", "value") if k in value), None)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _process_compression(eager: Measurement, compiled: Measurement) -> Optional[float]:
    """Eager's whole-process resident set after its timed runs over the compiled child's (medians): the harness's
    kind of CPU memory, though from two processes (the compiled one holds the compiler too) where it has one."""
    sizes = [m.samples("process_rss_bytes", EVERY_SAMPLE) for m in (eager, compiled)]
    if any(size is None or not len(size) for size in sizes):
        return None
    eager_rss, compiled_rss = (float(statistics.median(size)) for size in sizes)
    return eager_rss / compiled_rss if compiled_rss > 0 else None


def our_side(views: list, spec: Spec) -> Side:
    side = Side()
    mine = [m for m in views if m.suite == spec.suite and m.model_name == spec.model and m.test == spec.test
            and _precision(m) == spec.precision and m.record.get("requested_batch_size") in (spec.batch_size, None)]
    eager = _latest([m for m in mine if m.base_backend == against_eager.EAGER])
    compiled = _latest([m for m in mine if m.base_backend == "inductor" and not m.axes.get("compile_mode")
                        and not m.axes.get("dynamic")])
    if compiled is None:
        side.problems.append("no inductor record")
        return side
    side.batch_size = compiled.batch_size if isinstance(compiled.batch_size, int) else None
    if not compiled.ok:
        error = compiled.record.get("error") or {}
        side.problems.append(f"inductor {compiled.status}: {str(error.get('message') or '')[:80]}".rstrip(": "))
    side.accuracy = compiled.accuracy
    side.accuracy_rule = compiled.record.get("accuracy_reference")
    side.graph_breaks = compiled.dynamo_stat("graph_breaks")
    side.calls_captured = compiled.dynamo_stat("calls_captured")
    side.paired_speedup = paired_speedup(compiled)
    if eager is None or not eager.ok:
        side.problems.append("no eager record" if eager is None else f"eager {eager.status}")
        return side
    if compiled.ok:
        eager_times, compiled_times = eager.per_iter_time(), compiled.per_iter_time()
        if eager_times is not None and compiled_times is not None:
            side.speedup = statistics.median(eager_times) / statistics.median(compiled_times)
        if compiled_times is not None:
            side.latency = float(statistics.median(compiled_times)) * 1e3
        side.compile_latency = against_eager.compile_latency([compiled], [eager])
        side.compression = against_eager.compression_ratio([compiled], [eager])
        side.process_compression = _process_compression(eager, compiled)
        side.eager_memory, side.compiled_memory = eager.peak_memory(), compiled.peak_memory()
    return side


# --- the differences ---

def relative_gap(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """|a - b| relative to the larger, or None when either is missing."""
    if a is None or b is None:
        return None
    top = max(abs(a), abs(b))
    return 0.0 if top == 0 else abs(a - b) / top


def _mib(value: Optional[float]) -> str:
    return "?" if value is None else f"{value / 2**20:.0f}"


def differences(spec: Spec, harness: Side, ours: Side, device: str = "cpu") -> list:
    """Each difference between the two sides on `device` (cpu, cuda), with the reason where the definitions
    differ."""
    found = []
    for side, name in ((harness, "harness"), (ours, "ours")):
        for problem in side.problems:
            found.append(Difference("missing", f"{name}: {problem}", "no-figure"))
    if harness.batch_size and ours.batch_size and harness.batch_size != ours.batch_size:
        found.append(Difference("batch size", f"batch size {harness.batch_size} vs {ours.batch_size}",
                                "batch-size"))
    if harness.accuracy and ours.accuracy and harness.accuracy != ours.accuracy:
        judged = harness.accuracy in JUDGED and ours.accuracy in JUDGED
        reason = ("train-step" if spec.test == "train" else "accuracy-rule") if judged else "no-figure"
        found.append(Difference("accuracy", f"accuracy {harness.accuracy} vs {ours.accuracy}", reason))
    if ours.accuracy in JUDGED and ours.accuracy_rule != "fp64":
        rule = ours.accuracy_rule or "mean relative error (no fp64 reference)"
        found.append(Difference("accuracy rule", f"our accuracy judged by {rule}", "accuracy-rule"))
    gap = relative_gap(harness.speedup, ours.speedup)
    if gap is not None and gap > SPEEDUP_GAP:
        text = f"speedup {harness.speedup:.2f}x vs {ours.speedup:.2f}x"
        paired_gap = relative_gap(harness.speedup, ours.paired_speedup)
        if paired_gap is not None:
            verdict = "within" if paired_gap <= SPEEDUP_GAP else "also beyond"
            text += f" (ours paired {ours.paired_speedup:.2f}x: {verdict} 10%)"
        found.append(Difference("speedup", text, "timing"))
    elif gap is not None and ours.paired_speedup is not None:
        paired_gap = relative_gap(harness.speedup, ours.paired_speedup)
        if paired_gap > SPEEDUP_GAP:
            text = f"speedup {harness.speedup:.2f}x vs ours paired {ours.paired_speedup:.2f}x"
            pairs_gap = relative_gap(harness.paired_speedup, ours.paired_speedup)
            if pairs_gap is not None:  # the same statistic on both sides: the harness's pairs' median
                verdict = "within" if pairs_gap <= SPEEDUP_GAP else "also beyond"
                text += f" (the harness's own pairs' median {harness.paired_speedup:.2f}x: {verdict} 10%)"
            found.append(Difference("paired speedup", text, "paired"))
    gap = relative_gap(harness.compile_latency, ours.compile_latency)
    if gap is not None and gap > COMPILE_GAP:
        found.append(Difference("compile latency", f"compile latency {harness.compile_latency:.1f} s vs "
                                f"{ours.compile_latency:.1f} s", "compile"))
    if harness.graph_breaks is not None and ours.graph_breaks is not None and harness.graph_breaks != ours.graph_breaks:
        reason = "train-step" if spec.test == "train" else "graphs"
        found.append(Difference("graph breaks", f"graph breaks {harness.graph_breaks} vs {ours.graph_breaks}", reason))
    if (harness.calls_captured is not None and ours.calls_captured is not None
            and harness.calls_captured != ours.calls_captured):
        reason = "train-step" if spec.test == "train" else "graphs"
        found.append(Difference("calls captured", f"calls captured {harness.calls_captured} vs "
                                f"{ours.calls_captured}", reason))
    gap = relative_gap(harness.compression, ours.compression)
    if gap is not None and gap > COMPRESSION_GAP and device == "cuda":
        found.append(Difference("memory", f"compression {harness.compression:.2f} vs {ours.compression:.2f} "
                                f"(peak allocated: harness {_mib(harness.eager_memory)} -> "
                                f"{_mib(harness.compiled_memory)} MiB; ours {_mib(ours.eager_memory)} -> "
                                f"{_mib(ours.compiled_memory)} MiB)", "cuda-memory"))
    elif gap is not None and gap > COMPRESSION_GAP:
        found.append(Difference("memory", f"compression {harness.compression:.2f} vs {ours.compression:.2f} "
                                f"(harness RSS {_mib(harness.eager_memory)} -> {_mib(harness.compiled_memory)} MiB; "
                                f"ours above baseline {_mib(ours.eager_memory)} -> {_mib(ours.compiled_memory)} MiB"
                                + (f"; ours by whole-process RSS {ours.process_compression:.2f}"
                                   if ours.process_compression is not None else "") + ")", "cpu-memory"))
    return found


# --- the table ---

@dataclasses.dataclass
class Row:
    spec: Spec
    harness: Side
    ours: Side
    differences: list


def build_rows(specs: list, out: Path, results: Path) -> list:
    views = load_ours(results)
    rows = []
    for spec in specs:
        harness, ours = harness_side(out, spec), our_side(views, spec)
        rows.append(Row(spec, harness, ours, differences(spec, harness, ours)))
    return rows


def _pair(a, b, fmt) -> str:
    return f"{'-' if a is None else fmt(a)} / {'-' if b is None else fmt(b)}"


HEADER = ("model", "test", "prec", "batch h/o", "accuracy h/o", "speedup h/o", "compile s h/o", "breaks h/o",
          "compression h/o", "differences")


def cells(row: Row) -> tuple:
    h, o = row.harness, row.ours
    speedup = _pair(h.speedup, o.speedup, lambda v: f"{v:.2f}x")
    if o.paired_speedup is not None:
        speedup += f" (paired {o.paired_speedup:.2f}x)"
    return (row.spec.model, row.spec.test, row.spec.precision, _pair(h.batch_size, o.batch_size, str),
            _pair(h.accuracy, o.accuracy, str), speedup,
            _pair(h.compile_latency, o.compile_latency, lambda v: f"{v:.1f}"),
            _pair(h.graph_breaks, o.graph_breaks, str), _pair(h.compression, o.compression, lambda v: f"{v:.2f}"),
            "; ".join(map(str, row.differences)) or "none")


def render(rows: list) -> str:
    """The side-by-side table (h: the harness, o: ours), then the reasons the differences cite."""
    table = [HEADER] + [cells(row) for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1] for r in table]
    cited = sorted({d.reason for row in rows for d in row.differences if d.reason})
    if cited:
        lines += ["", "Reasons:"] + [f"  [{key}] {REASONS[key]}" for key in cited]
    return "\n".join(lines) + "\n"


def write_csv(rows: list, path: Path) -> None:
    """The same table as CSV, one column per figure and side, the differences joined by '; '."""
    fields = ["suite", "model", "test", "precision"]
    figures = ["batch_size", "accuracy", "speedup", "compile_latency", "graph_breaks", "calls_captured",
               "compression", "eager_memory", "compiled_memory"]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(fields + [f"{side}_{name}" for name in figures for side in ("harness", "ours")]
                        + ["harness_pairs_median", "ours_paired_speedup", "ours_process_compression",
                           "ours_accuracy_rule", "differences"])
        for row in rows:
            values = [row.spec.suite, row.spec.model, row.spec.test, row.spec.precision]
            for name in figures:
                values += [getattr(row.harness, name), getattr(row.ours, name)]
            values += [row.harness.paired_speedup, row.ours.paired_speedup, row.ours.process_compression,
                       row.ours.accuracy_rule,
                       "; ".join(map(str, row.differences))]
            writer.writerow(["" if v is None else v for v in values])
