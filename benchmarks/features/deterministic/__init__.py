"""--deterministic (the dynamo harness's flag; the dashboard's `deterministic_perf` rows), a switch axis (experiment
key `deterministic`): the config runs under torch's deterministic algorithms and, where this torch has it,
Inductor's `deterministic` setting; our check on top: two runs of its step must give bitwise-equal outputs. Which
configs can't take it and why, and the cuBLAS setting it needs; what it does in the child is
features/deterministic/child.py. Pure Python, no torch.
"""

from __future__ import annotations

from benchmarks.config.axis import Axis, SWITCH
from benchmarks.config.record_key import RecordKey, feature

# What torch asks of cuBLAS for deterministic matmuls on CUDA (torch.use_deterministic_algorithms' documentation):
# set in the child before its first cuBLAS call unless the environment already sets it.
CUBLAS_VARIABLE = "CUBLAS_WORKSPACE_CONFIG"
CUBLAS_WORKSPACE = ":4096:8"


def _xla_reason(e, c) -> str:
    return ("--deterministic sets torch's deterministic algorithms, which govern torch's own CPU and CUDA kernels; "
            "an XLA config's kernels are the XLA compiler's: run it on cpu or cuda without --xla")


# (name, cannot_run(experiment, capabilities), reason): the axes' table adds them to runner/matrix.py's.
SUPPORT_RULES = [
    ("deterministic-not-on-xla", lambda e, c: bool(e.deterministic) and bool(e.xla or e.torch_xla2), _xla_reason),
]


ORDER = 120  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "deterministic",
        "torch.use_deterministic_algorithms(True) (uninitialised memory filled with NaN, CUBLAS_WORKSPACE_CONFIG on "
        "CUDA) and, where this torch has it, Inductor's `deterministic` setting (the dynamo harness's --deterministic); "
        "two runs of the config's step must then give bitwise-equal outputs (else accuracy fail_nondeterministic): "
        "--deterministic alone is on, --deterministic=on --deterministic=off sweeps both (default: off); not on XLA; "
        "experiment key `deterministic`",
        kind=SWITCH, support_rules=SUPPORT_RULES, meaning="deterministic algorithms, two runs compared"),
)


# The record's keys this feature writes (results/record_schema.py gathers them into the record's).
RECORD_KEYS = (
    RecordKey("determinism", "object", feature("deterministic"), "what ran, the two runs' figures, the operator without a "
              "deterministic kernel"),
)
