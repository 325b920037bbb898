"""--aot-precompile (the dynamo harness's, pytorch#164906): an Inductor config's forward compiled ahead of time into
an artifact (`torch.compile(...).forward.aot_compile`), saved, loaded again after dynamo is reset, and timed as
loaded (docs/runner.md, "AOT precompile"). Which configs it is for and the rules that drop the others; no torch.

The design:

`--aot-precompile` (a `SWITCH`, the dynamo harness's, pytorch#164906) is the fourth compile key:
`features/aot_precompile/__init__.py` gives it to Inductor configs only (`for_config`) and drops train, dynamic
shapes and modes other than `default` (torch.compile takes a mode or options, and the harness's guard filter is an
option); `features/aot_precompile/child.py`'s hook, in phase `compile`, compiles `torch.compile(module,
fullgraph=True).forward.aot_compile` under the step's grad mode and autocast (both are global-state guards the
artifact keeps; every other guard is filtered out, as the harness does), saves the artifact (`aot-precompile`),
resets dynamo, loads it with `torch.compiler.load_compiled_function` (timed: the metric `aot_precompile_load_time`)
and hands the loaded function to `make_step` as `exported`, as the export backends do. A refusal is
`AotPrecompileFailed` (an error record, phase `compile`, its first line in `aot_precompile.reason`): the dashboard's
pass rate of an `aot_precompile` line is the harness's AOT precompile pass rate. A torch without the API
(`child.NEEDED`) makes the config a skip that says why, the feature named in `absent`
(`torch_internals.AOT_PRECOMPILE`). Its axis's `on_eager` is `EAGER_LACKS` (`against_eager.COMPILE_ONLY_AXES`), so
an AOT line is measured against plain eager; the dashboard's optional figure `AOTLoad(ms)` is its mean load time.
"""

from __future__ import annotations

from benchmarks.config import backend_registry
from benchmarks.config.axis import Axis, EAGER_LACKS, SWITCH
from benchmarks.features import compile_options
from benchmarks.config.record_key import RecordKey, feature

# The record's metric: the seconds torch.compiler.load_compiled_function took (one per process).
LOAD_TIME = "aot_precompile_load_time"


def for_config(value: bool, experiment) -> bool:
    """On for Inductor configs only: aot_compile keeps what Inductor's compile produced (its bundled AOTAutograd
    artifact); other dynamo backends' results don't serialize, and eager or lazy configs compile nothing."""
    return bool(value) and backend_registry.uses_inductor(experiment.dynamo)


SUPPORT_RULES = [
    (
        "aot-precompile-eval-only",
        lambda e, c: e.aot_precompile and e.test != "eval",
        lambda e, c: "--aot-precompile compiles the model's forward ahead of time (the harness's times inference): "
                     "eval only",
    ),
    (
        "aot-precompile-static-shapes",
        lambda e, c: e.aot_precompile and e.dynamic not in (None, "static"),
        lambda e, c: f"--aot-precompile keeps no shape guards in its artifact (as the harness's): static shapes "
                     f"only, not dynamic {e.dynamic}",
    ),
    (
        "aot-precompile-default-mode",
        lambda e, c: e.aot_precompile and e.compile_mode not in (None, compile_options.DEFAULT_MODE),
        lambda e, c: f"--aot-precompile compiles as the harness's does, its guard filter in torch.compile's options, "
                     f"which takes a mode or options, not both: compile mode default only, not {e.compile_mode}",
    ),
]


ORDER = 140  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "aot_precompile",
        "Inductor configs' forward compiled ahead of time, saved, loaded in the same child and timed as loaded (the "
        "dynamo harness's --aot-precompile): --aot-precompile alone is on, --aot-precompile=on --aot-precompile=off "
        "sweeps both (default: off); eval, static shapes, the default compile mode; the record's aot_precompile and "
        "metric aot_precompile_load_time; experiment key `aot_precompile`",
        kind=SWITCH, for_config=for_config, support_rules=SUPPORT_RULES, on_eager=EAGER_LACKS,
        meaning="the step compiled ahead of time and loaded"),
)


# The record's keys this feature writes (results/record_schema.py gathers them into the record's).
RECORD_KEYS = (
    RecordKey("aot_precompile", "object", feature("aot_precompile"), "the precompiled step: passed, seconds"),
)
