"""--dynamic, an experiment axis: static shapes (default), the batch dimension marked dynamic (backed: dynamo knows
its value) or unbacked (torch._dynamo.decorators.mark_unbacked: treated as data-dependent), or
torch.compile(dynamic=True). What the child does with it (the batch sizes each step cycles through) is
features/dynamic/child.py. No torch.
"""

from __future__ import annotations

from benchmarks.config.axis import Axis
from benchmarks.config.record_key import RecordKey, feature

DYNAMIC_CHOICES = ("static", "batch", "unbacked", "all")
DEFAULT_DYNAMIC = "static"


def _dynamic(value) -> str:
    value = value or DEFAULT_DYNAMIC
    if value not in DYNAMIC_CHOICES:
        raise ValueError(f"dynamic must be one of {', '.join(DYNAMIC_CHOICES)}, not {value!r}")
    return value


AXES = (
    Axis(
        "dynamic",
        "shapes: static (default), batch (batch dimension marked dynamic; timed iterations vary the batch), "
        "unbacked (the batch dimension marked unbacked, the dynamo harness's --unbacked-batch-only; "
        "--dynamic=batch --dynamic=unbacked is its --compare-backed-unbacked), all (torch.compile(dynamic=True)); "
        "experiment key `dynamic`",
        parse=_dynamic, default=DEFAULT_DYNAMIC, choices=DYNAMIC_CHOICES, slug="dyn-{}", example="batch",
        meaning="dynamic shapes: static, batch, unbacked or all (absent: static)"),
)


# The record's keys this feature writes (results/record_schema.py gathers them into the record's).
RECORD_KEYS = (
    RecordKey("dynamic_shapes", "object", feature("dynamic"), "the batch sizes that ran under --dynamic"),
)
