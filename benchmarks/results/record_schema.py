"""The record declared in code: every key a record can hold (SCHEMA), its type, who writes it and what it means;
the nested keys of the sections readers rely on are declared inside their key (`fields`). The `metrics` section is
generated from the metric catalog (results/metric_catalog.py); each feature's own keys are its RECORD_KEYS.

Four users, one declaration:
- every reader's check at the door (results/record_check.py `problem`) is built from the keys declared `door`;
- the record refuses an undeclared key or a mistyped value at the line that sets it (results/record.py);
- the writer checks each record it writes against every declared key (results/record_check.py `written`);
- docs/record-schema.md, the table of keys, is generated from it: `python -m benchmarks.results.record_schema
  --markdown` prints it, `--write-docs` writes it (tests/results/test_record_schema.py holds them equal).

Sections (model, experiment, metrics, environment, ...) are open: a key not declared inside one is kept
(upstream's and old records hold more); the top level is closed.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

from benchmarks import features
from benchmarks.config import axes
from benchmarks.config.record_key import CORE, PARENT, TYPES, UPSTREAM, RecordKey, feature
from benchmarks.results import metric_catalog

def K(name, type_, writer, meaning, *fields, door=False, numbers=False) -> RecordKey:
    return RecordKey(name, type_, writer, meaning, tuple(fields), door, numbers)


MODEL = K("model", "object", CORE, "what ran: the suite's model config",
          K("suite_name", "text", CORE, "the suite (dummy, torchvision, ...)", door=True),
          K("model_name", "text", CORE, "the model's name in its suite", door=True),
          door=True, numbers=True)

# Upstream's nine keys, in its order, then ours: each declared with its axis, by its feature (config/axes.py's AXES).
EXPERIMENT = K(
    "experiment", "object", CORE, "the experiment config as it ran (ExperimentConfig.to_dict); part of the fingerprint",
    K("accelerator", "text", CORE, "cpu, cuda or tpu", door=True),
    K("accelerator_model", "text", CORE, "the device's model name (not in the fingerprint)", door=True),
    K("xla", "text", CORE, "PJRT, or null without XLA", door=True),
    K("xla_flags", "text", CORE, "XLA_FLAGS the child ran with", door=True),
    K("dynamo", "text", CORE, "the dynamo backend, null for eager", door=True),
    K("torch_xla2", "text", CORE, "upstream's torch_xla2 mode", door=True),
    K("test", "text", CORE, "eval or train", door=True),
    K("batch_size", "count", CORE, "the batch size that ran", door=True),
    K("enable_functionalization", "flag", CORE, "upstream's XLA functionalization", door=True),
    *(K(axis.key, axis.record_type, feature(axis.feature), axis.meaning) for axis in axes.AXES),
    door=True, numbers=True)

# One key per metric of the catalog (results/metric_catalog.py, the one list of metrics): its type, writer and meaning.
METRICS = K(
    "metrics", "metrics", CORE, "metric name -> per-run samples (upstream's); on failure also `error`",
    *(K(metric.name, metric.record_type, metric.writer, metric.meaning)
      for metric in metric_catalog.CATALOG.values() if metric.in_record),
    door=True)

ERROR = K("error", "object", CORE, "the failure: null for a record that ran",
          K("type", "text", CORE, "the exception's or failure's type", door=True),
          K("message", "text", CORE, "one line", door=True),
          K("phase", "text", CORE, "setup, load, reference, compile, measure, check, ...", door=True),
          K("log", "text", PARENT, "the child's log, relative to the output directory", door=True),
          K("lock_waits", "list", PARENT, "a timeout's file locks waited on, and their holders"),
          door=True)

ENVIRONMENT = K(
    "environment", "object", CORE, "the machine and software the config ran on",
    *(K(name, "text", CORE, f"the {name.replace('_', ' ')}", door=True)
      for name in ("python", "torch", "torch_xla", "torchvision", "numpy", "cpu_model", "hostname", "platform",
                   "git_commit")),
    K("cpu_count", "count", CORE, "the machine's CPUs", door=True),
    K("usable_cores", "count", CORE, "the cores this process may use", door=True),
    K("gpu_names", "texts", CORE, "the GPUs' names", door=True),
    K("executor", "object", PARENT, "how the config ran: kind, jobs, host, cores, GPUs, children beside it (Ray: node)",
      K("kind", "text", PARENT, "local or ray", door=True), door=True),
    K("noise", "object", PARENT, "the sweep's noise facts",
      K("problems", "list", PARENT, "what may disturb timings", door=True), door=True),
    K("launch", "text", PARENT, "fork or spawn: how the child started (null: a skip the parent wrote)"),
    K("launch_reason", "text", PARENT, "why a config its fork server could have forked was spawned"),
    K("cpu_affinity", "list", CORE, "the cores the child ran on"),
    K("allocator", "object", CORE, "the C allocator policy in force"),
    K("cpu_profile", "object", feature("cpu_profile"), "the dashboard CPU profile's pieces in force"),
    K("cuda_profile", "object", feature("cuda_profile"), "the dashboard CUDA profile's pieces in force"),
    K("ceilings", "object", CORE, "the machine's peak FLOP/s per dtype and bandwidths (docs/roofline.md)"),
    door=True)

ACCURACY_FIGURES = (
    K("accuracy_reference", "text", feature("verify"), "fp64, cosine or mean_rel_error: the rule that judged it"),
    K("accuracy_tolerance", "number", feature("verify"), "the tolerance applied"),
    K("accuracy_rmse", "number", feature("verify"), "the config's RMSE against the reference"),
    K("accuracy_eager_rmse", "number", feature("verify"), "eager's RMSE against the reference"),
    K("accuracy_message", "text", feature("verify"), "the judgement in one line"),
    K("accuracy_reason", "text", feature("verify"), "which rule and why, or why none judged it"),
)
VERIFICATION_FIGURES = (
    K("verification_message", "text", feature("verify"), "upstream's verifier message"),
    K("verification_tolerance", "number", feature("verify"), "upstream's tolerance"),
    K("verification_cosine_similarity", "number", feature("verify"), "cosine similarity to the reference"),
    K("verification_max_abs_error", "number", feature("verify"), "largest absolute difference"),
    K("verification_mean_rel_error", "number", feature("verify"), "mean relative error"),
)

# Every top-level key, in the order a record holds them (records.new_record's, then as written).
SCHEMA = (
    MODEL,
    EXPERIMENT,
    K("repeat", "count", CORE, "timed runs", door=True),
    K("iterations_per_run", "count", CORE, "iterations in each timed run, timed as one block (null: the record of a "
                                          "config that failed before its block size was found)", door=True),
    METRICS,
    K("timestamp", "timestamp", CORE, "the sweep's start, shared by its records", door=True),
    K("verification_code", "text", CORE, "upstream's verdict (PASS, FAIL, VERIFIER_SKIPPED, ...)", door=True),
    K("outputs_file", "text", UPSTREAM, "upstream's saved outputs (never written here)"),
    K("accuracy", "text", CORE, "the one verdict: the harness's status or the golden check's (docs/accuracy.md)",
      door=True),
    K("schema_version", "count", CORE, "1; changes only when a key changes meaning"),
    K("status", "text", CORE, "ok, error, timeout, crash, oom or skip", door=True),
    ERROR,
    K("warmup", "count", CORE, "warm-up runs", door=True),
    K("requested_batch_size", "count", CORE, "the batch size asked for (null: the model's)", door=True),
    K("verify", "flag", CORE, "--verify was asked", door=True),
    K("golden_request", "object", feature("golden"), "the golden flags set (part of the fingerprint)"),
    *ACCURACY_FIGURES,
    *VERIFICATION_FIGURES,
    K("diagnostics", "object", CORE, "what the diagnostic flags collected (profiles, counters, matmul precision)"),
    K("artifacts", "object", CORE, "files written beside the record, by kind, relative to the output directory"),
    ENVIRONMENT,
    K("precision_reason", "text", PARENT, "why the precision that ran is not the one asked for (the plan's; a config "
                                           "by hand: the child's)"),
    K("model_info", "object", CORE, "the suite's facts about what ran (BenchmarkModel.info)"),
    K("timing_block", "object", CORE, "how iterations_per_run was chosen (docs/measurement.md, \"The timed region\")",
      K("how", "text", CORE, "calibrated, given (--iterations-per-run=N) or one call (then `reason` says why)"),
      K("iterations", "count", CORE, "the calls in each timed run: iterations_per_run"),
      K("target_seconds", "number", CORE, "calibrated: what one run is to last at least (10 ms CPU, 2 ms GPU)"),
      K("probes", "list", CORE, "calibrated: [calls, seconds] of each probe block after the first call"),
      K("reason", "text", CORE, "one call: why no block was calibrated"),
      K("eager", "object", feature("speedup"), "--speedup=paired: eager's own block, the same keys")),
    K("memory_kind", "text", CORE, "which figure metrics.peak_memory_bytes is"),
    K("gpu_telemetry", "object", CORE, "CUDA: NVML's device facts and throttling over the timed runs"),
    K("generation", "object", feature("generation"), "LLM rows: tokens, the decode loop, per-token seconds"),
    K("dynamo_stats", "object", CORE, "dynamo configs: graphs, breaks and their reasons, recompiles, compile seconds"),
    K("roofline", "object", CORE, "work counted, achieved rates, the attainable ceiling, bound, or why_not"),
    K("export", "object", feature("export"), "export backends: passed, reason, strict, seconds"),
    K("generation_verify", "object", feature("generation"), "LLM rows under --verify: the tokens compared"),
    K("golden", "object", feature("golden"), "--save-golden/--golden: status, path, figures, the entry's machine"),
    K("absent", "object", CORE, "features this torch's private APIs could not give, each with why"),
    K("warnings", "texts", CORE, "one-line warnings about how the config was measured (absent: none)"),
    K("warm_start", "object", PARENT, "a warm start: both children's first runs and the saving"),
    K("run_seconds", "number", PARENT, "the child's wall time (null: a skip the parent wrote)", door=True),
    K("round", "count", PARENT, "0-based, --rounds", door=True),
    K("rerun", "text", PARENT, "the command that reruns this config alone"),
    *features.declared_record_keys(),  # each feature's own keys (its declaration's RECORD_KEYS)
)
BY_NAME = {key.name: key for key in SCHEMA}


# ---------------------------------------------------------------- the docs' table

DOCS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "record-schema.md")
DOCS_HEAD = """# The record's keys

Generated from `benchmarks/results/record_schema.py` by `python -m benchmarks.results.record_schema --write-docs`
(tests/results/test_record_schema.py holds this file equal to it): edit the schema, not this file. The rules
(versioning, the fingerprint, the validation at the door) are docs/architecture.md's "The record".

Every key a record can hold, in the order a record holds them; a nested key `a.b` is key `b` of the object `a`.
Any key may be missing or null in a record read (old and upstream records). *checked*: every reader refuses a
record whose value there is present, not null and not of its type (benchmarks/results/record_check.py).
*written by*: `core` (the child, for every config that runs), `parent` (the sweep's runner), `feature:<name>` (the
axis or flag of that name), `upstream` (PyTorch/XLA's tools; read here, never written).

"""


def _rows(key: RecordKey, prefix: str = ""):
    checked = ", checked" if key.door else ""
    kinds = " or ".join(TYPES[kind] for kind in key.types())
    yield f"| `{prefix}{key.name}` | {kinds}{checked} | {key.writer} | {key.meaning} |"
    for inner in key.fields:
        yield from _rows(inner, f"{prefix}{key.name}.")


def markdown() -> str:
    """docs/record-schema.md: the table of every declared key."""
    lines = ["| key | type | written by | meaning |", "|---|---|---|---|"]
    for key in SCHEMA:
        lines.extend(_rows(key))
    return DOCS_HEAD + "\n".join(lines) + "\n"


def main(argv: Optional[list] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--markdown"]:
        sys.stdout.write(markdown())
        return 0
    if args == ["--write-docs"]:
        with open(os.path.normpath(DOCS_PATH), "w", encoding="utf-8") as handle:
            handle.write(markdown())
        return 0
    sys.stderr.write("usage: python -m benchmarks.results.record_schema --markdown | --write-docs\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
