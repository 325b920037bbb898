"""torch.compile's knobs as experiment keys (the design: below): `compile_mode` (an axis), `inductor_config`
(KEY=VALUE settings, one per sweep), `compile_cache` (an axis). Their names, parsing and support rules; pure
Python, no torch (the probe knows Inductor's names).

The design:

`features/compile_options/__init__.py` names the three compile keys, their parsing and their support rules (their
entries in `config/axes.py` add them to `runner/matrix.py`'s table); `matrix.expand` gives them only to dynamo
configs (`for_dynamo`, their entries' `for_config`: eager and lazy-tensor configs are null, and de-duplicated) and
`inductor_config` only to Inductor's (`for_inductor`). Defaults (each entry's `default`, gathered as
`experiment_config.AXIS_DEFAULTS`: precision `fp32`, dynamic `static`, mode `default`, cache `cold`, train step
`forward_loss`, speedup `isolated`, allocator `glibc`; `records.fingerprint` and measurement's labels read it) are
left out of the fingerprint, so a record without a key is its default and old files resume.
`features/compile_options/child.py` does the child's part: `CompileCache` sets the cache variables before torch is
imported (Inductor reads them when it first compiles) and, for `warm`, fills the cache with one untimed compile and
`torch._dynamo.reset()` (in-memory caches and one process: not what a user's second run sees); `warm-start` is the
parent's: `runner/warm_start.py` runs the config's child twice in one job (the launcher's `run_child` hands a
request with `warm_start` to `run_pair`), both spawned (a spawned interpreter has read no cache variable before the
pair's; a fork server's preloads imported Inductor and Triton under the server's environment), on one directory the
launcher's process owns (`scratch_dirs`: a killed parent's is collected by the next sweep) named in both children's
cache variables, `BENCHMARKS_WARM_START` naming the half; the cold child with `--repeat=1`. Its result is the warm
child's with `ChildResult.warm_start` (the cold one's where it failed, the warm one then not run), which
`result_records.child_record` writes as the record's `warm_start`; the sweep writes one record when the pair has
ended, so resume treats a half-done pair as not run. Under Ray the pair is one task (`TaskSpec.warm_start`), on one
node's disk. `Measurement.warm_start` reads the two first runs; the dashboard's optional figures
(`reports.OPTIONAL_FIGURES`: cold, warm, saving) show where a line has them. A config by hand without the half
variable is refused (`child.by_hand_problem`, feature method `by_hand_problem`); `backends.compile_fn` applies the Inductor settings and
the mode; `dynamo_stats` reads dynamo's counters (cleared at setup), its per-frame compile counter, its list of
graph-break reasons (`torch._dynamo.utils.graph_break_reasons`, grouped and capped by
`results/dynamo_stats.summarize_reasons`) and its compile timers (`calculate_time_spent`,
`compilation_time_metrics`); the last two are process-wide and emptied only by `torch._dynamo.reset()` (a warm
cache's reset, so its fill is left out), which is right because nothing in a child compiles before its config (the
fork server never compiles; `--verify`'s and `--save-golden`'s references are eager). Nothing here recompiles:
`torch._dynamo.explain` would, and is not used. compare.py's `--pair` (`compare/matching.AxisPair`) relabels one
sweep's records of two values of any axis so that they pair.
"""

from __future__ import annotations

from typing import Optional
from benchmarks.config.axis import Axis, EAGER_LACKS, ONE_PER_SWEEP, flag_type
from benchmarks.config.inductor_settings import config_text, parse_setting, python_value, settings_of
from benchmarks.plumbing.safe_paths import short_hash

from benchmarks.config import backend_registry
from benchmarks.config.record_key import RecordKey, feature

KEYS = ("compile_mode", "inductor_config", "compile_cache")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# The mode that is CUDA graphs (max-autotune captures them only on CUDA, so it runs elsewhere too).
CUDA_GRAPH_MODES = ("reduce-overhead",)
# cold: a fresh, empty cache per child; warm: the config compiles once untimed first; shared: the machine's;
# warm-start: two children in turn on one cache directory, the second a fresh process on what the first one left
# (the dynamo harness's --warm-start-latency: runner/warm_start.py).
WARM_START = "warm-start"
CACHES = ("cold", "warm", "shared", WARM_START)
DEFAULT_MODE, DEFAULT_CACHE = "default", "cold"
# The dashboard's named shorthands for Inductor settings.
SHORTHANDS = {"freezing": ("freezing", "True"), "cpp_wrapper": ("cpp_wrapper", "True")}


def runs_twice(experiment) -> bool:
    """A warm start: the config's two children, one after the other (the hook runner/warm_start.py asks every
    declaration for, features.declared)."""
    return bool(experiment.dynamo) and experiment.compile_cache == WARM_START


def inductor_settings_problem(experiment, known: dict) -> Optional[str]:
    """An unknown Inductor setting or a badly typed value of the config's, against this torch's `known` settings
    (the hook runner/flag_checks.py asks every declaration for, features.declared), or None."""
    if not experiment.inductor_config:
        return None
    return check_settings(settings_of(experiment.inductor_config), known)


def asked_settings(options) -> Optional[str]:
    """--inductor-config, --freezing and --cpp-wrapper as the experiment key's text (None for none)."""
    shorthands = [SHORTHANDS[name] for name in ("freezing", "cpp_wrapper") if getattr(options, name)]
    return config_text(shorthands + list(options.axes.inductor_config))


def choice(name: str, allowed: tuple, value) -> Optional[str]:
    if value is None:
        return None
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def check_settings(settings: dict, known: dict) -> Optional[str]:
    """One line naming the first unknown key or badly typed value ({name: type name} from the probe), else None."""
    for key, value in settings.items():
        if key not in known:
            return f"--inductor-config: Inductor has no setting {key!r}"
        expected, actual = known[key], type(python_value(str(value))).__name__
        if expected in ("bool", "int", "float") and actual != expected and not (expected == "float" and actual == "int"):
            return f"--inductor-config: {key} wants a {expected}, not {value!r}"
    return None


def parse_mode(value) -> Optional[str]:
    """An experiment's `compile_mode` (null without dynamo), or ValueError."""
    return choice("compile_mode", MODES, value)


def parse_cache(value) -> Optional[str]:
    """An experiment's `compile_cache` (null without dynamo), or ValueError."""
    return choice("compile_cache", CACHES, value)


def parse_config(text) -> Optional[str]:
    """An experiment's `inductor_config` text (null for none), checked, or ValueError."""
    if text is not None:
        if not isinstance(text, str):
            raise ValueError(f"inductor_config must be KEY=VALUE text or null, not {text!r}")
        settings_of(text)
    return text


def for_dynamo(value, experiment):
    """A compile key's value for this config: none without dynamo (an eager or lazy-tensor config is not
    compiled: one eager config, whatever the modes)."""
    return value if experiment.dynamo is not None else None


def for_inductor(value, experiment):
    """The Inductor config's value for this config: on Inductor only."""
    return value if backend_registry.uses_inductor(experiment.dynamo) else None


def _mode_needs_inductor(e) -> bool:
    return e.compile_mode not in (None, "default") and not backend_registry.uses_inductor(e.dynamo)


def _freezing_in_training(e) -> bool:
    return bool(settings_of(e.inductor_config).get("freezing")) and e.test == "train"


# (name, cannot_run(experiment, capabilities), reason): the axes' table (config/axes.py) adds them to
# runner/matrix.py's, the mode's and the Inductor config's.
MODE_RULES = [
    (
        "compile-mode-needs-inductor",
        lambda e, c: _mode_needs_inductor(e),
        lambda e, c: f"compile mode {e.compile_mode} is Inductor's; dynamo backend {e.dynamo} takes no mode",
    ),
    (
        "cuda-graph-mode-needs-cuda",
        lambda e, c: e.compile_mode in CUDA_GRAPH_MODES and e.accelerator != "cuda",
        lambda e, c: f"compile mode {e.compile_mode} captures CUDA graphs, which need a CUDA device "
        f"(max-autotune and max-autotune-no-cudagraphs run on {e.accelerator})",
    ),
]
CONFIG_RULES = [
    (
        "freezing-eval-only",
        lambda e, c: _freezing_in_training(e),
        lambda e, c: "Inductor's freezing folds the weights into constants: inference (test eval) only",
    ),
]


ORDER = 40  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "compile_mode",
        "torch.compile's mode for Inductor: " + ", ".join(MODES) + " (default: default; "
        "reduce-overhead is CUDA graphs: CUDA only); experiment key `compile_mode`",
        parse=parse_mode, default=DEFAULT_MODE, choices=MODES,
        sweep_default=(DEFAULT_MODE,), for_config=for_dynamo,
        support_rules=MODE_RULES, slug="compile_mode-{}", example="max-autotune", on_eager=EAGER_LACKS,
        meaning="torch.compile's mode (null without dynamo)"),
    Axis(
        "inductor_config",
        "an Inductor setting for every Inductor config (repeatable; part of the config): "
        "torch._inductor.config.KEY = VALUE; experiment key `inductor_config`",
        parse=parse_config, kind=ONE_PER_SWEEP, repeatable_flag=True,
        type=flag_type(parse_setting), metavar="KEY=VALUE",
        from_options=asked_settings, for_config=for_inductor,
        support_rules=CONFIG_RULES, slug=lambda text: "inductor_config-" + short_hash(text), on_eager=EAGER_LACKS,
        example="freezing=True", meaning="Inductor options set, KEY=VALUE (null: none)"),
    Axis(
        "compile_cache",
        "Inductor's and Triton's caches: cold (default: an empty cache per child), warm (the config compiles once "
        "untimed first; the recorded compile is the warm one), shared (the machine's), warm-start (the dynamo "
        "harness's --warm-start-latency: a first child compiles into an empty cache directory, then a second, fresh "
        "process compiles from what it left; the record is the second's, with both compile times in `warm_start`); "
        "experiment key `compile_cache`",
        parse=parse_cache, default=DEFAULT_CACHE, choices=CACHES,
        sweep_default=(DEFAULT_CACHE,), for_config=for_dynamo,
        slug="compile_cache-{}", example="warm", on_eager=EAGER_LACKS,
        meaning="cold or warm compile caches (null without dynamo)"),
)


# The record's keys this feature writes (results/record_schema.py gathers them into the record's).
RECORD_KEYS = (
    RecordKey("compile_cache_fill_seconds", "number", feature("compile_options"), "warm: seconds the cache took to fill"),
)
