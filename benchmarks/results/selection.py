"""Which records a tool looks at: the selection flags, declared once for every tool that selects records
(aggregate.py, compare.py, history.py, result_analyzer.py), and one matcher over measurements
(benchmarks/results/measurement.py).

Models: -k/--filter and --filter-by-tier add up (a union, as upstream and the runner); -x/--exclude and
--exclude-by-tier win. Accelerator: an accelerator kind (cpu, cuda, tpu) or a case-insensitive search in
accelerator_model. Test: inference (eval) or training (train). Backend: the measurement's backend label.
Axes: upstream's --xla and --dynamo, the value the record's experiment holds (None: eager); ours (--precision, ...),
the value of that experiment axis among the measurement's labels.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from typing import Optional

from benchmarks.config import axes as config_axes
from benchmarks.config import experiment_config, tiers
from benchmarks.config.axis import flag_type
from benchmarks.config.flags import Group, field_flags
from benchmarks.plumbing.cli_support import UsageError

# --test takes upstream aggregate's names and the record's own.
TESTS = {"inference": "eval", "training": "train"}
TEST_ALIASES = {"inference": "inference", "training": "training", "eval": "inference", "train": "training"}
ALL = "all"
# Every experiment axis of ours (config/axes.py) is a selection flag of its own (--precision, --channels-last, ...):
# its values parsed as the runner parses them, matched against the value each record ran (a record without the
# key ran the axis's default: no precision is fp32, no channels_last is off; an axis with no default matches none).
AXES = {axis.key: axis for axis in config_axes.AXES}
# Upstream's experiment axes a record carries as the runner was given them (--xla, --dynamo: the runner's own flags,
# their values parsed as it parses them), selected by the value the record ran; None is no XLA, no dynamo (eager).
UPSTREAM_AXES = ("xla", "dynamo")
SELECTED_AXES = UPSTREAM_AXES + tuple(AXES)


def tier(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a tier is a number, not {text!r}") from None


def test_name(text: str) -> str:
    try:
        return TEST_ALIASES[text.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from inference, training)") from None


def flags(test_default: Optional[str] = "inference", accelerator_default: str = "the only one in the files",
          backend: bool = False, axes: bool = False, group: str = "which records") -> list:
    """The selection flags (config/flags.Flag), in the --help section `group`; `axes`: also a flag per experiment
    axis of AXES (axis_flags)."""
    section = Group(group)
    found = [section.arg("--accelerator", metavar="NAME",
                         help="accelerator: case-insensitive substring or regex of the records' accelerator_model "
                              "(v100, a100, a6000, 'Xeon', 'H100|A100'), an accelerator kind (cpu, cuda, tpu), or "
                              f"'all'. Default: {accelerator_default}")]
    test_help = f"(default: {test_default})" if test_default else "(default: both)"
    found.append(section.arg("--test", type=test_name, default=test_default, metavar="{inference,training}",
                             help=f"inference (eval) or training (train) records {test_help}"))
    if backend:
        found.append(section.arg("--backend", repeatable=True, default=(), metavar="BACKEND",
                                 help="keep records of this backend label (eager, inductor, openxla+dynamo, "
                                      "inductor+int8wo, ...; repeatable)"))
    return found + (axis_flags(group) if axes else []) + model_flags(group)


def upstream_value(key: str, value):
    """An upstream axis's value as the selection compares it: None for none (upstream's "None"), eager for
    --dynamo's None too, XLA's runtime in capitals."""
    value = experiment_config.parse_none(value) if isinstance(value, str) else value
    if key == "dynamo" and value == "eager":
        return None
    return value.upper() if key == "xla" and isinstance(value, str) else value


def _upstream_type(key: str, parse):
    def select(text: str):
        return None if key == "dynamo" and text.strip().lower() == "eager" else upstream_value(key, parse(text))

    select.__name__ = key
    return select


def axis_flags(group: str) -> list:
    """A selection flag per experiment axis the runner sweeps: upstream's --xla and --dynamo (made from the runner's
    own flags), and each of ours (config/axes.py): the one place they are made from the tables, each value parsed as
    the runner parses it, kept when a record ran one of them."""
    from benchmarks.config import run_options

    section = Group(group)
    runner = {name: flag for name, flag in field_flags(run_options.RunOptions)}
    found = [section.arg(runner[key].name, repeatable=True, default=(), metavar=runner[key].metavar,
                         type=_upstream_type(key, runner[key].type),
                         help=f"keep records whose experiment {key} is {runner[key].metavar} ({UPSTREAM_HELP[key]}; "
                              "repeatable)") for key in UPSTREAM_AXES]
    for axis in AXES.values():
        ran = "its default, " + flag_word(axis.default) if axis.default is not None else "none"
        shown = axis.metavar or "VALUE"
        found.append(section.arg(axis.flag, repeatable=True, default=(), metavar=shown,
                                 type=flag_type(axis.parse, axis.choices or ()), bare=axis.flag_bare,
                                 help=f"keep records whose experiment {axis.key} is {shown} (e.g. "
                                      f"{flag_word(axis.example)}; repeatable; a record without the key ran {ran})"))
    return found


UPSTREAM_HELP = {"xla": "None: not on XLA", "dynamo": "None or eager: no dynamo; inductor, openxla, aot_eager, "
                                                 "export, ..."}


def model_flags(group: str = "which records") -> list:
    """-k/--filter, -x/--exclude, --filter-by-tier, --exclude-by-tier: which models (any tool that selects
    models by name and tier)."""
    section = Group(group)
    return [section.arg("--filter", short="-k", repeatable=True, default=(), metavar="REGEX",
                        help="keep models whose name matches (case-insensitive; repeatable; adds to tiers)"),
            section.arg("--exclude", short="-x", repeatable=True, default=(), metavar="REGEX",
                        help="drop models whose name matches (case-insensitive; repeatable)"),
            section.arg("--filter-by-tier", repeatable=True, type=tier, default=(), metavar="N",
                        help="keep the models of tier N of their suite (repeatable)"),
            section.arg("--exclude-by-tier", repeatable=True, type=tier, default=(), metavar="N",
                        help="drop the models of tier N of their suite (repeatable)")]


def compile_regex(pattern: str, what: str) -> "re.Pattern":
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise UsageError(f"{what}: bad regular expression {pattern!r}: {exc}") from None


def accelerator_regex(pattern: str) -> "re.Pattern":
    """Case-insensitive search in accelerator_model. A plain name that starts or ends with a digit
    must not touch another digit there, so a100 finds "A100-SXM4-40GB" but not "RTX A1000"."""
    if re.fullmatch(r"[A-Za-z0-9 _\-]+", pattern):
        text = re.escape(pattern)
        if pattern[0].isdigit():
            text = r"(?<![0-9])" + text
        if pattern[-1].isdigit():
            text += r"(?![0-9])"
        return re.compile(text, re.IGNORECASE)
    return compile_regex(pattern, "--accelerator")


def tier_members(suites: list, wanted: list) -> set:
    """{(suite, model)} of the `wanted` tiers of `suites`; a tier no suite has is a UsageError."""
    members = set()
    for suite in suites:
        for number in wanted:
            members.update((suite, name) for name in tiers.of_suite(suite).get(number, ()))
    for number in wanted:
        if not any(number in tiers.of_suite(suite) for suite in suites):
            known = "; ".join(f"{s}: {', '.join(map(str, sorted(tiers.of_suite(s)))) or 'none'}" for s in suites)
            raise UsageError(f"no suite in the selected records has tier {number} (tiers: {known or 'none known'})")
    return members


def flag_word(value) -> str:
    """An axis value as its flag takes it: a switch's on/off."""
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


@dataclasses.dataclass
class Selection:
    """The selection flags' values (the same names as the flags); `matcher` turns them into a predicate."""

    accelerator: Optional[str] = None  # None or "all": every accelerator
    test: Optional[str] = None  # inference or training; None: both
    backend: list = dataclasses.field(default_factory=list)
    filter: list = dataclasses.field(default_factory=list)
    exclude: list = dataclasses.field(default_factory=list)
    filter_by_tier: list = dataclasses.field(default_factory=list)
    exclude_by_tier: list = dataclasses.field(default_factory=list)
    axes: dict = dataclasses.field(default_factory=dict)  # axis -> the values to keep (AXES' flags)

    @classmethod
    def of(cls, options) -> "Selection":
        """From parsed flags (or any object with their names); missing ones select everything."""
        names = [field.name for field in dataclasses.fields(cls) if field.name != "axes"]
        found = {name: getattr(options, name) for name in names if getattr(options, name, None) is not None}
        axes = {axis: list(getattr(options, axis)) for axis in SELECTED_AXES if getattr(options, axis, None)}
        return cls(**found, axes=axes)

    def text(self) -> str:
        """The flags of this selection that choose models or axis values, as typed (`-k mlp --compile-mode=max-autotune`):
        what a "matched nothing" line names."""
        words = [f"--accelerator={self.accelerator}"] if self.accelerator else []
        words += [f"--test={self.test}"] if self.test else []
        words += [f"-k {p}" for p in self.filter] + [f"-x {p}" for p in self.exclude]
        words += [f"--filter-by-tier={n}" for n in self.filter_by_tier]
        words += [f"--exclude-by-tier={n}" for n in self.exclude_by_tier]
        words += [f"--backend={b}" for b in self.backend]
        for key, values in self.axes.items():
            flag = AXES[key].flag if key in AXES else "--" + key
            words += [f"{flag}={flag_word(value)}" for value in values]
        return " ".join(words)

    def matcher(self, suites):
        """A predicate over measurements (or anything with their label attributes: suite, model_name,
        accelerator, accelerator_model, test, backend, labels). `suites`: the suites of the records it will
        see (for the tiers)."""
        suites = sorted(set(suites))
        keep = [compile_regex(p, "--filter") for p in self.filter]
        drop = [compile_regex(p, "--exclude") for p in self.exclude]
        keep_tiers = tier_members(suites, self.filter_by_tier) if self.filter_by_tier else set()
        drop_tiers = tier_members(suites, self.exclude_by_tier) if self.exclude_by_tier else set()
        accel = self.accelerator if self.accelerator and self.accelerator.lower() != ALL else None
        regex = accelerator_regex(accel) if accel else None
        test = TESTS[self.test] if self.test else None
        backends = set(self.backend)
        choose_models = bool(keep or self.filter_by_tier)

        def axis_value(m, labels: dict, key: str):
            if key in UPSTREAM_AXES:  # a Measurement's experiment, or the labels of a stored config (history)
                experiment = getattr(m, "experiment", None)
                return upstream_value(key, (experiment if isinstance(experiment, dict) else labels).get(key))
            value = labels.get(key)
            return AXES[key].ran(None if value == "" else value)

        def matches(m) -> bool:
            if regex and not (m.accelerator == accel.lower() or regex.search(m.accelerator_model)):
                return False
            if test and m.test != test:
                return False
            if backends and m.backend not in backends:
                return False
            if self.axes:
                labels = m.labels
                if not all(axis_value(m, labels, key) in values
                           for key, values in self.axes.items()):
                    return False
            name, place = m.model_name or "", (m.suite, m.model_name)
            if choose_models and not (any(p.search(name) for p in keep) or place in keep_tiers):
                return False
            return not (any(p.search(name) for p in drop) or place in drop_tiers)

        return matches

    def select(self, items: list, view=lambda item: item) -> list:
        """The items whose measurement (`view(item)`) matches."""
        matches = self.matcher(view(item).suite for item in items)
        return [item for item in items if matches(view(item))]
