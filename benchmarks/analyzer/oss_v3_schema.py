"""PyTorch's OSS benchmark database record ("v3"), declared: the columns of the ClickHouse table
`benchmark.oss_ci_benchmark_v3` and their types (docs/analyzer.md, "The OSS benchmark database"), a check of one
record against them, and the rule that makes an `extra_info` what the table takes (a map of string to string).

The check is strict where the table is: a field that is not a column would be dropped on upload (so it is a problem
here, not a silent loss), a null has no column type, an unsigned column takes no negative or fractional number, a
Float32 no NaN, infinity or value past its range, and every `extra_info` value is text."""

from __future__ import annotations

import json
import math

STRING, UINT32, UINT64, FLOAT32 = "String", "UInt32", "UInt64", "Float32"
EXTRA_INFO = ("Map", STRING)  # Map(String, String)
_FLOAT32_MAX = 3.4028234663852886e38
_UINT_MAX = {UINT32: 2**32 - 1, UINT64: 2**64 - 1}

RUNNER = {"name": STRING, "type": STRING, "cpu_info": STRING, "cpu_count": UINT32, "mem_info": STRING,
          "avail_mem_in_gb": UINT32, "gpu_info": STRING, "gpu_count": UINT32, "gpu_mem_info": STRING,
          "avail_gpu_mem_in_gb": UINT32, "extra_info": EXTRA_INFO}
COLUMNS = {
    "timestamp": UINT64, "schema_version": STRING, "name": STRING, "repo": STRING, "head_branch": STRING,
    "head_sha": STRING, "workflow_id": UINT64, "run_attempt": UINT32, "job_id": UINT64,
    "servicelab_experiment_id": UINT64, "servicelab_trial_id": UINT64,
    "runners": ("Array", RUNNER),
    "benchmark": {"name": STRING, "mode": STRING, "dtype": STRING, "extra_info": EXTRA_INFO},
    "model": {"name": STRING, "type": STRING, "backend": STRING, "origins": ("Array", STRING),
              "extra_info": EXTRA_INFO},
    "inputs": ("Map", {"dtype": STRING, "extra_info": EXTRA_INFO}),
    "dependencies": ("Map", {"repo": STRING, "branch": STRING, "sha": STRING, "version": STRING,
                             "extra_info": EXTRA_INFO}),
    "metric": {"name": STRING, "benchmark_values": ("Array", FLOAT32), "target_value": FLOAT32,
               "extra_info": EXTRA_INFO},
}
# What every reader groups by: a record without them is no benchmark result.
REQUIRED = (("benchmark", "name"), ("model", "name"), ("metric", "name"))


def text(value) -> str:
    """One `extra_info` value as the table takes it: text as it is, anything else as JSON text (a number, true/false,
    null, a list or an object)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, allow_nan=False, default=str)


def string_map(values: dict) -> dict:
    """An `extra_info`: every key and value text."""
    return {str(key): text(value) for key, value in values.items()}


def problems(record, spec=None, where: str = "") -> list:
    """Why `record` is not a row the table takes as it is: one line per field ([] when it is)."""
    if spec is None:
        found = _check(record, COLUMNS, "record")
        for section, key in REQUIRED:
            if isinstance(record, dict) and not (isinstance(record.get(section), dict) and record[section].get(key)):
                found.append(f"record: {section}.{key} is missing (every reader groups by it)")
        return found
    return _check(record, spec, where)


def _check(value, spec, where: str) -> list:
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return [f"{where}: {_kind(value)}, not an object"]
        out = [f"{where}.{key}: not a column (the upload drops it)" for key in value if key not in spec]
        for key, inner in value.items():
            if key in spec:
                out += _check(inner, spec[key], f"{where}.{key}")
        return out
    if isinstance(spec, tuple):
        container, inner = spec
        if container == "Array":
            if not isinstance(value, list):
                return [f"{where}: {_kind(value)}, not a list"]
            return [p for i, item in enumerate(value) for p in _check(item, inner, f"{where}[{i}]")]
        if not isinstance(value, dict):
            return [f"{where}: {_kind(value)}, not a map"]
        return [p for key, item in value.items() for p in
                ([f"{where}: key {key!r} is not text"] if not isinstance(key, str) else [])
                + _check(item, inner, f"{where}[{key!r}]")]
    return _scalar(value, spec, where)


def _scalar(value, column: str, where: str) -> list:
    if column == STRING:
        return [] if isinstance(value, str) else [f"{where}: {_kind(value)}, not text ({column})"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return [f"{where}: {_kind(value)}, not a number ({column})"]
    if column == FLOAT32:
        ok = math.isfinite(value) and abs(value) <= _FLOAT32_MAX
        return [] if ok else [f"{where}: {value!r} is no finite Float32"]
    ok = isinstance(value, int) and 0 <= value <= _UINT_MAX[column]
    return [] if ok else [f"{where}: {value!r} is not an unsigned integer ({column})"]


def _kind(value) -> str:
    return "null" if value is None else type(value).__name__
