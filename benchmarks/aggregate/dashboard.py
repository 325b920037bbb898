"""aggregate.py --report=dashboard: the TorchInductor dashboard's numbers per backend and run: pass rate,
geomean speedup, mean compile latency, mean compression ratio and mean peak memory, the last four over the
configs that passed. Definitions (equal to the HUD's): below.

A line is one run (timestamp), suite, backend and value of every other axis (precision, compile mode,
dynamic, quantization, ...); its configs are the analysis' rows (one per model and batch size, --rounds
pooled). Each backend config is measured against the eager config of the same model and axes
(results/against_eager.py): of the same run, else the --baseline one; a config run with --speedup=paired takes
its speedup from its own pairs of eager and backend runs instead (the median of the per-pair ratios).

The definitions, PyTorch HUD's:

`aggregate.py --report=dashboard` (`aggregate/dashboard.py`, drawn by `reports.report_dashboard`) and compare.py's
gates (`compare/gates.py`) use the definitions of PyTorch's HUD (pytorch/test-infra,
`torchci/lib/benchmark/compilerUtils.ts`), over the analysis' rows (one per run, model, batch size and backend
label, `--rounds` pooled):

- A config's **eager baseline** (`results/against_eager.py`, `baseline_key`): the eager config of the same machine,
  suite, model, test, batch size and axes, those eager never varies aside (`BACKEND_ONLY_AXES`, each axis's `on_eager`:
  torch.compile's own, the compile mode, Inductor config and cache, which eager has none of, and `dynamic`, since
  eager runs static); the same run's, else
  the `--baseline` one (`EagerIndex`). `--speedup=paired` is left out too (eager is never paired): a paired config's
  speedup is its own (benchmarks/features/speedup/__init__.py). The one rule: the runner's end-of-sweep table
  (`runner/progress.speedup_table`) and `scripts/bench/dashboard.py` take their speedups' eager from it too, and
  aggregate's other reports match each config with the first backend's result at the same `shared_axes`
  (`aggregate/analysis.baseline_key`), so one page shows one speedup per config.
- **Passing**: the accuracy status (`Measurement.accuracy`) is `pass` or `pass_due_to_skip`
  (`accuracy_status.passed`, the HUD's passing names; its `eager_variation` is not written by today's harness) and
  the config measured a time (the HUD counts a pass with a zero speedup as a failure). The dashboard's notes name
  the configs judged by the mean-relative-error fallback or by cosine similarity, and those passed unchecked
  (`pass_due_to_skip`), per line (`aggregate/notes.rule_notes`): a fallback is never silent.
- **Pass rate** = passing configs / every config of the row (failures, skips and configs not checked included),
  shown as the percent and `passed/total`. A row no check judged (`dashboard.Line.checked` false: every config
  `not_checked` or failed before any check, a sweep without `--verify`) has none: its cell says `not checked: run
  with --verify` (`dashboard.NOT_CHECKED_TEXT`), not 0%, and its four figures are over the configs that measured a
  time instead of the passing ones.
- **Geomean speedup**: geometric mean over passing configs of eager time / backend time (each the analysis'
  datapoint: the median, or `--estimator`, per iteration); for a paired config, the median of its pair ratios, every
  process's pooled (the notes name those configs: "Paired: N config(s)").
- **Compile latency** (`against_eager.compile_latency`): the backend's first run (`Measurement.first_run_time`: the
  first warm-up run, compilation included) minus eager's first run, the harness's `compilation_latency`; the mean
  over passing configs, a zero left out.
- **Compression ratio** (`against_eager.compression_ratio`): eager's peak memory / the backend's
  (`Measurement.peak_memory`: `peak_memory_bytes`, of its `memory_kind`; on the CPU the config's own peak, not the
  harness's whole-process resident set, `process_rss_bytes`, docs/measurement.md; the dashboard's notes say so); the
  mean
  over passing configs, a zero left out.
- **Peak memory**: the mean of the backend's peak over passing configs.
- A config's figure over its processes (`--rounds`) is their mean; its accuracy, the first status that is not pass.

The gates compare those figures of one config between compare.py's two sides, each against its own side's eager
config, and dynamo's statistics (`Measurement.dynamo_stat`: the record's `dynamo_stats`; older records still give
their graph breaks, from `metrics.dynamo_graph_break_count` or upstream's `dynamo_counters`); `compare/expected.py`
keeps a config's accuracy and dynamo's counts in a CSV (`--expected`) and holds a run to them by the harness's
graph-break rule: graph breaks and fallbacks to eager exactly (fewer fails too), calls captured down at most 5 %, a
count without a column unchecked (the file's header says which it checks, so older files keep working).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Optional

from benchmarks.aggregate.analysis import Analysis
from benchmarks.results import accuracy_status, against_eager
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.measurement import AXIS_DEFAULTS

MIB = 2.0 ** 20
NOT_CHECKED_TEXT = "not checked: run with --verify"  # a line without accuracy data, where its pass rate would be
# What a config's accuracy is when no check judged it: not run with --verify, or it failed before any check could.
UNJUDGED = (AccuracyStatus.NOT_CHECKED, AccuracyStatus.FAIL_TO_RUN, AccuracyStatus.MODEL_FAIL_TO_LOAD,
            AccuracyStatus.OOM, AccuracyStatus.TIMEOUT, AccuracyStatus.SKIPPED)


@dataclasses.dataclass
class Entry:
    """One config (model and batch size) of one line."""

    label: str
    accuracy: str
    passed: bool
    timed: bool = False  # it measured a time (what an unchecked line's figures count instead of passing)
    reference: Optional[str] = None  # accuracy_reference: the rule that judged it (fp64, cosine, mean_rel_error)
    speedup: Optional[float] = None
    paired: bool = False  # the speedup is the config's own paired one (--speedup=paired), not against its eager config
    compile_latency: Optional[float] = None
    compression_ratio: Optional[float] = None
    peak_memory: Optional[float] = None
    cold_compile: Optional[float] = None  # --compile-cache=warm-start: the cold child's first run (s)
    warm_compile: Optional[float] = None  # and the warm child's, a fresh process on the cold one's cache
    aot_load: Optional[float] = None  # --aot-precompile: seconds its artifact took to load


@dataclasses.dataclass
class Line:
    timestamp: float
    suite: str
    backend: str  # the base backend (eager, inductor, openxla+dynamo, ...)
    axes: dict  # every other axis' value
    baseline: bool  # the eager line: speedup, compile latency and compression are 1, 0, 1 by definition
    entries: list = dataclasses.field(default_factory=list)

    @property
    def checked(self) -> bool:
        """Whether any config of the line was judged for accuracy. A sweep without --verify judges none: its
        line has no pass rate (not 0%), and its figures are over the configs that measured a time."""
        return any(e.accuracy not in UNJUDGED for e in self.entries) or not any(
            e.accuracy == AccuracyStatus.NOT_CHECKED for e in self.entries)

    @property
    def passed(self) -> int:
        return sum(e.passed for e in self.entries)

    @property
    def total(self) -> int:
        return len(self.entries)

    @property
    def pass_rate(self) -> Optional[float]:
        return 100.0 * self.passed / self.total if self.total and self.checked else None

    def _passing(self, name: str, drop_zero: bool) -> list:
        counted = (lambda e: e.passed) if self.checked else (lambda e: e.timed)
        values = [getattr(e, name) for e in self.entries if counted(e)]
        return [v for v in values if v is not None and math.isfinite(v) and not (drop_zero and v == 0)]

    @property
    def geomean_speedup(self) -> Optional[float]:
        values = [v for v in self._passing("speedup", True) if v > 0]
        return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None

    def _mean(self, name: str, drop_zero: bool = False) -> Optional[float]:
        values = self._passing(name, drop_zero)
        return statistics.fmean(values) if values else None

    @property
    def compile_latency(self) -> Optional[float]:
        return self._mean("compile_latency", True)  # the HUD leaves a 0 out (not measured)

    @property
    def compression_ratio(self) -> Optional[float]:
        return self._mean("compression_ratio", True)

    @property
    def peak_memory(self) -> Optional[float]:
        return self._mean("peak_memory")

    @property
    def cold_compile(self) -> Optional[float]:
        return self._mean("cold_compile")

    @property
    def warm_compile(self) -> Optional[float]:
        return self._mean("warm_compile")

    @property
    def aot_load(self) -> Optional[float]:
        return self._mean("aot_load")

    @property
    def compile_saving(self) -> Optional[float]:
        """What a warm start saves: the mean cold first run - the mean warm one (over the same configs)."""
        cold, warm = self.cold_compile, self.warm_compile
        return None if cold is None or warm is None else cold - warm

    def mode_checks(self) -> list:
        """(axis, its failing status, labels of the configs that failed it) per axis whose mode checks its configs
        (accuracy_status.MODE_CHECKS) that the line has on: its pass rate is over that check (and --verify's)."""
        return [(key, status, sorted((e.label for e in self.entries if e.accuracy == status), key=str.casefold))
                for key, status in accuracy_status.MODE_CHECKS.items() if self.axes.get(key)]

    def not_passed(self) -> dict:
        """accuracy status -> labels of the configs that did not pass (a passing accuracy without a time is
        `no_time`, as the HUD counts a zero speedup)."""
        out: dict = {}
        for e in self.entries:
            if not self.checked and e.accuracy == AccuracyStatus.NOT_CHECKED:
                continue  # the line says "not checked" once (NOT_CHECKED_TEXT), not each config
            if not e.passed:
                status = "no_time" if accuracy_status.passed(e.accuracy) else e.accuracy
                out.setdefault(status, []).append(e.label)
        return {k: sorted(v, key=str.casefold) for k, v in sorted(out.items())}


def axis_text(line: Line, key: str) -> str:
    """An axis' value as the dashboard shows it: a missing one is the axis' default (torch.compile's own
    axes: none for the baseline, which does not compile); a switch its name when on, nothing when off."""
    value = line.axes.get(key)
    if value is None and not (line.baseline and key in against_eager.COMPILE_ONLY_AXES):
        value = AXIS_DEFAULTS.get(key)
    return "" if value is None or value is False else key if value is True else str(value)


def config_accuracy(row) -> str:
    """A config's accuracy: the first of its processes that did not pass, else the first's (pass, or
    pass_due_to_skip: both passing statuses, as the HUD counts them)."""
    return accuracy_status.first_not_passing(m.accuracy for m in [row.measurement] + list(row.pooled))


def config_reference(row) -> Optional[str]:
    """The rule that judged a config (accuracy_reference): the first of its processes not judged by fp64, else
    fp64, else None (not judged, or a record from before the key)."""
    found = [m.record.get("accuracy_reference") for m in [row.measurement] + list(row.pooled)]
    return next((r for r in found if r not in (None, accuracy_status.REFERENCE_FP64)),
                next((r for r in found if r is not None), None))


def warm_start(processes: list) -> tuple:
    """A warm-start config's (cold first run, warm first run), each the mean over its processes; (None, None) for
    other configs."""
    found = [pair for pair in (m.warm_start() for m in processes) if pair is not None]
    if not found:
        return None, None
    return statistics.fmean(c for c, _ in found), statistics.fmean(w for _, w in found)


def processes(row) -> list:
    """The Measurements of a config's processes: the ok ones pooled (--rounds), else its one record."""
    return list(row.pooled) or [row.measurement]


def lines(analysis: Analysis) -> list:
    """Every dashboard line, oldest run first; in a run, the baseline first, then by backend and axes."""
    rows = analysis.rows
    base = next((r.measurement.base_backend for r in rows if r.backend == analysis.base), against_eager.EAGER)
    index = against_eager.EagerIndex(((r.measurement, r.timestamp, r) for r in rows if r.value is not None), base)
    axis_keys = sorted({k for r in rows for k in r.measurement.axes})
    latest = analysis.options.baseline == "latest"
    grouped: dict = {}
    for r in rows:
        m = r.measurement
        axes = {k: m.axes.get(k) for k in axis_keys}
        key = (r.timestamp, r.suite, m.base_backend, tuple((k, str(v)) for k, v in axes.items()))
        if key not in grouped:
            grouped[key] = Line(r.timestamp, r.suite, m.base_backend, axes, m.base_backend == base)
        accuracy = config_accuracy(r)
        entry = Entry(label=analysis.labels[r.workload], accuracy=accuracy, reference=config_reference(r),
                      passed=accuracy_status.passed(accuracy) and r.value is not None, timed=r.value is not None,
                      peak_memory=against_eager.peak_memory(processes(r)))
        entry.cold_compile, entry.warm_compile = warm_start(processes(r))
        entry.aot_load = against_eager.mean(m.aot_load_time() for m in processes(r))
        eager = None if m.base_backend == base or r.value is None else index.find(m, r.timestamp, latest)
        if eager is not None:
            entry.speedup = eager.value / r.value
            entry.compile_latency = against_eager.compile_latency(processes(r), processes(eager))
            entry.compression_ratio = against_eager.compression_ratio(processes(r), processes(eager))
        paired = against_eager.paired_speedup(processes(r)) if r.value is not None else None
        if paired is not None:  # eager timed beside the backend in the config's own processes: that speedup wins
            entry.speedup, entry.paired = paired["median"], True
        grouped[key].entries.append(entry)
    order = {name: i for i, name in enumerate([base] + sorted({k[2] for k in grouped} - {base}))}
    return sorted(grouped.values(), key=lambda l: (l.timestamp, l.suite, order[l.backend],
                                                   [str(l.axes[k]) for k in axis_keys]))
