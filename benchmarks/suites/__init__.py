"""Model suites behind one small interface.

A suite module declares, as plain literals at its top level, `SUITE_NAME` (its --suite-name), `DESCRIPTION` (one
line: --help's and docs/layout.md's) and `ORDER` (a number: its place in the lists), and defines `SUITE`, an instance
of a `Suite` subclass. The suites are found by discovery: `declarations` reads those three literals from every module
on this package's path without importing any (so --help lists them without importing a suite, let alone torch), and
`load_suite` imports the one asked for. Listing models must not import
torch (the parent stays light); `build` runs in the child only. A suite registers its own flags
(`flags`: `config.flags.Flag`s, each saying who reads it) and reads them from the `flags` argument of its
methods: the whole parsed command line (RunOptions.parsed_flags, an argparse.Namespace of every flag).
How to add a suite: docs/architecture.md, "Adding a suite".

The library suites:

`huggingface` (its models, batch sizes and sequence lengths in `suites/huggingface_models.yaml`) and `timm` list
their models without importing their packages, and build them offline in the child (random weights, from config;
nothing is downloaded), fed the dynamo harness's inputs: huggingface's rules (sequence length by name, decoder
inputs, labels) in `suites/huggingface_inputs.py` (a test checks the data file's lengths against them), timm's size
from its own `resolve_data_config` (test size in eval) and the harness's image recipe in `timm_suite.py`; each
records what ran in `model_info`. `BenchmarkModel.after_move` lets a suite fix a model after it is moved to its
device (tied weights on XLA); `eval_needs_grad` runs eval without `torch.no_grad()` (TorchBench's maml, named in its
`util/env_check.USE_GRAD_IN_INFERENCE`). `Suite.named_models` lets a library suite accept names beyond its list:
`runner/model_selection.select_models` passes it every plain-name `-k` pattern that matched no listed model (timm and
huggingface ask a child interpreter for the library's names). TorchBench builds disable torch.hub's download (a
missing checkpoint is a skip record naming the file and the command that fetches it) and force the hub libraries
offline.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import re
from pathlib import Path
from typing import Any, Callable, Optional

from benchmarks.config import axes, tiers
from benchmarks.config.train_steps import DEFAULT_TRAIN_STEP

DECLARED = ("SUITE_NAME", "DESCRIPTION", "ORDER")  # what a suite module declares, as literals


@dataclasses.dataclass(frozen=True)
class SuiteDeclaration:
    """What a suite module declares of itself, read without importing it."""

    name: str
    description: str
    order: int
    module: str  # its import name


# A declaration's line: `NAME = <literal>` at the start of a line, the literal on that line.
_DECLARATION = re.compile(r"^(" + "|".join(DECLARED) + r") *= *(.+?) *(?:#.*)?$", re.M)


def _declared_literals(path: Path) -> dict:
    """The DECLARED names a module assigns one-line literals to at its top level (none: it is not a suite module).
    Read by a line's pattern, not by parsing the module: the child reads them too, before its memory baseline."""
    text = path.read_text(encoding="utf-8")
    if "SUITE_NAME" not in text:
        return {}
    found = {}
    for name, value in _DECLARATION.findall(text):
        try:
            found[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValueError(f"{path}: {name} must be a literal on its line") from None
    return found


@functools.lru_cache(maxsize=None)
def declarations() -> tuple:
    """Every suite module's declaration, found on this package's path (a module that assigns SUITE_NAME), in
    their ORDER, then by name. A module missing DESCRIPTION or ORDER, or two declaring one name, is an error.
    Read once per process (a process that adds a folder to the path does so before: tests' sitecustomize)."""
    found = []
    for folder in __path__:
        for path in sorted(Path(folder).glob("*.py")):
            values = _declared_literals(path)
            if not values or path.name == "__init__.py":
                continue
            missing = [name for name in DECLARED if name not in values]
            if missing:
                raise ValueError(f"suite module {path} declares SUITE_NAME but not {', '.join(missing)}")
            found.append(SuiteDeclaration(values["SUITE_NAME"], values["DESCRIPTION"], values["ORDER"],
                                          f"{__name__}.{path.stem}"))
    names = [declared.name for declared in found]
    doubled = sorted({name for name in names if names.count(name) > 1})
    if doubled:
        raise ValueError(f"suite names declared by two modules: {', '.join(doubled)}")
    return tuple(sorted(found, key=lambda declared: (declared.order, declared.name)))


def suite_names() -> list:
    return [declared.name for declared in declarations()]


def load_suite(name: str) -> "Suite":
    return _loaded({declared.name: declared for declared in declarations()}[name])


def all_suites() -> list:
    return [_loaded(declared) for declared in declarations()]


def _loaded(declared: SuiteDeclaration) -> "Suite":
    suite = importlib.import_module(declared.module).SUITE
    if suite.name != declared.name:
        raise ValueError(f"{declared.module} declares SUITE_NAME {declared.name!r} but its SUITE is named {suite.name!r}")
    return suite


class ModelSkipped(Exception):
    """Raised by `Suite.build` when a model cannot run an experiment; the child records a `skip`."""


@dataclasses.dataclass
class Generation:
    """What a model run by `generate` instead of a forward is asked for (child/generation.py): the harness's LLM
    rows. Its inputs are BenchmarkModel.example_kwargs (prompt ids and mask, or whisper's features)."""

    new_tokens: int  # exactly (min_new_tokens = max_new_tokens)
    pad_token_id: int  # the end token, as the harness sets it
    prompt_tokens: Optional[int] = None  # None: the prompt is not tokens (whisper's audio)
    facts: dict = dataclasses.field(default_factory=dict)  # for the record's `generation`

    def out_of_memory(self, exc: BaseException, batch: int) -> BaseException:
        """An out-of-memory error again (its type: the record's `oom`), its message naming the batch and lengths."""
        prompt = f"{self.prompt_tokens} prompt tokens" if self.prompt_tokens is not None else "its audio"
        named = type(exc)(f"out of memory generating at batch {batch}, {prompt} + {self.new_tokens} new tokens: {exc}")
        return named.with_traceback(exc.__traceback__)


@dataclasses.dataclass
class BenchmarkModel:
    """What a suite hands the child: a module on its base device and example inputs for it."""

    module: Any
    example_inputs: tuple
    batch_size: Optional[int]
    example_kwargs: dict = dataclasses.field(default_factory=dict)
    # output -> scalar loss for training; None means the runner's generic reduction.
    loss_fn: Optional[Callable] = None
    # parameters -> optimizer; None means SGD(lr=0.01), cheap in memory for big models.
    optimizer_fn: Optional[Callable] = None
    # Per-model limit of upstream's verification_code on the mean relative error (config/tolerances.py
    # MEAN_REL_ERROR: its numbers); None: the default there. --verification-tolerance overrides it. The record's
    # accuracy is judged by the harness's rule instead (config/accuracy_rule.py).
    tolerance: Optional[float] = None
    # False for models whose eager output is random by design (dropout in training, a fault model): --verify
    # skips the determinism check and the harness's rule, and compares with `tolerance` (accuracy_reference
    # mean_rel_error), or, without one, does not compare (VERIFIER_SKIPPED). Not the harness's non-deterministic
    # list, which --verify reads itself (config/accuracy_rule.py).
    deterministic: bool = True
    # True for models whose eval step itself takes gradients (TorchBench's maml: eval_in_nograd() is False):
    # their eval runs without torch.no_grad().
    eval_needs_grad: bool = False
    # Called with the module once it is on its target device (e.g. to tie shared weights again); None: nothing.
    after_move: Optional[Callable] = None
    # output -> scalar loss under the harness's training step (--train-step=harness: the suite's compute_loss in the
    # dynamo harness); None means torch._dynamo.testing.reduce_to_scalar_loss, the harness's generic reduction.
    harness_loss: Optional[Callable] = None
    # Extra facts for the record (e.g. a FLOP count), merged into record["model_info"].
    info: dict = dataclasses.field(default_factory=dict)
    # Set for a model the child runs by `generate` (timed as generation: child/generation.py); None: a forward.
    generation: Optional[Generation] = None


class Suite:
    name = ""
    # The training step of this suite's train configs unless --train-step says otherwise (config/train_steps.py's TRAIN_STEPS):
    # the suites the dynamo harness (and so PyTorch's dashboard) runs take its step.
    default_train_step = DEFAULT_TRAIN_STEP
    # Suite-specific flags (declared for every suite, whichever runs; a child is given those it reads).
    flags: tuple = ()

    def list_models(self, flags) -> list:
        """Model configs, e.g. {"suite_name": "dummy", "model_name": "mlp"}; no torch import."""
        raise NotImplementedError

    def named_models(self, names: list, flags) -> list:
        """Configs of models outside `list_models` that the user named exactly (-k NAME matching no listed model):
        a suite that builds any model of a library (timm, huggingface) accepts the library's names; UsageError
        (with close matches) for a name it does not know. Parent side, no torch import. Default: none."""
        return []

    def matches(self, model_config: dict, experiment) -> bool:
        """Whether the pair is a config at all (a model built for one value of an extra axis, such as a
        dtype, pairs only with experiments of that value); pairs that are not are left out silently."""
        return True

    def skip_reason(self, model_config: dict, experiment, flags) -> Optional[str]:
        """Why this model cannot run this experiment (the parent writes a skip record), or None."""
        return None

    def resolve(self, model_config: dict, experiment) -> tuple:
        """(the experiment as this model runs it, why its precision is not the one asked for or the suite's default,
        or None): the precision, the training step and the keys only some models take (`precision_for`,
        `train_step_for`, `experiment_for`, `precision_reason`), resolved in this one place. The plan resolves every
        config of a sweep here (runner/plan.model_config) and its child is given the result; a config run by hand
        resolves itself here (child/config_run.py). Parent side, no torch; idempotent: a resolved config resolves
        to itself. A suite overrides the parts, not this."""
        why = self.precision_reason(model_config, experiment)
        resolved = self.experiment_for(model_config, experiment.with_(
            precision=self.precision_for(model_config, experiment),
            train_step=self.train_step_for(model_config, experiment)))
        return resolved, why

    def precision_for(self, model_config: dict, experiment) -> str:
        """The precision this model runs for `experiment` (whose precision is None for the suite's default):
        a suite may have a default of its own, and models that can't run a precision
        (benchmarks/features/precision/__init__.py). Parent side, no torch."""
        return experiment.precision or axes.BY_KEY["precision"].default

    def train_step_for(self, model_config: dict, experiment) -> Optional[str]:
        """The training step this model runs for `experiment` (whose train_step is None for the suite's default):
        None for eval (docs/runner.md, "Training step"). Parent side, no torch; idempotent (`resolve`)."""
        if experiment.test != "train":
            return None
        return experiment.train_step or self.default_train_step

    def experiment_for(self, model_config: dict, experiment):
        """The experiment as this model runs it, for the keys only some models use (the LLM rows' lengths and what
        they compile: set to their values there, null elsewhere); UsageError (exit 2) for a value the model can't
        take. Parent side, no torch; idempotent (`resolve`). Default: those keys null."""
        return experiment.with_(**dict.fromkeys(axes.ONLY_SOME_MODELS))

    def precision_reason(self, model_config: dict, experiment) -> Optional[str]:
        """Why `precision_for` gives this model another precision than `experiment` asks for (None: the suite's
        default) or than the suite's default for most models, e.g. a default it can't run; None when it doesn't.
        The record's `precision_reason`. Parent side, no torch."""
        return None

    def tiers(self) -> dict:
        """Tier number -> list of model names (benchmarks/config/tiers.py, the one source)."""
        return tiers.of_suite(self.name)

    def dry_run_lines(self, flags) -> list:
        """What --dry-run prints about the suite's models before the configs (e.g. the models found per
        script), one line each; parent side, no torch."""
        return []

    def extra_axes(self, flags) -> dict:
        """Extra experiment keys this suite sweeps, name -> list of values (e.g. a dtype)."""
        return {}

    def build(self, model_config: dict, experiment, device: str, flags) -> BenchmarkModel:
        """Build the model and its inputs on `device` (the plain accelerator device); child only."""
        raise NotImplementedError


def model_config(suite: str, name: str, **extra) -> dict:
    config = {"suite_name": suite, "model_name": name}
    config.update({k: v for k, v in extra.items() if v is not None})
    return config
