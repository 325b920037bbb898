"""Our experiment axes, one declaration each: every experiment key beyond upstream PyTorch/XLA's nine is one
`Axis` in AXES (docs/architecture.md, "Adding a matrix axis").

From the table come experiment_config's OWN_KEYS and AXIS_DEFAULTS (so records.fingerprint and the labels leave a
key out at its default), ExperimentConfig's fields, from_dict's checks, slug and describe; run_options' flags (the
`axes` section, AxisOptions) and check_combinations' contradictions; matrix.expand's values, their sweep defaults,
what each config carries and the support rules an axis adds; measurement's labels. What an axis means when a
config runs is the child's code, and the details of its values are its own module's (precision.py, ...).
No torch: the parent plans with it.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Callable, Optional, Union

from benchmarks.config import allocator, aot_precompile, batch_invariant, channels_last, compile_options, \
    cpu_profile, cuda_profile, deterministic, generation_options, matmul_precision, paired_speedup, precision, \
    quantization
from benchmarks.plumbing.cli_support import close_matches
from benchmarks.plumbing.safe_paths import short_hash

# An axis's kind: a repeatable flag whose values are multiplied (the matrix), one value for the whole sweep, or a
# switch: a matrix axis of on and off (`--flag` alone is on; `--flag=on --flag=off` sweeps both; the record holds
# true or false, off being its default).
MATRIX_AXIS, ONE_PER_SWEEP, SWITCH = "matrix axis", "one per sweep", "switch"
SWITCH_WORDS = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False, "no": False, "0": False}

# --dynamic: static shapes (default), the batch dimension marked dynamic (backed: dynamo knows its value) or unbacked
# (torch._dynamo.decorators.mark_unbacked: treated as data-dependent), or torch.compile(dynamic=True).
DYNAMIC_CHOICES = ("static", "batch", "unbacked", "all")
DEFAULT_DYNAMIC = "static"
# --train-step (train configs; null for eval): `harness`, the dynamo harness's step compiled whole (clone the
# inputs, zero the grads, forward, the suite's loss, backward, the optimizer's step: none on the CPU), or
# `forward_loss`, ours (forward + loss under the backend; backward and an eager SGD step after it).
# docs/runner.md, "Training step". A record without the key ran forward_loss.
HARNESS_TRAIN_STEP, DEFAULT_TRAIN_STEP = "harness", "forward_loss"
TRAIN_STEPS = (HARNESS_TRAIN_STEP, DEFAULT_TRAIN_STEP)


@dataclasses.dataclass(frozen=True)
class Axis:
    """One experiment key of ours: its flag, its values, its default, and how it shows."""

    key: str  # the experiment key, after upstream's nine in the table's order; its flag is --key (dashes)
    help: str  # the flag's --help
    # A record's or --experiment-config's value (None where the key is absent) -> the config's value, or ValueError
    # with one line. parse(None) is the value of a config that does not set the key (ExperimentConfig's default).
    parse: Optional[Callable[[Any], Any]] = None  # a switch's: parse_switch
    # What a record without the key ran. At it, or null, the key is left out of the resume fingerprint, the labels
    # and the slug, so results files written before the key existed resume and keep their labels.
    default: Any = None
    kind: str = MATRIX_AXIS
    choices: Optional[tuple] = None  # the flag's
    type: Optional[Callable[[str], Any]] = None  # the flag's (argparse type)
    metavar: Optional[str] = None  # the flag's
    repeatable_flag: Optional[bool] = None  # None: a matrix axis's flag is repeatable, a per-sweep one's is not
    # The values of a sweep whose flag is not given: a tuple, or a function of the values asked for (key -> tuple;
    # --allocator's depends on --cpu-profile). None: (parse(None),).
    sweep_default: Union[tuple, Callable[[dict], tuple], None] = None
    # A per-sweep axis's value from the options when it is not just its flag's (--inductor-config's settings with
    # --freezing and --cpp-wrapper).
    from_options: Optional[Callable[[Any], Any]] = None
    # The value a config carries, given the value asked for and the config's upstream keys (an ExperimentConfig):
    # the compile keys are null without dynamo, the training step null for eval, eager never paired. None: as asked.
    for_config: Optional[Callable[[Any, Any], Any]] = None
    # The whole config as this axis runs it, once built (the profiles' precision and freezing).
    settle: Optional[Callable[[Any], Any]] = None
    # A rule between this key and the config's other keys, checked when a config is read (from_dict): one line
    # naming what is wrong, or None.
    check: Optional[Callable[[Any], Optional[str]]] = None
    # (name, cannot_run(experiment, capabilities), reason(experiment, capabilities)): added to runner/matrix.py's table.
    support_rules: tuple = ()
    # Flags that contradict the axis's value (RunOptions -> one line, or None): check_combinations, exit 2.
    contradiction: Optional[Callable[[Any], Optional[str]]] = None
    # How a value shows in a backend label (inductor[max-autotune,bf16]): a format string or a function.
    label: Union[str, Callable[[Any], str]] = "{}"
    label_plus: bool = False  # shown as backend+value before the brackets (quantization's label, older than they)
    # How a value shows in the slug (log and artifact file names): a format string or a function.
    slug: Union[str, Callable[[Any], str]] = "{}"
    # What the axis means in the child, where it is not the child's own code: "module:function" under benchmarks/child,
    # function(value, experiment) -> a config_hooks.Hook that joins the run's phases, or None where the value asks
    # nothing of the run (config_hooks.for_config builds them in the table's order).
    child: Optional[str] = None
    # A value other than the default: --help's and the selection flags' example, and the tests' round trip.
    example: Any = None

    def __post_init__(self):
        if self.kind == SWITCH:  # a switch's defaults: off, on/off words, named by its key when on
            named = self.key.replace("_", "-")
            for name, value in (("parse", parse_switch), ("default", False), ("example", True), ("metavar", "on|off"),
                                ("type", flag_type(parse_switch)), ("label", named), ("slug", named)):
                if getattr(self, name) in (None, "{}"):
                    object.__setattr__(self, name, value)
        if self.parse is None:
            raise ValueError(f"axis {self.key}: parse is required")

    @property
    def flag(self) -> str:
        return "--" + self.key.replace("_", "-")

    @property
    def unset(self):
        """The value of a config that does not set the key."""
        return self.parse(None)

    @property
    def flag_is_repeatable(self) -> bool:
        return self.kind != ONE_PER_SWEEP if self.repeatable_flag is None else self.repeatable_flag

    @property
    def flag_bare(self):
        """The value of the flag given without one (a switch's `--flag`: on), or None where it needs a value."""
        return "on" if self.kind == SWITCH else None

    def flag_args(self, value) -> list:
        """The runner's flags that ask for `value` of this axis ([] at the default): a rerun command's."""
        if at_default(self.key, value):
            return []
        if self.kind == SWITCH:
            return [self.flag]
        if self.from_options is not None:  # --inductor-config's text is settings, one flag each
            return [f"{self.flag}={part}" for part in str(value).split(",")]
        return [f"{self.flag}={value}"]

    def asked(self, options) -> tuple:
        """The values the flags ask for (RunOptions), () when none."""
        value = self.from_options(options) if self.from_options else getattr(options.axes, self.key)
        if self.kind != ONE_PER_SWEEP:
            return tuple(value)
        return () if value is None else (value,)

    def sweep_values(self, asked: dict) -> tuple:
        """The sweep's values: those asked for (`asked`: key -> values), else the default."""
        if asked.get(self.key):
            return tuple(asked[self.key])
        if callable(self.sweep_default):
            return tuple(self.sweep_default(asked))
        return tuple(self.sweep_default) if self.sweep_default is not None else (self.unset,)

    def value_for(self, value, experiment):
        """The value a config of these upstream keys carries when `value` is asked for."""
        return self.for_config(value, experiment) if self.for_config else value

    def shown(self, value) -> bool:
        """Whether a value is named (fingerprint, labels, slug): set, and not the default (`at_default`)."""
        return not at_default(self.key, value)

    def ran(self, value):
        """The value a config ran, read from a record: a record without the key (null) ran the default."""
        return self.default if value is None else value

    def slug_text(self, value) -> str:
        return _formatted(self.slug, value)


def at_default(key: str, value) -> bool:
    """The one rule for "at its default, leave it out" (the fingerprint, the labels, the slug, the measurement's
    axes, history's site, the rerun flags): null, false, or the value a record without the key ran (the axis's
    `default`). A key the table lacks (a suite's extra axis such as microbench's dtype) is at its default when null
    or false. So a new axis, boolean or not, leaves every older record's fingerprint and label as they were."""
    if value is None or value is False:
        return True
    axis = BY_KEY.get(key)
    return axis is not None and axis.default is not None and value == axis.default


def parse_switch(value) -> bool:
    """A switch's value: a record's true/false (null: off), or the flag's on/off words."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    word = SWITCH_WORDS.get(str(value).strip().lower())
    if word is None:
        raise ValueError(f"expected on or off, not {value!r}")
    return word


def _formatted(spec, value) -> str:
    return spec(value) if callable(spec) else spec.format(value)


def flag_type(parse: Callable[[str], Any], known=()) -> Callable[[str], Any]:
    """An argparse type from a parser: its ValueError is the flag's one-line error, with close matches in `known`."""
    def convert(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            close = close_matches(str(text).strip().lower(), known) if known else []
            raise argparse.ArgumentTypeError(f"{exc}; close matches: {', '.join(close)}" if close else str(exc))

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def _dynamic(value) -> str:
    value = value or DEFAULT_DYNAMIC
    if value not in DYNAMIC_CHOICES:
        raise ValueError(f"dynamic must be one of {', '.join(DYNAMIC_CHOICES)}, not {value!r}")
    return value


def _as_given(value):
    """A value as read (its axis's `check` judges it, with the config's other keys)."""
    return value


def _train_step_rule(e) -> Optional[str]:
    """A training step is a train config's: one of TRAIN_STEPS there, null for eval."""
    if e.train_step is not None and (e.test != "train" or e.train_step not in TRAIN_STEPS):
        return (f"train_step must be one of {', '.join(TRAIN_STEPS)} (train configs) or null, not {e.train_step!r} "
                f"for test {e.test}")
    return None


AXES = (
    Axis(
        "quantization",
        "TorchAO recipe applied after the model is built (repeatable): none (default), "
        + quantization.KNOWN_TEXT.replace("none, ", "") + "; experiment key `quantization`",
        parse=quantization.parse,
        type=flag_type(quantization.parse, ["none", *quantization.FIXED, "int4wo-128", "uintx-4-64"]),
        metavar="RECIPE", support_rules=quantization.SUPPORT_RULES, label_plus=True, slug="q-{}", example="int8wo"),
    Axis(
        "precision",
        "fp32, bf16, fp16 (model and inputs cast), amp (autocast: float16 on CUDA, bfloat16 on CPU and XLA), amp_bf16, "
        "amp_fp16 (repeatable); default: the suite's (torchbench: upstream PyTorch/XLA's rule, README; others fp32); "
        "experiment key `precision`",
        parse=precision.parse, default=precision.DEFAULT,  # None asked: the suite's default, resolved by the plan
        type=flag_type(precision.parse, precision.PRECISIONS), metavar="PRECISION",
        support_rules=precision.SUPPORT_RULES, example="bf16"),
    Axis(
        "dynamic",
        "shapes: static (default), batch (batch dimension marked dynamic; timed iterations vary the batch), "
        "unbacked (the batch dimension marked unbacked, the dynamo harness's --unbacked-batch-only; "
        "--dynamic=batch --dynamic=unbacked is its --compare-backed-unbacked), all (torch.compile(dynamic=True)); "
        "experiment key `dynamic`",
        parse=_dynamic, default=DEFAULT_DYNAMIC, choices=DYNAMIC_CHOICES, slug="dyn-{}", example="batch",
        child="config_hooks:dynamic_batch"),
    Axis(
        "compile_mode",
        "torch.compile's mode for Inductor: " + ", ".join(compile_options.MODES) + " (default: default; "
        "reduce-overhead is CUDA graphs: CUDA only); experiment key `compile_mode`",
        parse=compile_options.parse_mode, default=compile_options.DEFAULT_MODE, choices=compile_options.MODES,
        sweep_default=(compile_options.DEFAULT_MODE,), for_config=compile_options.for_dynamo,
        support_rules=compile_options.MODE_RULES, slug="compile_mode-{}", example="max-autotune"),
    Axis(
        "inductor_config",
        "an Inductor setting for every Inductor config (repeatable; part of the config): "
        "torch._inductor.config.KEY = VALUE; experiment key `inductor_config`",
        parse=compile_options.parse_config, kind=ONE_PER_SWEEP, repeatable_flag=True,
        type=flag_type(compile_options.parse_setting), metavar="KEY=VALUE",
        from_options=lambda options: options.inductor_config_text, for_config=compile_options.for_inductor,
        support_rules=compile_options.CONFIG_RULES, slug=lambda text: "inductor_config-" + short_hash(text),
        example="freezing=True"),
    Axis(
        "compile_cache",
        "Inductor's and Triton's caches: cold (default: an empty cache per child), warm (the config compiles once "
        "untimed first; the recorded compile is the warm one), shared (the machine's), warm-start (the dynamo "
        "harness's --warm-start-latency: a first child compiles into an empty cache directory, then a second, fresh "
        "process compiles from what it left; the record is the second's, with both compile times in `warm_start`); "
        "experiment key `compile_cache`",
        parse=compile_options.parse_cache, default=compile_options.DEFAULT_CACHE, choices=compile_options.CACHES,
        sweep_default=(compile_options.DEFAULT_CACHE,), for_config=compile_options.for_dynamo,
        slug="compile_cache-{}", example="warm"),
    Axis(
        "train_step",
        "train configs' step: harness (the dynamo harness's, as PyTorch's dashboard measures: the whole step compiled, "
        "the suite's loss, no optimizer on the CPU), forward_loss (forward + loss compiled, eager backward and SGD "
        "step); default: the suite's (harness for torchbench, timm, huggingface; forward_loss for the others); "
        "experiment key `train_step`",
        parse=_as_given, default=DEFAULT_TRAIN_STEP, choices=TRAIN_STEPS,  # None asked: the suite's, by the plan
        for_config=lambda step, e: step if e.test == "train" else None, check=_train_step_rule,
        label="{}-step", slug="step-{}", example="harness"),  # "harness" alone would not say what it is
    Axis(
        "speedup",
        "isolated (default: each config in its own child; a speedup divides two processes' medians) or paired (a "
        "backend's child also times eager on the same module and inputs, alternating eager and backend runs as the "
        "dynamo harness does: the record's paired_speedup, per-pair ratios with an interval; not for XLA); experiment "
        "key `speedup`",
        parse=paired_speedup.parse, default=paired_speedup.DEFAULT, choices=paired_speedup.CHOICES,
        for_config=paired_speedup.for_config, support_rules=paired_speedup.SUPPORT_RULES, example="paired",
        child="config_hooks:paired_speedup_hook"),
    Axis(
        "allocator",
        "the C allocator of every child, set before its interpreter starts: glibc (default: glibc's malloc with fixed "
        "mmap and trim thresholds, so timings don't depend on what the process freed before), system (as inherited, "
        "untouched), jemalloc, tcmalloc (preloaded; a value whose library is not installed is dropped with the "
        "package to install); experiment key `allocator`, recorded in environment.allocator",
        parse=allocator.parse, default=allocator.DEFAULT, choices=allocator.NAMES,
        sweep_default=cpu_profile.default_allocators, support_rules=allocator.SUPPORT_RULES, slug="alloc-{}",
        example="system"),
    Axis(
        "cpu_profile",
        "dashboard: PyTorch's CPU dashboard setup for every config: jemalloc with its MALLOC_CONF, Intel "
        "OpenMP preloaded (KMP_AFFINITY, KMP_BLOCKTIME=1), OMP_NUM_THREADS = the child's cores, cores and memory "
        "pinned (numactl's libnuma), freezing for Inductor inference; each piece, or why it is missing, in the "
        "record's environment.cpu_profile; experiment key `cpu_profile`",
        parse=cpu_profile.parse, kind=ONE_PER_SWEEP, choices=cpu_profile.NAMES, settle=cpu_profile.settle,
        contradiction=lambda options: cpu_profile.contradiction(options.axes.cpu_profile, options.axes.allocator),
        slug="profile-{}", example="dashboard"),
    Axis(
        "cuda_profile",
        "dashboard: PyTorch's CUDA dashboard setup for every config: inference in bf16 and training in "
        "amp (unless --precision), Inductor with CUDA graphs (but for the harness's listed models), TF32 float32 "
        "matmuls, cuDNN as torch leaves it, a cold compile cache; each part in the record's "
        "environment.cuda_profile; experiment key `cuda_profile`",
        parse=cuda_profile.parse, kind=ONE_PER_SWEEP, choices=cuda_profile.NAMES, settle=cuda_profile.settle,
        support_rules=cuda_profile.SUPPORT_RULES, contradiction=cuda_profile.options_contradiction,
        label="cuda-{}", slug="cuda-profile-{}", example="dashboard"),  # the CPU profile's is another setup
    Axis(
        "channels_last",
        "the model and its 4-D inputs in torch.channels_last (the dynamo harness's --channels-last): --channels-last "
        "alone is on, --channels-last=on --channels-last=off sweeps both (default: off); not on XLA, whose tensors "
        "have no strides; experiment key `channels_last`",
        kind=SWITCH, support_rules=channels_last.SUPPORT_RULES, child="memory_format:hook_for"),
    Axis(
        "matmul_precision",
        "float32 matmul precision for torch and torch_xla (repeatable): highest (full float32), high (TF32 on CUDA), "
        "default (torch's medium); unset: the libraries' own (or --cuda-profile's TF32); experiment key "
        "`matmul_precision`",
        parse=matmul_precision.parse, choices=matmul_precision.NAMES, label="matmul-{}", slug="matmul-{}",
        contradiction=lambda options: matmul_precision.disable_tf32_contradiction(
            tuple(options.axes.matmul_precision), options.diagnostics.disable_tf32),
        child="matmul_setup:hook_for", example="high"),
    Axis(
        "deterministic",
        "torch.use_deterministic_algorithms(True) (uninitialised memory filled with NaN, CUBLAS_WORKSPACE_CONFIG on "
        "CUDA) and, where this torch has it, Inductor's `deterministic` setting (the dynamo harness's --deterministic); "
        "two runs of the config's step must then give bitwise-equal outputs (else accuracy fail_nondeterministic): "
        "--deterministic alone is on, --deterministic=on --deterministic=off sweeps both (default: off); not on XLA; "
        "experiment key `deterministic`",
        kind=SWITCH, support_rules=deterministic.SUPPORT_RULES, child="deterministic_mode:hook_for"),
    Axis(
        "batch_invariant",
        "an accuracy mode (the dynamo harness's --batch-invariant): after timing, the compiled forward runs at the "
        "config's batch N, then N/2, N/4, ..., 1, and each sample's output must be bitwise equal to the same "
        "sample's at N (else accuracy fail_batch_invariance, naming the first batch size that differed); Inductor's "
        "batch_invariant setting on CUDA where this torch has it: --batch-invariant alone is on, "
        "--batch-invariant=on --batch-invariant=off sweeps both (default: off); eval only; experiment key "
        "`batch_invariant`",
        kind=SWITCH, support_rules=batch_invariant.SUPPORT_RULES, child="batch_invariance:hook_for"),
    Axis(
        "aot_precompile",
        "Inductor configs' forward compiled ahead of time, saved, loaded in the same child and timed as loaded (the "
        "dynamo harness's --aot-precompile): --aot-precompile alone is on, --aot-precompile=on --aot-precompile=off "
        "sweeps both (default: off); eval, static shapes, the default compile mode; the record's aot_precompile and "
        "metric aot_precompile_load_time; experiment key `aot_precompile`",
        kind=SWITCH, for_config=aot_precompile.for_config, support_rules=aot_precompile.SUPPORT_RULES,
        child="precompiled_step:hook_for"),
    Axis(
        "prompt_tokens",
        "the LLM rows' prompt length in tokens (huggingface; default: the harness's 1000; whisper's prompt is its "
        "audio); set in those configs only; experiment key `prompt_tokens`",
        parse=generation_options.parse_tokens, kind=ONE_PER_SWEEP, type=flag_type(generation_options.parse_tokens),
        metavar="N", label="prompt{}", slug="prompt{}", example=32),
    Axis(
        "new_tokens",
        "the LLM rows' number of new tokens, exactly (huggingface; default: the harness's 2000; whisper: its decoder's "
        "448 positions after the start token, 447); set in those configs only; experiment key `new_tokens`",
        parse=generation_options.parse_tokens, kind=ONE_PER_SWEEP, type=flag_type(generation_options.parse_tokens),
        metavar="N", label="new{}", slug="new{}", example=16),
    Axis(
        "generation_compile",
        "what a compiled LLM row compiles (repeatable): generate (default: the whole generate call under dynamo, as the "
        "dynamo harness) or forward (the model's forward at each decode step, as transformers' static-cache path "
        "compiles it); experiment key `generation_compile`",
        parse=generation_options.parse_compile, choices=generation_options.COMPILE_CHOICES,
        for_config=lambda value, e: value if e.dynamo else None, label="compile-{}", slug="gen-compile-{}",
        example=generation_options.COMPILE_FORWARD),
)
BY_KEY = {axis.key: axis for axis in AXES}
KEYS = tuple(BY_KEY)


def label_text(key: str, value) -> str:
    """How an axis value shows in a backend label: the table's `label` (a switch's, when on, is its label alone);
    True of another axis, or a key the table lacks (a suite's extra axis such as microbench's dtype, or cudagraphs):
    its name; another value of a key the table lacks: the value."""
    axis = BY_KEY.get(key)
    if axis is not None and (axis.kind == SWITCH or value is not True):
        return _formatted(axis.label, value)
    return key if value is True else str(value)


def add_fields(cls):
    """A class decorator under @dataclass: a field per axis (its key, typed Any, defaulting to the value of a config
    that does not set it), after the fields the class declares."""
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    for axis in AXES:
        annotations[axis.key] = "Any"
        setattr(cls, axis.key, axis.unset)
    cls.__annotations__ = annotations
    return cls
