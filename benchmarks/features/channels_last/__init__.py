"""--channels-last (the dynamo harness's flag): the model and its 4-D inputs in `torch.channels_last`, as a switch
axis (experiment key `channels_last`: off by default, on and off sweepable together). Which configs can't take it,
and why; what it does in the child is features/channels_last/child.py. Pure Python, no torch.
"""

from __future__ import annotations

from benchmarks.config.axis import Axis, SWITCH
from benchmarks.config.record_key import RecordKey, feature


def _xla_reason(e, c) -> str:
    return ("--channels-last is a strided memory format; XLA tensors have no strides (the XLA compiler chooses "
            "layouts itself): run channels-last on cpu or cuda without --xla")


# (name, cannot_run(experiment, capabilities), reason): the axes' table adds them to runner/matrix.py's.
SUPPORT_RULES = [
    ("channels-last-not-on-xla", lambda e, c: bool(e.channels_last) and bool(e.xla or e.torch_xla2), _xla_reason),
]


ORDER = 100  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "channels_last",
        "the model and its 4-D inputs in torch.channels_last (the dynamo harness's --channels-last): --channels-last "
        "alone is on, --channels-last=on --channels-last=off sweeps both (default: off); not on XLA, whose tensors "
        "have no strides; experiment key `channels_last`",
        kind=SWITCH, support_rules=SUPPORT_RULES, meaning="model and 4-D inputs in channels_last"),
)


# The record's keys this feature writes (results/record_schema.py gathers them into the record's).
RECORD_KEYS = (
    RecordKey("memory_format", "object", feature("channels_last"), "what --channels-last converted"),
)
