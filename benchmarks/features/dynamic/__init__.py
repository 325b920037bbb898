"""--dynamic, an experiment axis: static shapes (default), the batch dimension marked dynamic (backed: dynamo knows
its value) or unbacked (torch._dynamo.decorators.mark_unbacked: treated as data-dependent), or
torch.compile(dynamic=True). What the child does with it (the batch sizes each step cycles through) is
features/dynamic/child.py. No torch.

Dynamic shapes and export, the design:

`--dynamic` is the experiment key `dynamic` (static, batch, unbacked, all; `static` is left out of the fingerprint
and the labels, `experiment_config.AXIS_DEFAULTS`). `child/backends.compile_fn` passes `dynamic=True` for `all`;
`features/dynamic/child.VaryingBatch` is the input source of make_step under batch/unbacked/all: the sets of the batch
cycle (requested, -20%, +20%) are made before timing (and their batch dimension marked as `child.MARKS`
says: `batch` backed, `mark_dynamic`; `unbacked` by `mark_unbacked`, with the `hint_override` and `shape_id` this
torch's signature takes, `unbacked_arguments`, the rest named in `absent`), the iterations cycle through them, it
counts the sizes that ran (the recompiles they cause are `dynamo_stats.recompiles`, one count for every dynamo
record), and `stop()` hands the example inputs back for `--verify`. The export backends (declared `exports=True` in
`config/backend_registry.py`) are `--dynamo` values that no dynamo registry knows: `child/exporting.prepare` exports
(and for aot_inductor packages and loads) in phase `compile` and returns the callable `make_step` runs instead of a
compiled module (eval only, a support rule). A refusal is `ExportFailed`, an ordinary error record with the record's
`export.reason`.
"""

from __future__ import annotations

from benchmarks.config.axis import Axis, EAGER_DEFAULT
from benchmarks.config.record_key import RecordKey, feature

DYNAMIC_CHOICES = ("static", "batch", "unbacked", "all")
DEFAULT_DYNAMIC = "static"


def _dynamic(value) -> str:
    value = value or DEFAULT_DYNAMIC
    if value not in DYNAMIC_CHOICES:
        raise ValueError(f"dynamic must be one of {', '.join(DYNAMIC_CHOICES)}, not {value!r}")
    return value


ORDER = 30  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "dynamic",
        "shapes: static (default), batch (batch dimension marked dynamic; timed iterations vary the batch), "
        "unbacked (the batch dimension marked unbacked, the dynamo harness's --unbacked-batch-only; "
        "--dynamic=batch --dynamic=unbacked is its --compare-backed-unbacked), all (torch.compile(dynamic=True)); "
        "experiment key `dynamic`",
        parse=_dynamic, default=DEFAULT_DYNAMIC, choices=DYNAMIC_CHOICES, slug="dyn-{}", example="batch",
        on_eager=EAGER_DEFAULT,  # --dynamic needs dynamo (a support rule): eager runs static shapes
        meaning="dynamic shapes: static, batch, unbacked or all (absent: static)"),
)


# The record's keys this feature writes (results/record_schema.py gathers them into the record's).
RECORD_KEYS = (
    RecordKey("dynamic_shapes", "object", feature("dynamic"), "the batch sizes that ran under --dynamic"),
)
