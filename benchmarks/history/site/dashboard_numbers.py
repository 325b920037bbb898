"""The dashboard's five numbers of each summary line (suite x backend label x test x machine) in every run, as
aggregate.py's dashboard defines them (benchmarks/aggregate/dashboard.py; results/against_eager.py):

pass rate          configs that passed / configs with a record that wasn't a skip
geomean speedup    over the passing configs: their eager baseline's time / theirs (the same run's eager)
compile latency    mean over the passing configs of their first run - their eager baseline's first run (0 left out)
compression ratio  mean over the passing configs of eager's peak memory / theirs
peak memory        mean over the passing configs of their peak memory

Times are each run's per-iteration median (grid.py). An eager line is its own baseline: it has a pass rate and
a peak memory, and no speedup, latency or compression.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from benchmarks.history.site import grid as grid_module

METRICS = ("pass_rate", "speedup", "compile_latency", "compression", "peak_memory")
TITLES = {"pass_rate": "Pass rate", "speedup": "Geomean speedup", "compile_latency": "Compile latency (s)",
          "compression": "Compression ratio", "peak_memory": "Peak memory (MiB)"}
# Which way is better, for colouring a change: each figure's declaration (results/metric_catalog.py).


@dataclasses.dataclass
class Line:
    key: tuple  # suite, backend label, test, accelerator model
    columns: np.ndarray  # its configs' grid columns
    values: dict  # metric -> (runs,) float array, nan: none in that run
    baseline: bool  # an eager line

    @property
    def suite(self) -> str:
        return self.key[0]

    @property
    def backend(self) -> str:
        return self.key[1]

    @property
    def test(self) -> str:
        return self.key[2]

    @property
    def machine(self) -> str:
        return self.key[3]

    @property
    def slug(self) -> str:
        from benchmarks.plumbing.safe_paths import safe_name

        return safe_name("-".join(part or "none" for part in self.key))


def speedups(g, columns: np.ndarray) -> np.ndarray:
    """(runs, len(columns)): each config's eager time / its own in the same run, nan where either is missing."""
    eager = np.array([-1 if g.configs[c].eager is None else g.configs[c].eager for c in columns], dtype=np.int64)
    out = np.full((len(g.runs), len(columns)), np.nan)
    have = eager >= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out[:, have] = g.median[:, eager[have]] / g.median[:, columns[have]]
    return out


def _paired(g, columns: np.ndarray, values: np.ndarray) -> np.ndarray:
    """values[:, eager of each column] (nan where a config has no eager baseline)."""
    eager = np.array([-1 if g.configs[c].eager is None else g.configs[c].eager for c in columns], dtype=np.int64)
    out = np.full((len(g.runs), len(columns)), np.nan)
    out[:, eager >= 0] = values[:, eager[eager >= 0]]
    return out


def _mean(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    kept = np.where(keep & np.isfinite(values), values, np.nan)
    count = np.sum(~np.isnan(kept), axis=1)
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, np.nansum(kept, axis=1) / np.maximum(count, 1), np.nan)


def line_numbers(g, key: tuple, columns: np.ndarray) -> Line:
    status, ran, unchecked = g.status[:, columns], g.passed[:, columns], g.unchecked[:, columns]
    counted = (status != grid_module.MISSING) & (status != grid_module.SKIPPED)
    total = counted.sum(axis=1)
    # aggregate's rule (dashboard.Line.checked): a run of the line that judged no config and has configs not checked
    # has no pass rate ("not checked"), and its figures are over the configs that ran; otherwise passing is judged.
    judged = counted & (status == grid_module.OK) & ~unchecked
    checked = judged.any(axis=1) | ~unchecked.any(axis=1)
    passed = np.where(checked[:, None], ran & ~unchecked, ran)
    with np.errstate(invalid="ignore"):
        pass_rate = np.where((total > 0) & checked, 100.0 * passed.sum(axis=1) / np.maximum(total, 1), np.nan)
    baseline = all(g.configs[c].base_backend == "eager" for c in columns)
    values = {"pass_rate": pass_rate, "peak_memory": _mean(g.peak[:, columns] / 2 ** 20, passed)}
    if baseline:
        for name in ("speedup", "compile_latency", "compression"):
            values[name] = np.full(len(g.runs), np.nan)
    else:
        speedup = speedups(g, columns)
        logs = np.where(passed & (speedup > 0), np.log(np.where(speedup > 0, speedup, 1.0)), np.nan)
        count = np.sum(~np.isnan(logs), axis=1)
        values["speedup"] = np.where(count > 0, np.exp(np.nansum(logs, axis=1) / np.maximum(count, 1)), np.nan)
        latency = g.first_run[:, columns] - _paired(g, columns, g.first_run)
        values["compile_latency"] = _mean(latency, passed & (latency != 0))
        peak = g.peak[:, columns]
        with np.errstate(invalid="ignore", divide="ignore"):
            compression = _paired(g, columns, g.peak) / np.where(peak > 0, peak, np.nan)
        values["compression"] = _mean(compression, passed & (compression != 0))
    return Line(key, columns, values, baseline)


def lines(g) -> list:
    """Every summary line, by suite, eager first, then backend label, test and machine."""
    by_key: dict = {}
    for config in g.configs:
        by_key.setdefault(config.line, []).append(config.column)
    out = [line_numbers(g, key, np.array(columns, dtype=np.int64)) for key, columns in by_key.items()]
    return sorted(out, key=lambda line: (line.suite, not line.baseline, line.backend, line.test, line.machine))
