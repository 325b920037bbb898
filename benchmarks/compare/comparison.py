"""compare.py's result: every pair's row (the JSON shape docs/compare.md documents: its outcome is the row's
`verdict`), the geomean, the counts."""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

from benchmarks.compare import bootstrap, gates, metrics, outcomes, recorded_noise
from benchmarks.results import against_eager, metric_words
from benchmarks.results.change_words import COMPARE_GATES, COMPARE_OUTCOMES, Word
from benchmarks.results.measurement import Measurement


@dataclasses.dataclass
class Settings:
    metric: str = "time"
    confidence: float = 0.95
    threshold: float = 0.02
    resamples: int = bootstrap.DEFAULT_RESAMPLES
    seed: int = bootstrap.DEFAULT_SEED
    skip_samples: Optional[int] = None
    limits: gates.Limits = gates.Limits()


@dataclasses.dataclass
class Report:
    rows: list
    geomean: Optional[dict]
    counts: dict
    settings: Settings
    noise: dict = dataclasses.field(default_factory=dict)  # side -> recorded_noise.summary of its compared records

    def as_json(self) -> dict:
        return {"rows": self.rows, "geomean": self.geomean, "counts": self.counts,
                "metric": self.settings.metric, "confidence": self.settings.confidence,
                "threshold": self.settings.threshold, "noise": self.noise}


def _side_summary(draws) -> dict:
    if draws is None:
        return {"median": None, "n_samples": 0, "n_processes": 0}
    return {"median": draws.median, "n_samples": draws.n_samples, "n_processes": draws.n_processes}


def _processes(found: list, settings: Settings) -> tuple:
    """([samples of each record that has some], why none has any)."""
    processes, why = [], None
    for record in found:
        values, reason = metrics.metric_samples(Measurement(record), settings.metric, settings.skip_samples)
        if values is None:
            why = reason
        else:
            processes.append(values)
    return processes, why


def _show_paired(row: dict, pair) -> None:
    """Both sides run with --speedup=paired: each side's paired speedup (its processes' pairs pooled) in the row,
    and a note saying which figure the verdict is of."""
    found = [against_eager.paired_speedup([Measurement(r) for r in side]) for side in (pair.control, pair.treatment)]
    if None in found:
        return
    row["paired_speedup"] = {"control": found[0]["median"], "treatment": found[1]["median"]}
    used = "the verdict is of it" if row["metric"] == "paired" else "--metric=paired compares it"
    row["gate_notes"] = row.get("gate_notes", []) + [
        f"paired speedup over eager {found[0]['median']:.2f}x -> {found[1]['median']:.2f}x ({used})"]


def _memory_kinds(found: list) -> list:
    """The kinds of memory figure the records that have one hold (metric_words.memory_kind), sorted."""
    return sorted({metric_words.memory_kind(m) for m in map(Measurement, found) if metrics.metric_samples(m, "memory")[0]
                   is not None})


def _rerun(found: list):
    """The newest record's command that reruns the config alone (`rerun`), or None (records from before it, or one
    whose command is not the runner's for that record: rerun_command.trusted_rerun)."""
    from benchmarks.config.rerun_command import trusted_rerun

    commands = [command for command in map(trusted_rerun, found) if command]
    return commands[-1] if commands else None


def _rerun_flags(found: list):
    """The newest record's short rerun: the runner's flags of a sweep of that one config (rerun_command.short_rerun),
    or None where the record holds no trusted `rerun`."""
    from benchmarks.config.rerun_command import short_rerun

    commands = [command for command in map(short_rerun, found) if command]
    return commands[-1] if commands else None


def compare(pairs: list, settings: Settings, sides: tuple = ([], [])) -> Report:
    """Every pair's row; `sides` (every record of the control's and the treatment's runs, whatever the
    selection) holds the eager runs the gates measure compression ratio and compile latency against."""
    import numpy as np

    rows, measured = [], []  # measured: (row, control processes, treatment processes)
    indexes = (gates.eager_index(sides[0]), gates.eager_index(sides[1]))
    for pair in pairs:
        row = {"model_name": pair.model.get("model_name"), "suite_name": pair.model.get("suite_name"),
               "experiment": pair.experiment, "metric": settings.metric,
               "control": _side_summary(None), "treatment": _side_summary(None),
               "time_ratio": None, "ci": None, "verdict": None, "note": "", "gates": [],
               "rerun": _rerun(pair.treatment or pair.control),
               "rerun_flags": _rerun_flags(pair.treatment or pair.control)}
        rows.append(row)
        if pair.control and pair.treatment:
            found = gates.findings(pair.control, pair.treatment, indexes, settings.limits)
            row["gates"] = [gate for gate, _ in found]
            row["gate_notes"] = [text for _, text in found]
        if pair.control and pair.treatment:
            _show_paired(row, pair)
        decided = outcomes.correctness(pair.control, pair.treatment)
        if decided:
            row["verdict"], row["note"] = decided
            continue
        control, why_control = _processes(pair.control, settings)
        treatment, why_treatment = _processes(pair.treatment, settings)
        if not control or not treatment:
            row["verdict"] = Word.NO_DATA
            row["note"] = f"control: {why_control}" if not control else f"treatment: {why_treatment}"
            continue
        if settings.metric == "memory":
            kinds = _memory_kinds(pair.control), _memory_kinds(pair.treatment)
            if kinds[0] != kinds[1] or len(kinds[0]) > 1:  # e.g. a GPU's allocator against the host's RSS
                row["verdict"] = Word.NO_DATA
                row["note"] = (f"memory kinds differ (not comparable): control {'/'.join(kinds[0])}, "
                               f"treatment {'/'.join(kinds[1])}")
                continue
        measured.append((row, control, treatment))
    rng = np.random.default_rng(settings.seed)
    sides = [side for _, control, treatment in measured for side in (control, treatment)]
    draws = bootstrap.side_draws(sides, settings.resamples, rng) if sides else []
    ratios = []
    for index, (row, _, _) in enumerate(measured):
        control, treatment = draws[2 * index], draws[2 * index + 1]
        result = bootstrap.ratio(control, treatment, settings.confidence)
        ratios.append(result)
        row["control"], row["treatment"] = _side_summary(control), _side_summary(treatment)
        row["time_ratio"], row["ci"] = result.value, list(result.ci)
        row["verdict"], row["note"] = outcomes.timing(result.value, result.ci, settings.threshold,
                                                      control.n_processes, treatment.n_processes)
    geomean = None
    combined = bootstrap.geomean(ratios, settings.confidence)
    if combined is not None:
        fewest = min(min(d.n_processes for d in draws[2 * i:2 * i + 2]) for i in range(len(measured)))
        outcome, _ = outcomes.timing(combined.value, combined.ci, settings.threshold, fewest, fewest)
        geomean = {"time_ratio": combined.value, "ci": list(combined.ci), "verdict": outcome, "n_configs": len(ratios)}
    counts = {name: 0 for name in COMPARE_OUTCOMES + COMPARE_GATES}
    for row in rows:
        counts[row["verdict"]] += 1
        for gate in row["gates"]:
            counts[gate] += 1
        if row.get("gate_notes"):
            row["note"] = "; ".join(filter(None, [row["note"]] + row.pop("gate_notes")))
        row.pop("gate_notes", None)
    rows.sort(key=_effect_order)
    noise = {side: recorded_noise.summary([r for pair in pairs for r in getattr(pair, side)])
             for side in ("control", "treatment")}
    return Report(rows, geomean, {k: v for k, v in counts.items() if v}, settings, noise)


def _effect_order(row: dict) -> tuple:
    """Failures first, then by ratio (the largest slowdown first), then configs without a ratio."""
    if row["verdict"] in (Word.NEW_FAILURE, Word.FIXED):
        return (0, COMPARE_OUTCOMES.index(row["verdict"]), 0.0)
    if row["time_ratio"] is not None:
        return (1, 0, -math.log(row["time_ratio"]))
    return (2, COMPARE_OUTCOMES.index(row["verdict"]), 0.0)


def exit_status(report: Report, fail_on: tuple) -> int:
    """1 when a row's outcome or one of its gates (or the geomean's outcome, with "geomean") is one of
    `fail_on`, else 0."""
    wanted = set(fail_on)
    if Word.GEOMEAN in wanted and report.geomean and report.geomean["verdict"] == Word.SLOWER:
        return 1
    return 1 if any(row["verdict"] in wanted or wanted & set(row["gates"]) for row in report.rows) else 0
