"""result_analyzer.py --output-format=oss-benchmark: rows for the PyTorch OSS benchmark database, the JSON that
TorchAO's and PyTorch's CI upload to their dashboards.

One row per record and metric a dashboard plots, each as results/measurement.py defines it: `per_iter_time_ms`
(the steady-state samples), `compile_time_s` (first run beyond a steady one), `peak_rss_mb`, `tflops` (microbenchmarks) and, with
--baseline BACKEND, `speedup` over that backend's record of the same model, test, batch size, accelerator
and run. Each row: {"benchmark": {"name", "mode", "dtype", "extra_info"}, "model": {"name", "type",
"origins"}, "metric": {"name", "benchmark_values", "target_value"}, "runners": [...], "dependencies": {...}};
`extra_info` carries the experiment config, `runners` the machine, `dependencies` the versions and commit.
Failed and skipped records have no numbers to plot: they are left out, and counted on stderr.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Optional

from benchmarks.results import records
from benchmarks.results.measurement import EVERY_SAMPLE, Measurement

BENCHMARK_NAME = "ptbench-matrix"
TEST_MODES = {"eval": "inference", "train": "training"}


def _finite(values) -> list:
    return [] if values is None else [float(v) for v in values if math.isfinite(v)]


def _runner(environment: dict, experiment: dict) -> dict:
    gpus = list(environment.get("gpu_names") or [])
    return {"name": environment.get("hostname") or "unknown", "type": experiment.get("accelerator_model") or
            experiment.get("accelerator") or "unknown", "cpu_info": environment.get("cpu_model"),
            "cpu_count": environment.get("cpu_count"), "gpu_info": ", ".join(gpus), "gpu_count": len(gpus),
            "extra_info": {"platform": environment.get("platform"), "usable_cores": environment.get("usable_cores"),
                           "executor": environment.get("executor")}}


def _dependencies(environment: dict) -> dict:
    out = {}
    for package, key in (("pytorch", "torch"), ("torch_xla", "torch_xla"), ("torchvision", "torchvision")):
        if environment.get(key):
            out[package] = {"version": environment.get(key)}
    out[BENCHMARK_NAME] = {"sha": environment.get("git_commit")}
    return out


def _config_key(record: dict) -> tuple:
    experiment = record.get("experiment") or {}
    return (json.dumps(record.get("model"), sort_keys=True), experiment.get("test"), experiment.get("batch_size"),
            experiment.get("accelerator_model"), record.get("timestamp"))


def _metrics(m: Measurement) -> list:
    """(metric name, values) a dashboard plots, for one ok record."""
    out = []
    per_iter = _finite(m.per_iter_time())
    if per_iter:
        out.append(("per_iter_time_ms", [v * 1e3 for v in per_iter]))
    compile_seconds = m.compile_time()
    if compile_seconds is not None and math.isfinite(compile_seconds):
        out.append(("compile_time_s", [float(compile_seconds)]))
    peak = m.peak_memory()
    if peak is not None:
        out.append(("peak_rss_mb", [peak / 2**20]))
    tflops = _finite(m.samples("tflops", EVERY_SAMPLE))
    if tflops:
        out.append(("tflops", tflops))
    return out


def rows(all_records: list, baseline: Optional[str] = None) -> tuple:
    """(the database rows, {status: count} of the records left out)."""
    ok = [r for r in all_records if records.record_status(r) == records.RecordStatus.OK
          and isinstance(r.get("model"), dict) and isinstance(r.get("experiment"), dict)]
    left_out: dict = {}
    for record in all_records:
        status = records.record_status(record)
        if status != records.RecordStatus.OK:
            left_out[status] = left_out.get(status, 0) + 1
    baselines = {}
    if baseline:
        for record in ok:
            m = Measurement(record)
            if m.backend == baseline:
                per_iter = _finite(m.per_iter_time())
                if per_iter:
                    baselines.setdefault(_config_key(record), []).extend(per_iter)
    out = []
    for record in ok:
        m = Measurement(record)
        experiment, model = record["experiment"], record["model"]
        environment = record.get("environment") if isinstance(record.get("environment"), dict) else {}
        backend = m.backend
        extra = dict(experiment, backend=backend, suite=model.get("suite_name"), status=records.RecordStatus.OK,
                     timestamp=record.get("timestamp"), round=record.get("round", 0), repeat=record.get("repeat"),
                     iterations_per_run=record.get("iterations_per_run"),
                     verification_code=record.get("verification_code") if record.get("verify") else None)
        base = {
            "benchmark": {"name": f"{BENCHMARK_NAME} {model.get('suite_name') or ''}".strip(),
                          "mode": TEST_MODES.get(experiment.get("test"), str(experiment.get("test"))),
                          "dtype": str(experiment.get("dtype") or "float32"), "extra_info": extra},
            "model": {"name": str(model.get("model_name")),
                      "type": "microbenchmark" if model.get("suite_name") == "microbench" else "model",
                      "origins": [str(model.get("suite_name") or "unknown")]},
            "runners": [_runner(environment, experiment)],
            "dependencies": _dependencies(environment),
        }
        metrics = _metrics(m)
        if baseline and backend != baseline:
            base_values = baselines.get(_config_key(record))
            per_iter = dict(metrics).get("per_iter_time_ms")
            if base_values and per_iter:
                metrics.append(("speedup", [statistics.median(base_values) * 1e3 / statistics.median(per_iter)]))
        for name, values in metrics:
            out.append(dict(base, metric={"name": name, "benchmark_values": values, "target_value": 0.0}))
    return out, left_out


def read_all(paths: list) -> list:
    """Every record of the files (bad lines reported and skipped; an unreadable file: records.InputError)."""
    return records.read_results_files(paths)
