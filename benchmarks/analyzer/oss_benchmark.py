"""result_analyzer.py --format=oss-benchmark: records for PyTorch's OSS benchmark database (the table
`benchmark.oss_ci_benchmark_v3` that pytorch/test-infra's upload action loads, and the HUD reads), written so that
the table takes them as they are (analyzer/oss_v3_schema.py declares its columns and checks every record).

One record per config and metric a dashboard plots, each as results/measurement.py defines it: `per_iter_time_ms`
(the steady-state samples), `compile_time_s` (first run beyond a steady one), `peak_rss_mb`, `tflops`
(microbenchmarks) and, with --baseline-backend BACKEND, `speedup` over that backend's record of the same model,
test, batch size, accelerator and run. `runners[0].name` is the device the HUD groups by (cuda, rocm, xpu, tpu, cpu),
`.type` the device's model; `model.backend` the backend; `dependencies` name -> {repo, branch, sha, version};
`benchmark.extra_info` the experiment config, flat and whole (`experiment`, JSON text: what the reader of
results/oss_v3_records.py rebuilds the config from). Every `extra_info` value is text. Failed and skipped records have
no numbers to plot: they are left out, and counted on stderr. The TorchInductor dashboard's names instead:
analyzer/inductor_dashboard.py.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Optional

from benchmarks.analyzer.oss_v3_schema import string_map
from benchmarks.results import records
from benchmarks.results.oss_v3_records import device_word, dtype_word as dtype
from benchmarks.results.measurement import EVERY_SAMPLE, Measurement

BENCHMARK_NAME = "ptbench-matrix"
TEST_MODES = {"eval": "inference", "train": "training"}
# Where each dependency lives (the database's `repo`).
DEPENDENCY_REPOS = (("pytorch", "torch", "pytorch/pytorch"), ("torch_xla", "torch_xla", "pytorch/xla"),
                    ("torchvision", "torchvision", "pytorch/vision"))


def _finite(values) -> list:
    return [] if values is None else [float(v) for v in values if math.isfinite(v)]


def environment_of(record: dict) -> dict:
    found = record.get("environment")
    return found if isinstance(found, dict) else {}


def device(record: dict) -> str:
    """The device word the HUD groups by (results/oss_v3_records.device_word)."""
    environment = environment_of(record)
    return device_word(Measurement(record).accelerator, str(environment.get("torch") or ""),
                       str(environment.get("platform") or ""))


def runner(record: dict) -> dict:
    environment = environment_of(record)
    gpus = [str(name) for name in environment.get("gpu_names") or []]
    out = {"name": device(record), "type": Measurement(record).accelerator_model,
           "cpu_info": str(environment.get("cpu_model") or ""), "gpu_info": ", ".join(gpus), "gpu_count": len(gpus),
           "extra_info": string_map({k: environment[k] for k in ("hostname", "platform", "usable_cores", "executor")
                                     if environment.get(k) is not None})}
    cores = environment.get("cpu_count")
    if isinstance(cores, int) and not isinstance(cores, bool) and cores >= 0:
        out["cpu_count"] = cores
    return out


def dependencies(record: dict) -> dict:
    """name -> {repo, branch, sha, version, extra_info}: the versions the record ran, and our own commit."""
    environment = environment_of(record)
    out = {}
    for package, key, repo in DEPENDENCY_REPOS:
        if environment.get(key):
            out[package] = {"repo": repo, "branch": "", "sha": "", "version": str(environment[key]), "extra_info": {}}
    if environment.get("git_commit"):
        out[BENCHMARK_NAME] = {"repo": BENCHMARK_NAME, "branch": "", "sha": str(environment["git_commit"]),
                               "version": "", "extra_info": {}}
    return out


def run_fields(record: dict) -> dict:
    """The run's columns the record knows: its timestamp (whole seconds) and the schema version."""
    stamp = Measurement(record).timestamp
    return {"schema_version": "v3", **({"timestamp": int(stamp)} if stamp is not None and stamp >= 0 else {})}


def _config_key(record: dict) -> tuple:
    experiment = record.get("experiment") or {}
    return (json.dumps(record.get("model"), sort_keys=True), experiment.get("test"), experiment.get("batch_size"),
            experiment.get("accelerator_model"), record.get("timestamp"))


def _metrics(m: Measurement) -> list:
    """(metric name, values, unit) a dashboard plots, for one ok record."""
    out = []
    per_iter = _finite(m.per_iter_time())
    if per_iter:
        out.append(("per_iter_time_ms", [v * 1e3 for v in per_iter], "ms"))
    compile_seconds = m.compile_time()
    if compile_seconds is not None and math.isfinite(compile_seconds):
        out.append(("compile_time_s", [float(compile_seconds)], "s"))
    peak = m.peak_memory()
    if peak is not None:
        out.append(("peak_rss_mb", [peak / 2**20], "MiB"))
    tflops = _finite(m.samples("tflops", EVERY_SAMPLE))
    if tflops:
        out.append(("tflops", tflops, "TFLOP/s"))
    return out


def ok_records(all_records: list) -> tuple:
    """(the ok records that name a model and a config, {status: count} of the others)."""
    ok, left_out = [], {}
    for record in all_records:
        status = records.record_status(record)
        if status != records.RecordStatus.OK:
            left_out[status] = left_out.get(status, 0) + 1
        elif isinstance(record.get("model"), dict) and isinstance(record.get("experiment"), dict):
            ok.append(record)
    return ok, left_out


def base_row(record: dict, benchmark_name: str, extra: dict) -> dict:
    """Every column of a record but its metric."""
    m, experiment, model = Measurement(record), record["experiment"], record["model"]
    return {
        **run_fields(record),
        "benchmark": {"name": benchmark_name, "mode": TEST_MODES.get(m.test, str(m.test)), "dtype": dtype(experiment),
                      "extra_info": string_map(dict(extra, device=device(record), arch=m.accelerator_model))},
        "model": {"name": str(model.get("model_name")),
                  "type": "microbenchmark" if model.get("suite_name") == "microbench" else "model",
                  "backend": m.base_backend, "origins": [str(model.get("suite_name") or "unknown")],
                  "extra_info": string_map({"model": model})},
        "runners": [runner(record)],
        "dependencies": dependencies(record),
    }


def rows(all_records: list, baseline: Optional[str] = None) -> tuple:
    """(the database records, {status: count} of the records left out)."""
    ok, left_out = ok_records(all_records)
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
        extra = dict(experiment, backend=m.backend, suite=model.get("suite_name"), status=records.RecordStatus.OK,
                     timestamp=record.get("timestamp"), round=record.get("round", 0), repeat=record.get("repeat"),
                     iterations_per_run=record.get("iterations_per_run"),
                     verification_code=record.get("verification_code") if record.get("verify") else None,
                     accuracy=m.accuracy, experiment=experiment)
        base = base_row(record, f"{BENCHMARK_NAME} {model.get('suite_name') or ''}".strip(), extra)
        metrics = _metrics(m)
        if baseline and m.backend != baseline:
            base_values = baselines.get(_config_key(record))
            per_iter = {name: values for name, values, _ in metrics}.get("per_iter_time_ms")
            if base_values and per_iter:
                speedup = statistics.median(base_values) * 1e3 / statistics.median(per_iter)
                metrics.append(("speedup", [speedup], "x"))
        for name, values, unit in metrics:
            out.append(dict(base, metric={"name": name, "benchmark_values": values, "target_value": 0.0,
                                          "extra_info": {"unit": unit}}))
    return out, left_out


def read_all(paths: list) -> list:
    """Every record of the files (bad lines reported and skipped; an unreadable file: records.InputError)."""
    return records.read_results_files(paths)
