"""result_analyzer.py's columns: the names of a report's columns and their documented order (docs/analyzer.md,
"The columns")."""

from __future__ import annotations

import re

from benchmarks.results import accuracy_status, dynamo_stats, stats

# Upstream's result_analyzer.py columns: same names, same order, so its readers keep working.
UPSTREAM_COLUMNS = (
    "timestamp", "suite_name", "model_name", "accelerator", "accelerator_model", "xla", "xla_flags", "dynamo",
    "torch_xla2", "test", "batch_size", "repeat", "iterations_per_run", "error_message", "median_total_time",
    "median_per_iter_time", "xla_median_trace_per_iter_time", "xla_compile_time", "dynamo_compile_time",
    "outputs_file",
)
OUR_COLUMNS = ("status", "error_type", "error_phase", "verification_code", "verification_mean_rel_error", "warmup")
# --verify's other figures (benchmarks/child/accuracy/verify.py), after ours: mean_rel_error alone does not say how far
# off.
VERIFICATION_COLUMNS = ("verification_max_abs_error", "verification_cosine_similarity", "verification_tolerance",
                        "verification_message")
# The harness's accuracy status (every record since it existed: docs/accuracy.md) and --verify's
# figures behind it, after the verification columns (so the older columns keep their places); the record's own
# values, empty for a record written before them.
ACCURACY_COLUMNS = accuracy_status.KEYS
# The record's top-level values a row shows as they are, each in the column of its own name.
RECORD_VALUE_COLUMNS = VERIFICATION_COLUMNS + ACCURACY_COLUMNS
FIXED_COLUMNS = UPSTREAM_COLUMNS + OUR_COLUMNS + RECORD_VALUE_COLUMNS
# The record's --rounds index: a column only where some record of the range has one, right after the fixed ones.
ROUND_COLUMN = "round"
# A config's keys beyond the eight above (enable_functionalization, a suite's own matrix axes such as
# microbench's dtype) become experiment_<key> columns after the fixed ones: rows of two configs always
# differ somewhere. Upstream's obsolete experiment_name (always "run_all") does not.
EXPERIMENT_PREFIX = "experiment_"
# The config's backend as aggregate.py and compare.py name it (upstream's: eager, inductor, openxla+dynamo,
# openxla+lazytensor, or the dynamo backend's name), before the experiment_<key> columns: one column to group by.
BACKEND_COLUMN = "backend"
# The graph-break reasons (one cell) and dynamo's compile seconds by phase (a column each: numbers a spreadsheet
# sorts and sums) of the record's `dynamo_stats` (results/dynamo_stats.py): columns where some record of the range
# has dynamo_stats, after the experiment_<key> ones.
DYNAMO_COLUMNS = dynamo_stats.COLUMNS
_DYNAMO_INDEX = {name: i for i, name in enumerate(DYNAMO_COLUMNS)}
# The record's `environment` keys, and their columns (last in a row).
ENV_KEYS = ("python", "torch", "torch_xla", "torchvision", "numpy", "git_commit", "hostname")
ENV_COLUMNS = ("python_version", "torch_version", "torch_xla_version", "torchvision_version", "numpy_version",
               "git_commit", "hostname")
# Metrics in the order of their statistics columns; metrics not named here follow, sorted by name.
METRIC_ORDER = (
    "total_time", "per_iter_time", "trace_total_time", "trace_per_iter_time", "xla_CompileTime_time_s",
    "xla_CompileTime_number", "xla_ExecuteTime_time_s", "xla_ExecuteTime_number", "warmup_time", "peak_rss_bytes",
    "total_cpu_time_s", "total_cuda_time_s", "per_iter_cpu_time_s", "per_iter_cuda_time_s",
)
STATISTICS = stats.STATISTICS
_FIXED_INDEX = {name: i for i, name in enumerate(FIXED_COLUMNS)}
_ENV_INDEX = {name: i for i, name in enumerate(ENV_COLUMNS)}
_METRIC_INDEX = {name: i for i, name in enumerate(METRIC_ORDER)}
_STAT_COLUMN = re.compile(r"^(min|median|max|mean|std)_(.+)$")


def metric_rank(metric: str) -> tuple:
    """A metric's place among the statistics columns: METRIC_ORDER first, then the others by name."""
    return (0, _METRIC_INDEX[metric]) if metric in _METRIC_INDEX else (1, metric)


def metric_columns(metric: str) -> list:
    """A metric's statistics columns; a median already among the fixed columns is not repeated."""
    return [name for name in (f"{s}_{metric}" for s in STATISTICS) if name not in _FIXED_INDEX]


def _column_key(name: str) -> tuple:
    if name in _FIXED_INDEX:
        return (0, _FIXED_INDEX[name])
    if name == ROUND_COLUMN:
        return (0, len(FIXED_COLUMNS), "")
    if name == BACKEND_COLUMN:
        return (0, len(FIXED_COLUMNS), "", 1)
    if name.startswith(EXPERIMENT_PREFIX):
        return (0, len(FIXED_COLUMNS), name)
    if name in _DYNAMO_INDEX:
        return (0, len(FIXED_COLUMNS) + 1, _DYNAMO_INDEX[name])
    if name in _ENV_INDEX:
        return (4, _ENV_INDEX[name])
    if "." in name:  # a dict-valued metric's entry
        return (2, name)
    match = _STAT_COLUMN.match(name)
    if match:
        return (1, metric_rank(match.group(2)), STATISTICS.index(match.group(1)))
    return (3,)  # a column we did not make (a database's own): kept, in its order, before the environment


def order_columns(names) -> list:
    """The documented column order for any set of column names (stable for names it does not know)."""
    return sorted(dict.fromkeys(names), key=_column_key)
