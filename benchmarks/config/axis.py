"""One experiment axis as a feature declares it (benchmarks/features/<feature>/__init__.py's AXES): its flag, its
values, its default and how it shows, with the kinds of axis and the switch's on/off words. config/axes.py gathers
the features' axes into the table. No torch: the parent plans with it.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Callable, Optional, Union

from benchmarks.plumbing.cli_support import close_matches

# An axis's kind: a repeatable flag whose values are multiplied (the matrix), one value for the whole sweep, or a
# switch: a matrix axis of on and off (`--flag` alone is on; `--flag=on --flag=off` sweeps both; the record holds
# true or false, off being its default).
MATRIX_AXIS, ONE_PER_SWEEP, SWITCH = "matrix axis", "one per sweep", "switch"
# What an eager config holds of an axis: its own value, as any config (EAGER_VARIES: precision, quantization), none
# (EAGER_LACKS: torch.compile's own, the compile mode), or always the default (EAGER_DEFAULT: eager runs static shapes
# and is never paired). A config is measured against the eager config of the same model and of the axes eager varies
# (results/against_eager.py), and the dashboard's baseline line shows no value of an axis eager lacks.
EAGER_VARIES, EAGER_LACKS, EAGER_DEFAULT = "varies", "lacks", "default"
SWITCH_WORDS = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False, "no": False, "0": False}


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
    on_eager: str = EAGER_VARIES  # what an eager config holds of the axis (EAGER_VARIES, EAGER_LACKS, EAGER_DEFAULT)
    # A key only some models take (the LLM rows' lengths and what they compile): null in every config but those whose
    # suite sets it for the model (suites/__init__.py's Suite.experiment_for), so no other config's record holds it.
    only_some_models: bool = False
    # How a value shows in the slug (log and artifact file names): a format string or a function.
    slug: Union[str, Callable[[Any], str]] = "{}"
    # The feature (benchmarks/features/<feature>/) that declares the axis, set by the discovery
    # (features.declared_axes); what the axis means in the child is that feature's child.py (its hook_for).
    feature: Optional[str] = None
    # A value other than the default: --help's and the selection flags' example, and the tests' round trip.
    example: Any = None
    # The key in the record (results/record_schema.py's `experiment` section is made from these): its JSON type
    # (config/record_key.py's TYPES; a switch's: flag) and what it means, in a line.
    record_type: str = "text"
    meaning: str = ""

    def __post_init__(self):
        if self.kind == SWITCH:  # a switch's defaults: off, on/off words, named by its key when on
            named = self.key.replace("_", "-")
            for name, value in (("parse", parse_switch), ("default", False), ("example", True), ("metavar", "on|off"),
                                ("type", flag_type(parse_switch)), ("label", named), ("slug", named)):
                if getattr(self, name) in (None, "{}"):
                    object.__setattr__(self, name, value)
            if self.record_type == "text":  # the record holds true or false
                object.__setattr__(self, "record_type", "flag")
        if self.parse is None:
            raise ValueError(f"axis {self.key}: parse is required")
        if self.on_eager not in (EAGER_VARIES, EAGER_LACKS, EAGER_DEFAULT):
            raise ValueError(f"axis {self.key}: on_eager must be {EAGER_VARIES}, {EAGER_LACKS} or {EAGER_DEFAULT}, "
                             f"not {self.on_eager!r}")

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
        if self.at_default(value):
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
        return not self.at_default(value)

    def ran(self, value):
        """The value a config ran, read from a record: a record without the key (null) ran the default."""
        return self.default if value is None else value

    def at_default(self, value) -> bool:
        """Null, false, or the value a record without the key ran (config/axes.py's at_default, the one rule)."""
        return value is None or value is False or (self.default is not None and value == self.default)

    def label_of(self, value) -> str:
        return _formatted(self.label, value)

    def slug_text(self, value) -> str:
        return _formatted(self.slug, value)



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
