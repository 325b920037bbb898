"""--batch-invariant (the dynamo harness's flag; the dashboard's `batch_invariant_accuracy` rows), a switch axis
(experiment key `batch_invariant`): an accuracy mode in which the compiled forward runs at the config's batch N, then
N/2, N/4, ..., 1, and every sample's output must be bitwise equal to the same sample's at N. Which configs can't take
it and why; what it does in the child is features/batch_invariant/child.py. Pure Python, no torch.
"""

from __future__ import annotations

from benchmarks.config.axis import Axis, SWITCH
from benchmarks.config.record_key import RecordKey, feature


def batch_sizes(batch_size: int) -> list:
    """The smaller batches checked against the config's, in order: N/2, N/4, ..., 1 (each halved, rounded down)."""
    sizes = []
    while batch_size > 1:
        batch_size //= 2
        sizes.append(batch_size)
    return sizes


def _train_reason(e, c) -> str:
    return ("--batch-invariant checks the forward's output per sample (an accuracy mode of inference, as the "
            "harness's): run it with --test=eval")


def _export_reason(e, c) -> str:
    return (f"--batch-invariant runs the forward at smaller batches, and {e.dynamo}'s program is exported for its "
            "example batch only: run it with a dynamo backend")


# (name, cannot_run(experiment, capabilities), reason): the axes' table adds them to runner/matrix.py's.
SUPPORT_RULES = [
    ("batch-invariant-eval-only", lambda e, c: bool(e.batch_invariant) and e.test != "eval", _train_reason),
    ("batch-invariant-not-exported", lambda e, c: bool(e.batch_invariant) and e.exported, _export_reason),
]


ORDER = 130  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "batch_invariant",
        "an accuracy mode (the dynamo harness's --batch-invariant): after timing, the compiled forward runs at the "
        "config's batch N, then N/2, N/4, ..., 1, and each sample's output must be bitwise equal to the same "
        "sample's at N (else accuracy fail_batch_invariance, naming the first batch size that differed); Inductor's "
        "batch_invariant setting on CUDA where this torch has it: --batch-invariant alone is on, "
        "--batch-invariant=on --batch-invariant=off sweeps both (default: off); eval only; experiment key "
        "`batch_invariant`",
        kind=SWITCH, support_rules=SUPPORT_RULES, meaning="the batch-invariance check"),
)


# The record's keys this feature writes (results/record_schema.py gathers them into the record's).
RECORD_KEYS = (
    RecordKey("batch_invariance", "object", feature("batch_invariant"), "the batch sizes compared and the first that differed"),
)
