"""What only some configs add to the child's run (config_run.ConfigRun): the axes' hooks (each feature's child
half, features/<feature>/child.py's `hook_for`), --save-golden, --golden, --verify and the export backends, each a
`Hook` that joins the run's phases, as diagnostics
join its timed runs (child/diagnostics.py). `for_config` lists a config's hooks; the run calls each phase's
method on every hook, in that order. Importing this module is cheap (torch is imported where a hook needs it).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable, Optional, Protocol, Union

from benchmarks.child.accuracy import golden, verify
from benchmarks.child.feature_methods import feature_child
from benchmarks.config import axes, backend_registry
from benchmarks.results import accuracy_status
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.record import Record

log = logging.getLogger("benchmarks.child.config_hooks")


class HookRun(Protocol):
    """What a hook may read of the config's run it is handed (config_run.ConfigRun), each with its meaning; of
    these it may set only MAY_SET. A hook adds its own keys to `record` (tests/child/test_config_hooks.py holds every
    hook, here and in each feature's child half, to this)."""

    options: Any  # the child's RunOptions (config/run_options.py): the flags, read only
    model_config: dict  # the model's row: suite_name, model_name and the suite's own keys
    experiment: Any  # the config as it runs (ExperimentConfig), resolved in setup; its batch size from load on
    record: Record  # the record being written (results/record.py): a hook sets its own declared keys (its figures
    # through record["metrics"].add_samples), an undeclared one is refused at that line
    channel: Any  # the parent's channel: set_phase(name) before work that can fail (a crash names the phase)
    diag: Any  # the config's diagnostics (child/diagnostics.py): .files names and keeps its artifacts
    memory: Any  # the peak-memory counter (child/device_memory.py): leave_out(bytes) that are not the config's
    bm: Any  # the config's built model (suites.BenchmarkModel), from load on
    module: Any  # the config's module on its device, from load on
    args: tuple  # the example positional inputs on the device, from load on
    kwargs: dict  # the example keyword inputs on the device, from load on
    step: Any  # the timed step (measured_loop's), from compile on
    exported: Any  # may set (compile): what the steps call instead of the module (export, AOT precompile)
    eager_step: Any  # may set (before_timing): eager's step, timed beside the config's (--speedup=paired)
    new_model: Callable  # new_model(experiment): the suite's model as built, before any hook's `built`
    build: Callable  # build(experiment): a model as the hooks give it (the config's, --verify's eager ones)
    example_step: Callable  # example_step(): the config's step made again on the example inputs
    release_model: Callable  # release_model(): let the config's model, steps and inputs go (after a failure)


# The attributes of HookRun a hook may set; every other one it only reads.
MAY_SET = ("exported", "eager_step")


@dataclasses.dataclass(frozen=True)
class Verdict:
    """An accuracy status a hook's own check decided, with the record's accuracy_message (what failed) and
    accuracy_reason (which check judged) when it is the record's verdict (`deciding`)."""

    status: str
    message: Optional[str] = None
    reason: Optional[str] = None


def deciding(decided: list) -> Optional[Verdict]:
    """The record's verdict among the hooks' (`finish`'s, in the hooks' order; None: decided nothing): the first
    that fails (neither a pass nor not_checked), else the last pass (--verify's, whose check says the most), else
    the last one."""
    found = [d if isinstance(d, Verdict) else Verdict(d) for d in decided if d is not None]
    failing = [v for v in found if not accuracy_status.passed(v.status) and v.status != AccuracyStatus.NOT_CHECKED]
    passing = [v for v in found if accuracy_status.passed(v.status)]
    return (failing[:1] or passing[-1:] or found[-1:] or [None])[0]


class Hook:
    """A part of a config's run; each method is called at its point of the run (`run`: the ConfigRun, seen through
    HookRun: what a hook may read, and the two it may set), the defaults do nothing. A hook that raises fails the config in the phase it was called in, as the run's own
    code would."""

    def setup(self, run: HookRun) -> None:
        """Last in the setup phase, before any of the config's models is built."""

    def built(self, bm):
        """Every model built for the config (its own, --verify's eager ones): the model to use."""
        return bm

    def compile(self, run: HookRun) -> None:
        """The compile phase, before the config's step is made."""

    def step_inputs(self, run: HookRun, inputs):
        """Each step made (the timed one is the last): its input source (None: the example inputs)."""
        return inputs

    def before_timing(self, run: HookRun) -> None:
        """After the warm cache is filled, before the warm-up and timed runs."""

    def after_timing(self, run: HookRun) -> None:
        """Right after the timed runs, before the run writes their figures."""

    def check(self, run: HookRun) -> None:
        """After the timed runs and their figures: the checks, which never hide them."""

    def after_failure(self, run: HookRun) -> None:
        """The config failed (not skipped, its device still usable): what can still run for the record."""

    def finish(self, record: dict) -> Union[str, Verdict, None]:
        """Always last, after a failure too: the hook's keys; an accuracy status it decided (a Verdict: with its
        message and reason), or None."""
        return None


class GoldenSave(Hook):
    """--save-golden: the eager result stored first, from a model of its own (freed before the config's is built)."""

    def __init__(self, root: str):
        self.root = root

    def setup(self, run: HookRun) -> None:
        run.channel.set_phase("reference")  # eager runs: a crash here is eager's (accuracy_status.derive)
        run.record["golden"] = golden.save(self.root, run.model_config, run.experiment, run.new_model)


class GoldenCheck(Hook):
    """--golden: every model built starts from the entry's weights and inputs; after timing, the config's result
    is checked against the entry's; its failures are the record's golden status."""

    def __init__(self, options):
        self.options = options  # GoldenOptions
        self.checker: Optional[golden.GoldenCheck] = None  # from setup on

    def setup(self, run: HookRun) -> None:
        self.checker = golden.GoldenCheck(self.options.check_dir, run.model_config, run.experiment, self.options.atol,
                                          self.options.rtol)

    def built(self, bm):
        return self.checker.apply(bm) if self.checker else bm

    def before_timing(self, run: HookRun) -> None:
        self.checker.before_timing(run.experiment, run.step)

    def check(self, run: HookRun) -> None:
        run.channel.set_phase("verify")
        self.checker.check(run.experiment, run.module, run.step)

    def finish(self, record: dict) -> Optional[str]:
        if self.checker is not None:
            self.checker.finish(record)
        return None


class Verify(Hook):
    """--verify (child/accuracy/verify.py): its eager references run after timing, so nothing of them is in the config's
    figures; its failures are verification codes and accuracy statuses, never the config's failure."""

    def __init__(self, options):
        self.options = options  # VerifyOptions
        self.verifier: Optional[verify.Verifier] = None  # from setup on

    def setup(self, run: HookRun) -> None:
        self.verifier = verify.Verifier(self.options, run.build, run.channel.set_phase,
                                        suite=run.model_config["suite_name"], model=run.model_config["model_name"])

    def before_timing(self, run: HookRun) -> None:
        self.verifier.before_timing(run.experiment, run.module, run.step)
        run.memory.leave_out(self.verifier.kept_bytes())  # its references and copies are not the config's memory

    def check(self, run: HookRun) -> None:
        self.verifier.compute_reference(run.experiment)
        self.verifier.check(run.experiment, run.module, run.step, fresh_step=run.example_step)

    def after_failure(self, run: HookRun) -> None:
        if self.verifier is None or self.verifier.referenced:
            return
        # eager's own failure or disagreement still comes first in the accuracy status (the harness runs eager
        # first); the config's model is let go before eager's are built
        run.release_model()
        self.verifier.compute_reference(run.experiment)

    def finish(self, record: dict) -> Optional[str]:
        return self.verifier.finish(record) if self.verifier is not None else None


class Export(Hook):
    """--dynamo=export / export_nonstrict / aot_inductor: the steps call the exported program (or AOTInductor's
    package) instead of the module (child/exporting.py); the record's `export` says how it went."""

    def compile(self, run: HookRun) -> None:
        from benchmarks.child import exporting

        run.exported = exporting.prepare(run.experiment, run.module, run.args, run.kwargs, run.diag.files, run.record)


def axis_hooks(experiment) -> list:
    """The hooks the experiment's axes ask for, in the table's order: each feature's child half's
    `hook_for(value, experiment)` (features/<feature>/child.py, where it defines one), given the config's value of
    the feature's axis; an axis whose value asks nothing gives none."""
    hooks = []
    for axis in axes.AXES:
        hook_for = getattr(feature_child(axis.feature), "hook_for", None)
        hook = hook_for(getattr(experiment, axis.key), experiment) if hook_for else None
        if hook is not None:
            hooks.append(hook)
    return hooks


def for_config(options, experiment) -> list:
    """The hooks of a config run with `options` (RunOptions), in the order the run calls them: the axes' first (what
    an axis sets, a matmul precision or a memory layout, is in place before --save-golden's model and --verify's
    references are built, and the inputs vary before the checks put the examples back), then the requests': a golden
    entry is saved before one is read, --verify's check runs before the golden one."""
    hooks = axis_hooks(experiment)
    if options.golden.save_dir:
        hooks.append(GoldenSave(options.golden.save_dir))
    if backend_registry.exports(experiment.dynamo):
        hooks.append(Export())
    if options.verify.enabled:
        hooks.append(Verify(options.verify))
    if options.golden.check_dir:
        hooks.append(GoldenCheck(options.golden))
    return hooks
