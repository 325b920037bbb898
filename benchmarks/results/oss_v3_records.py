"""PyTorch's OSS benchmark database ("v3") records read back as our records, so that compare.py takes a v3 file as
one side and history.py as a run to ingest (`iter_records`, their reader: a v3 file's configs, or a results file's
lines as records.iter_records reads them).

Two kinds of v3 file: ours (result_analyzer.py --format=oss-benchmark, with or without --hud-dashboard=inductor),
whose `benchmark.extra_info.experiment` and `model.extra_info.model` give back the config exactly; and rows
exported from the HUD (the dynamo harness's records), whose config is what the row says: model, backend, mode,
dtype, device, suite and batch size. Such a record is marked (environment `source`, HUD_SOURCE) and carries its
`match_key` (model, backend, mode, dtype, device), by which compare.py and history.py put it beside the configs of
ours that agree on all five (results/oss_v3_match.py places them), and list what matched none.

A v3 record holds one metric; the records of one config (and run) are gathered into one of ours: per_iter_time_ms
or abs_latency (ms) -> per_iter_time (s), compile_time_s or compilation_latency -> a warm-up run that long beyond a
steady one, peak_rss_mb / dynamo_peak_mem -> the peak memory, tflops, speedup, mfu, memory_bandwidth kept by name,
accuracy's text -> `accuracy`. The values are steady-state samples already (`warmup` 0: none is skipped again).
No torch, no analyzer: a file is data (JSON), never code.
"""

from __future__ import annotations

import gzip
import io
import json
import math
from typing import Iterator, Optional

from benchmarks.results import records
from benchmarks.results import accuracy_status
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.measurement import DEVICE_PEAK_MEMORY, PER_ITER_TIME, TOTAL_TIME, WARMUP_TIME
from benchmarks.results.records import RecordStatus

# Where a record read from a v3 file came from (the record's environment `source`).
OURS_SOURCE, HUD_SOURCE = "oss-benchmark-v3", "oss-benchmark-v3 (HUD)"
MODES = {"inference": "eval", "training": "train"}
# Our precision -> the database's dtype word (the dynamo harness: bfloat16 inference, amp training), and back.
PRECISION_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "amp": "amp", "amp_bf16": "amp",
                    "amp_fp16": "amp"}
DTYPE_PRECISIONS = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "amp": "amp"}
# The HUD's device words -> our accelerator.
ACCELERATORS = {"rocm": "cuda", "arm64-cpu": "cpu"}
SUITES = {"timm_models": "timm"}
MB, GB = 2.0**20, 1e9
_ACCURACY = "\0accuracy"  # where a config's accuracy word waits among its metrics until the record is settled
_MAX_BYTES = 1 << 30  # a v3 file is read whole: past this, refused (a results file is streamed instead)


def device_word(accelerator: str, torch_version: str = "", platform: str = "") -> str:
    """The device word the HUD groups by: cuda (rocm for a ROCm build of torch), xpu, tpu, cpu (arm64-cpu on ARM)."""
    if accelerator == "cuda" and "rocm" in torch_version:
        return "rocm"
    if accelerator == "cpu" and any(arch in platform for arch in ("aarch64", "arm64")):
        return "arm64-cpu"
    return accelerator or "unknown"


def dtype_word(experiment: dict) -> str:
    """The database's dtype of a config: a microbenchmark's own, else the precision's word (float32 without one)."""
    if experiment.get("dtype"):
        return str(experiment["dtype"])
    precision = str(experiment.get("precision") or "fp32")
    return PRECISION_DTYPES.get(precision, precision)


# ---------------------------------------------------------------- reading a file


def looks_like_v3(first_line: bytes) -> bool:
    """Whether a file whose first line is this is a v3 file: gzip, a JSON list, or a JSON object that has the
    v3 record's `benchmark` and `metric` and not our record's `experiment`."""
    head = first_line.lstrip()
    if head[:2] == b"\x1f\x8b" or head[:1] == b"[":
        return True
    if not head.startswith(b"{"):
        return False
    try:
        found = json.loads(head)
    except ValueError:
        return False
    return isinstance(found, dict) and "benchmark" in found and "metric" in found and "experiment" not in found


def decode(data: bytes) -> list:
    """The rows of a v3 file in any layout (JSON list, JSON lines, gzip'd): ValueError with one line for none."""
    if len(data) > _MAX_BYTES:
        raise ValueError(f"a v3 file over {_MAX_BYTES >> 20} MiB")
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.GzipFile(fileobj=io.BytesIO(data)).read(_MAX_BYTES + 1)
        except (OSError, EOFError) as exc:
            raise ValueError(f"not a readable gzip file ({exc})") from None
        if len(data) > _MAX_BYTES:
            raise ValueError(f"more than {_MAX_BYTES >> 20} MiB once unpacked")
    text = data.decode("utf-8").lstrip("\ufeff")
    if text.lstrip().startswith("["):
        found = json.loads(text)
        if not isinstance(found, list):
            raise ValueError("not a JSON list")
        return found
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def iter_records(path: str, problems: Optional[list] = None) -> Iterator[tuple]:
    """records.iter_records, and a v3 file's configs as our records (each config at its first row's number):
    the reader compare.py and history.py read results files with (records.read_results_files' `reader`)."""
    found = None
    with records.open_results(path) as handle:
        if looks_like_v3(handle.readline()):
            handle.seek(0)
            found = numbered_records(handle.read())
    if found is None:
        yield from records.iter_records(path, problems)
        return
    if problems is not None:
        problems.extend(records.ReadProblem(path, number, why) for number, why in found[1])
    yield from found[0]


def numbered_records(data: bytes) -> Optional[tuple]:
    """([(row number, record)] of every config a v3 file holds, [(row number, why)] of the rows that are no v3
    record), or None when `data` is no v3 file after all (JSON lines that start with a list, say: read as lines)."""
    try:
        rows = decode(data)
    except (ValueError, RecursionError) as exc:
        if data[:2] != b"\x1f\x8b":
            return None
        return [], [(1, f"not a v3 file ({str(exc).splitlines()[0][:200]})")]
    if not any(_row_problem(row) is None for row in rows):
        return None
    groups: dict = {}
    problems = []
    for number, row in enumerate(rows, start=1):
        why = _row_problem(row)
        if why:
            problems.append((number, f"v3 record {number}: {why}"))
            continue
        groups.setdefault(_group_key(row), (number, []))[1].append(row)
    return [(number, _record(found)) for number, found in groups.values()], problems


def _row_problem(row) -> Optional[str]:
    if not isinstance(row, dict):
        return "not a JSON object"
    for section in ("benchmark", "model", "metric"):
        if not isinstance(row.get(section), dict) or not isinstance(row[section].get("name"), str):
            return f"no {section}.name"
    runners = row.get("runners")
    if runners is not None and not (isinstance(runners, list) and all(isinstance(r, dict) for r in runners)):
        return "runners is not a list of objects"
    for section in ("benchmark", "model", "metric"):
        if not isinstance(row[section].get("extra_info", {}), dict):
            return f"{section}.extra_info is not an object"
    return None


def _info(row: dict, section: str) -> dict:
    return row[section].get("extra_info") or {}


def _json(text, default=None):
    if not isinstance(text, str):
        return text if text is not None else default
    try:
        return json.loads(text)
    except ValueError:
        return default


def _device(row: dict) -> str:
    runners = row.get("runners") or [{}]
    return str(runners[0].get("name") or _info(row, "benchmark").get("device") or "unknown")


def _arch(row: dict) -> str:
    runners = row.get("runners") or [{}]
    info = _info(row, "benchmark")
    return str(runners[0].get("type") or info.get("arch") or runners[0].get("cpu_info") or "unknown")


def _hud_key(row: dict) -> tuple:
    """(model, backend, mode, dtype, device) of a HUD row."""
    backend = row["model"].get("backend") or _info(row, "benchmark").get("backend") or "unknown"
    return (row["model"]["name"], str(backend), str(row["benchmark"].get("mode")), str(row["benchmark"].get("dtype")),
            _device(row))


def _group_key(row: dict) -> tuple:
    info = _info(row, "benchmark")
    if "experiment" in info:  # ours: the exact config and run
        return ("ours", row["benchmark"]["name"], _info(row, "model").get("model"), info["experiment"],
                info.get("timestamp"), info.get("round"))
    return ("hud", row["benchmark"]["name"], *_hud_key(row), str((row["model"].get("origins") or [""])[0]),
            info.get("batch_size"), info.get("output"), row.get("timestamp"), _arch(row))


def _record(rows: list) -> dict:
    first = rows[0]
    info = _info(first, "benchmark")
    ours = "experiment" in info
    model, experiment = (_ours_config(first) if ours else _hud_config(first))
    timestamp = _json(info.get("timestamp")) if ours else first.get("timestamp")
    record = {"model": model, "experiment": experiment, "repeat": 1, "iterations_per_run": 1, "metrics": {},
              "timestamp": float(timestamp) if _finite(timestamp) else None, "status": RecordStatus.OK, "warmup": 0,
              "environment": {"source": OURS_SOURCE if ours else HUD_SOURCE, "hostname": _runner_host(first),
                              **_versions(first), **({} if ours else {"match_key": list(_hud_key(first))})}}
    if ours and _finite(_json(info.get("round"))):
        record["round"] = int(_json(info.get("round")))
    if ours and _finite(_json(info.get("iterations_per_run"))):
        record["iterations_per_run"] = int(_json(info.get("iterations_per_run")))
    if ours and isinstance(info.get("accuracy"), str):
        record["metrics"][_ACCURACY] = info["accuracy"]
    for row in rows:
        _take_metric(record, row["metric"])
    _settle(record)
    return record


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _runner_host(row: dict) -> str:
    runners = row.get("runners") or [{}]
    return str((runners[0].get("extra_info") or {}).get("hostname") or "")


def _versions(row: dict) -> dict:
    """The commit and torch the row ran: the run's head_sha (the HUD's) or our dependency's, pytorch's version."""
    found = row.get("dependencies") if isinstance(row.get("dependencies"), dict) else {}
    mine = found.get("ptbench-matrix") if isinstance(found.get("ptbench-matrix"), dict) else {}
    torch = found.get("pytorch") if isinstance(found.get("pytorch"), dict) else {}
    out = {"git_commit": row.get("head_sha") or mine.get("sha"), "torch": torch.get("version")}
    return {key: value for key, value in out.items() if isinstance(value, str) and value}


def _ours_config(row: dict) -> tuple:
    experiment = _json(_info(row, "benchmark").get("experiment"), {})
    model = _json(_info(row, "model").get("model"), None)
    if not isinstance(model, dict):
        model = {"suite_name": str((row["model"].get("origins") or ["unknown"])[0]), "model_name": row["model"]["name"]}
    return model, experiment if isinstance(experiment, dict) else {}


def _hud_config(row: dict) -> tuple:
    """Our model and experiment config of a HUD row, from what the row says."""
    name, backend, mode, dtype, device = _hud_key(row)
    suite = str((row["model"].get("origins") or ["unknown"])[0])
    batch = _json(_info(row, "benchmark").get("batch_size"))
    experiment = {"accelerator": ACCELERATORS.get(device, device), "accelerator_model": _arch(row), "xla": None,
                  "xla_flags": None, "dynamo": None if backend == "eager" else backend, "torch_xla2": None,
                  "test": MODES.get(mode, mode), "batch_size": batch if isinstance(batch, int) and batch > 0 else None,
                  "enable_functionalization": False}
    if DTYPE_PRECISIONS.get(dtype, "fp32") != "fp32":
        experiment["precision"] = DTYPE_PRECISIONS[dtype]
    return {"suite_name": SUITES.get(suite, suite), "model_name": name}, experiment


def _values(metric: dict) -> list:
    values = metric.get("benchmark_values")
    return [float(v) for v in values if _finite(v)] if isinstance(values, list) else []


def _take_metric(record: dict, metric: dict) -> None:
    name, values, metrics = metric["name"], _values(metric), record["metrics"]
    if name == "accuracy":
        text = (metric.get("extra_info") or {}).get("benchmark_values")
        metrics[_ACCURACY] = str(text) if isinstance(text, str) else None
    elif not values:
        return
    elif name in ("per_iter_time_ms", "abs_latency"):
        metrics[PER_ITER_TIME] = [v / 1e3 for v in values]
    elif name in ("compile_time_s", "compilation_latency"):
        metrics["_compile"] = values[0]
    elif name in ("peak_rss_mb", "dynamo_peak_mem"):
        metrics[DEVICE_PEAK_MEMORY] = [max(values) * (MB if name == "peak_rss_mb" else GB)]
    else:
        metrics[name] = values


def _settle(record: dict) -> None:
    """The record's times, warm-up and status from the metrics gathered."""
    metrics = record["metrics"]
    compile_seconds = metrics.pop("_compile", None)
    per_iter = metrics.get(PER_ITER_TIME)
    if per_iter:
        record["repeat"] = len(per_iter)
        total = metrics[TOTAL_TIME] = [v * record["iterations_per_run"] for v in per_iter]
        if compile_seconds is not None:
            ordered = sorted(total)
            middle = len(ordered) // 2
            median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
            metrics[WARMUP_TIME] = [compile_seconds + median]
            record["warmup"] = 1
    accuracy = metrics.pop(_ACCURACY, None)
    failed = {AccuracyStatus.OOM: RecordStatus.OOM, AccuracyStatus.TIMEOUT: RecordStatus.TIMEOUT}.get(accuracy or "")
    if failed or (accuracy and "fail" in accuracy and not per_iter):
        record["status"] = failed or RecordStatus.ERROR
        record["error"] = {"type": "v3", "message": f"accuracy: {accuracy}", "phase": "run", "log": None}
        metrics["error"] = f"v3: accuracy {accuracy}"
    accuracy_status.settle(record, accuracy)  # the row's word where it is one, else the rule's
