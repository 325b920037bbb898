"""The accuracy rule `--verify` judges a config by: the dynamo harness's, per (suite, model, precision, test,
accelerator, freezing). Pure Python (no torch); docs/accuracy.md.

The harness's per-model lists are data, each naming where it was read (config/harness_accuracy.yaml); its numbers
are the table config/tolerances.py ACCURACY; the way they combine is the harness's get_tolerance_and_cosine_flag of
each suite, written here in our words:
(a case in quotes is a value of the table, the others are lists, each with its table value)
- torchbench: "default". Under float16 or any autocast: freezing_even_higher (with --freezing), else
  higher_fp16, else even_higher, else "half". Under bfloat16: higher_bf16 (higher_bf16_xpu on xpu). Training on
  cuda/xpu: the cosine list ("train_gpu", judged by cosine), even_higher, else "train_gpu".
- huggingface: training: higher_training (and higher_max_autotune_training under max-autotune), else "train";
  inference: higher_inference_cpu on the CPU, higher_inference, else "eval".
- timm: inference: higher_freezing with --freezing, else "eval"; training: even_higher (and
  even_higher_max_autotune under max-autotune), higher (and higher_amp under autocast), else "train".
- any other suite (dummy, faults, torchvision, files, scripts, microbench): TorchBench's cases, no lists.
`--accuracy-tolerance` (also spelled `--verify-tolerance`) replaces the tolerance, never the lists.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Optional

from benchmarks import features
from benchmarks.config import inductor_settings, tolerances

DATA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness_accuracy.yaml")
TORCHBENCH, HUGGINGFACE, TIMM = "torchbench", "huggingface", "timm"
HARNESS_SUITES = (TORCHBENCH, HUGGINGFACE, TIMM)
# Our mode names that turn on Inductor's max_autotune, which two lists depend on.
MAX_AUTOTUNE_MODES = ("max-autotune", "max-autotune-no-cudagraphs")


@functools.lru_cache(maxsize=None)
def harness_lists() -> dict:
    """suite -> list key -> (where it comes from, frozenset of model names): the harness's suites, then our own
    test suites' lists (`own_suites`, which exercise the rule without TorchBench)."""
    import yaml

    with open(DATA_FILE, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    suites = dict(data["suites"], **(data.get("own_suites") or {}))
    return {suite: {key: (entry["from"], frozenset(entry["models"] or ())) for key, entry in body["lists"].items()}
            for suite, body in suites.items()}


@dataclasses.dataclass(frozen=True)
class Rule:
    """What judges one config. Each `*_from` is None when it does not apply, else where the rule comes from."""

    suite: str
    model: str
    tolerance: float
    tolerance_from: str  # "torchbench default", "torchbench.yaml tolerance.higher_bf16", "--accuracy-tolerance" ...
    cosine_from: Optional[str] = None  # judged by cosine similarity, fp64 or not
    larger_multiplier_from: Optional[str] = None  # same()'s use_larger_multiplier_for_smaller_tensor
    non_deterministic_from: Optional[str] = None  # fail_accuracy / eager_two_runs_differ count as pass
    skip_from: Optional[str] = None  # not checked at all: pass_due_to_skip
    skip_eager_comparison_from: Optional[str] = None  # eager runs not compared: pass_due_to_skip after the runs
    freezing: bool = False  # Inductor's freezing (inference): with bfloat16, same()'s force_max_multiplier may apply

    @property
    def cosine(self) -> bool:
        return self.cosine_from is not None

    @property
    def larger_multiplier(self) -> bool:
        return self.larger_multiplier_from is not None

    @property
    def non_deterministic(self) -> bool:
        return self.non_deterministic_from is not None


class _Lists:
    """One suite's lists, asked by key: `where(key)` is the list's source when the model is on it."""

    def __init__(self, suite: str, model: str):
        self.suite, self.model = suite, model
        self.lists = harness_lists().get(suite, {})

    def where(self, key: str) -> Optional[str]:
        source, models = self.lists.get(key, (None, frozenset()))
        return source if self.model in models else None


def _dtypes(precision, accelerator) -> tuple:
    """(the dtype a model is cast to, the dtype autocast runs in) of a precision, each None where it has none: as its
    feature's declaration says (the declared hook `precision_dtypes`)."""
    found = [dtypes(precision, accelerator) for dtypes in features.declared("precision_dtypes")]
    return found[0] if found else (None, None)


def _torchbench(lists: _Lists, precision, test, accelerator, freezing) -> tuple:
    """(tolerance, where it comes from, cosine source or None)."""
    table = tolerances.ACCURACY[TORCHBENCH]
    cast, autocast = _dtypes(precision, accelerator)
    half = cast == "float16" or autocast
    if half:
        cases = (("freezing_even_higher", freezing), ("higher_fp16", True), ("even_higher", True))
        return _first_listed(lists, table, cases) or _default(table["half"])
    bf16 = cast == "bfloat16"
    found = bf16 and _first_listed(lists, table, (("higher_bf16", True), ("higher_bf16_xpu", accelerator == "xpu")))
    if found:
        return found
    if test == "train" and accelerator in ("cuda", "xpu"):
        if lists.where("cosine"):
            return table["train_gpu"].value, table["train_gpu"].source, lists.where("cosine")
        return _first_listed(lists, table, (("even_higher", True),)) or _default(table["train_gpu"])
    return _default(table["default"])


def _huggingface(lists: _Lists, precision, test, accelerator, max_autotune) -> tuple:
    table = tolerances.ACCURACY[HUGGINGFACE]
    if test == "train":
        cases = (("higher_training", True), ("higher_max_autotune_training", max_autotune))
    else:
        cases = (("higher_inference_cpu", accelerator == "cpu"), ("higher_inference", True))
    return _first_listed(lists, table, cases) or _default(table[test])


def _timm(lists: _Lists, precision, test, accelerator, freezing, max_autotune) -> tuple:
    table = tolerances.ACCURACY[TIMM]
    if test == "train":
        amp = _dtypes(precision, accelerator)[1] is not None
        cases = (("even_higher", True), ("even_higher_max_autotune", max_autotune), ("higher", True),
                 ("higher_amp", amp))
    else:
        cases = (("higher_freezing", freezing),)
    return _first_listed(lists, table, cases) or _default(table[test])


def _first_listed(lists: _Lists, table: dict, cases) -> Optional[tuple]:
    """The first of `cases` ((list key, whether it applies)) whose list names the model: its table value."""
    for key, applies in cases:
        if applies and lists.where(key):
            return table[key].value, lists.where(key), None
    return None


def _default(entry: tolerances.Tolerance) -> tuple:
    return entry.value, entry.source, None


def rule(suite: str, model: str, precision: Optional[str], test: str, accelerator: str, freezing: bool = False,
         max_autotune: bool = False, override: Optional[float] = None) -> Rule:
    """The rule for a config of `model` in `suite` at `precision` (None: fp32), `test` (eval/train) on
    `accelerator`; `freezing` (Inductor's, inference) and `max_autotune` select lists of their own;
    `override` (--accuracy-tolerance) replaces the tolerance."""
    lists = _Lists(suite, model)
    if suite == HUGGINGFACE:
        tolerance, source, cosine = _huggingface(lists, precision, test, accelerator, max_autotune)
    elif suite == TIMM:
        tolerance, source, cosine = _timm(lists, precision, test, accelerator, freezing, max_autotune)
    else:
        tolerance, source, cosine = _torchbench(lists, precision, test, accelerator, freezing)
        if suite != TORCHBENCH:
            source = source.replace("torchbench default", f"TorchBench's default (the {suite} suite is not the "
                                                          f"harness's)")
    if override is not None:
        tolerance, source = override, tolerances.ACCURACY_FLAG
    return Rule(suite=suite, model=model, tolerance=tolerance, tolerance_from=source, cosine_from=cosine,
                larger_multiplier_from=lists.where("larger_multiplier"),
                non_deterministic_from=lists.where("non_deterministic"),
                skip_from=lists.where("skip_large_models"),
                skip_eager_comparison_from=lists.where("skip_eager_not_deterministic") if test == "train" else None,
                freezing=freezing)


def for_experiment(suite: str, model: str, experiment, override: Optional[float] = None) -> Rule:
    """`rule` for an ExperimentConfig: freezing is Inductor's (eval only, as the harness's --freezing)."""
    settings = inductor_settings.settings_of(getattr(experiment, "inductor_config", None))
    freezing = experiment.dynamo == "inductor" and experiment.test == "eval" and settings.get("freezing") is True
    max_autotune = getattr(experiment, "compile_mode", None) in MAX_AUTOTUNE_MODES
    return rule(suite, model, experiment.precision, experiment.test, experiment.accelerator, freezing,
                max_autotune, override)
