"""result_analyzer.py --format=oss-benchmark --hud-dashboard=inductor: records in the TorchInductor dashboard's names
and grouping (what the HUD's compiler pages read from `benchmark.oss_ci_benchmark_v3`).

`benchmark.name` "TorchInductor"; the suite in `model.origins[0]` (torchbench, huggingface, timm_models); per compiled
config (every backend but eager, which is its baseline) the metrics `accuracy` (its text result, the harness's word,
in `metric.extra_info`), `speedup` (eager's median time / the config's, eager's record of the same model, test, batch
size, dtype, device and run), `abs_latency` (ms), `compilation_latency` (s: the first run beyond a steady one),
`compression_ratio` (eager's peak memory / the config's), `dynamo_peak_mem` and `eager_peak_mem` (GB), and from our
roofline (docs/roofline.md) `mfu` (achieved / peak FLOP/s) and `memory_bandwidth` (achieved GB/s).
`benchmark.extra_info.output` is the harness's CSV name, from which the dashboard reads the compiler config
(`csv_name`). A failed config still has its accuracy record (fail_to_run, oom, timeout, ...).
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Optional

from benchmarks.analyzer import oss_benchmark
from benchmarks.results import records
from benchmarks.results.measurement import Measurement
from benchmarks.results.oss_v3_records import dtype_word

DASHBOARD_NAME = "TorchInductor"
# Our suite names -> the dashboard's.
SUITES = {"timm": "timm_models"}
GB = 1e9


def suite(record: dict) -> str:
    name = str(Measurement(record).suite or "unknown")
    return SUITES.get(name, name)


def compiler_config(record: dict) -> str:
    """The harness's name of a compiler config (inductor_with_cudagraphs, inductor_no_cudagraphs, inductor_dynamic,
    inductor_max_autotune, ...): the backend, then what sets it apart."""
    m = Measurement(record)
    name = m.base_backend.replace("+", "_")
    if m.accelerator == "cuda" and oss_benchmark.device(record) != "cpu":
        name += "_with_cudagraphs" if m.cudagraphs else "_no_cudagraphs"
    axes = m.axes
    if axes.get("dynamic") not in (None, False, "static"):
        name += "_dynamic"
    if axes.get("compile_mode") == "max-autotune" or axes.get("compile_mode") == "max-autotune-no-cudagraphs":
        name += "_max_autotune"
    return name


def csv_name(record: dict, kind: str = "performance") -> str:
    """`<compiler config>_<suite>_<dtype>_<mode>_<device>_<performance|accuracy>.csv`, as the dashboard parses it."""
    m = Measurement(record)
    mode = oss_benchmark.TEST_MODES.get(m.test, str(m.test))
    return (f"{compiler_config(record)}_{suite(record)}_{dtype_word(m.experiment)}_{mode}_"
            f"{oss_benchmark.device(record)}_{kind}.csv")


def _pair_key(record: dict) -> tuple:
    m = Measurement(record)
    return (json.dumps(m.model, sort_keys=True), m.test, m.batch_size, oss_benchmark.device(record),
            m.accelerator_model, dtype_word(m.experiment), m.timestamp)


def _median_seconds(m: Measurement) -> Optional[float]:
    values = m.per_iter_time()
    values = [] if values is None else [float(v) for v in values if math.isfinite(v)]
    return statistics.median(values) if values else None


def _roofline(record: dict) -> list:
    roofline = record.get("roofline") if isinstance(record.get("roofline"), dict) else {}
    achieved, peak = roofline.get("achieved_flops_per_second"), roofline.get("peak_flops_per_second")
    out = []
    if _positive(achieved) and _positive(peak):
        out.append(("mfu", achieved / peak, "fraction"))
    moved = roofline.get("achieved_bytes_per_second")
    if _positive(moved):
        out.append(("memory_bandwidth", moved / GB, "GB/s"))
    return out


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def metrics(record: dict, eager: Optional[dict]) -> list:
    """(name, value, unit) of one compiled config's numbers (not its accuracy)."""
    m = Measurement(record)
    if not m.ok:
        return []
    seconds = _median_seconds(m)
    base = Measurement(eager) if eager is not None else None
    base_seconds = _median_seconds(base) if base is not None and base.ok else None
    out = []
    if seconds:
        out.append(("abs_latency", seconds * 1e3, "ms"))
        if base_seconds:
            out.append(("speedup", base_seconds / seconds, "x"))
    compile_seconds = m.compile_time()
    if compile_seconds is not None and math.isfinite(compile_seconds):
        out.append(("compilation_latency", float(compile_seconds), "s"))
    peak = m.peak_memory()
    base_peak = base.peak_memory() if base is not None and base.ok else None
    if peak:
        out.append(("dynamo_peak_mem", peak / GB, "GB"))
    if base_peak:
        out.append(("eager_peak_mem", base_peak / GB, "GB"))
    if peak and base_peak:
        out.append(("compression_ratio", base_peak / peak, "x"))
    return out + _roofline(record)


def rows(all_records: list) -> tuple:
    """(the dashboard's records, {status: count} of the records left out: eager's (the baseline) and skips)."""
    placed = {id(r): r for r in all_records if Measurement(r).placeable and Measurement(r).model_name}
    eager = {}
    for record in placed.values():
        if Measurement(record).base_backend == "eager" and Measurement(record).ok:
            eager.setdefault(_pair_key(record), record)
    out, left_out = [], {}
    for record in all_records:
        m = Measurement(record)
        if id(record) not in placed or m.base_backend == "eager" or m.status == records.RecordStatus.SKIP:
            why = "eager (the baseline)" if id(record) in placed and m.base_backend == "eager" else m.status
            left_out[why] = left_out.get(why, 0) + 1
            continue
        out.extend(config_rows(record, eager.get(_pair_key(record))))
    return out, left_out


def config_rows(record: dict, eager: Optional[dict]) -> list:
    m = Measurement(record)
    extra = {"device": oss_benchmark.device(record), "batch_size": m.batch_size, "output": csv_name(record),
             "compiler": compiler_config(record), "backend": m.backend, "status": m.status,
             "timestamp": record.get("timestamp"), "experiment": m.experiment}
    base = oss_benchmark.base_row(record, DASHBOARD_NAME, extra)
    base["model"]["origins"] = [suite(record)]
    base["model"]["type"] = "OSS model"
    out = [dict(base, metric={"name": "accuracy", "extra_info": {"benchmark_values": m.accuracy}})]
    for name, value, unit in metrics(record, eager):
        out.append(dict(base, metric={"name": name, "benchmark_values": [value], "target_value": 0.0,
                                      "extra_info": {"unit": unit}}))
    return out
