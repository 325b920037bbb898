"""What only some configs add to the child's run (single_config.ConfigRun): --save-golden, --golden, --verify,
--speedup=paired, --dynamic and the export backends, each a `Hook` that joins the run's phases, as diagnostics
join its timed runs (child/diagnostics.py). `for_config` lists a config's hooks; the run calls each phase's
method on every hook, in that order. Importing this module is cheap (torch is imported where a hook needs it).
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
from typing import Optional, Union

from benchmarks.child import dynamic_shapes
from benchmarks.child.accuracy import golden, verify
from benchmarks.config import axes, experiment_config, paired_speedup
from benchmarks.results import accuracy_status
from benchmarks.results.accuracy_status import AccuracyStatus

log = logging.getLogger("benchmarks.child.config_hooks")


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
    """A part of a config's run; each method is called at its point of the run (`run`: the ConfigRun), the
    defaults do nothing. A hook that raises fails the config in the phase it was called in, as the run's own
    code would."""

    def setup(self, run) -> None:
        """Last in the setup phase, before any of the config's models is built."""

    def built(self, bm):
        """Every model built for the config (its own, --verify's eager ones): the model to use."""
        return bm

    def compile(self, run) -> None:
        """The compile phase, before the config's step is made."""

    def step_inputs(self, run, inputs):
        """Each step made (the timed one is the last): its input source (None: the example inputs)."""
        return inputs

    def before_timing(self, run) -> None:
        """After the warm cache is filled, before the warm-up and timed runs."""

    def after_timing(self, run) -> None:
        """Right after the timed runs, before the run writes their figures."""

    def check(self, run) -> None:
        """After the timed runs and their figures: the checks, which never hide them."""

    def after_failure(self, run) -> None:
        """The config failed (not skipped, its device still usable): what can still run for the record."""

    def finish(self, record: dict) -> Union[str, Verdict, None]:
        """Always last, after a failure too: the hook's keys; an accuracy status it decided (a Verdict: with its
        message and reason), or None."""
        return None


class GoldenSave(Hook):
    """--save-golden: the eager result stored first, from a model of its own (freed before the config's is built)."""

    def __init__(self, root: str):
        self.root = root

    def setup(self, run) -> None:
        run.channel.set_phase("reference")  # eager runs: a crash here is eager's (accuracy_status.derive)
        run.record["golden"] = golden.save(self.root, run.model_config, run.experiment, run.new_model)


class GoldenCheck(Hook):
    """--golden: every model built starts from the entry's weights and inputs; after timing, the config's result
    is checked against the entry's; its failures are the record's golden status."""

    def __init__(self, options):
        self.options = options  # GoldenOptions
        self.checker: Optional[golden.GoldenCheck] = None  # from setup on

    def setup(self, run) -> None:
        self.checker = golden.GoldenCheck(self.options.check_dir, run.model_config, run.experiment, self.options.atol,
                                          self.options.rtol)

    def built(self, bm):
        return self.checker.apply(bm) if self.checker else bm

    def before_timing(self, run) -> None:
        self.checker.before_timing(run.experiment, run.step)

    def check(self, run) -> None:
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

    def setup(self, run) -> None:
        self.verifier = verify.Verifier(self.options, run.build, run.channel.set_phase,
                                        suite=run.model_config["suite_name"], model=run.model_config["model_name"])

    def before_timing(self, run) -> None:
        self.verifier.before_timing(run.experiment, run.module, run.step)
        run.memory.leave_out(self.verifier.kept_bytes())  # its references and copies are not the config's memory

    def check(self, run) -> None:
        self.verifier.compute_reference(run.experiment)
        self.verifier.check(run.experiment, run.module, run.step, fresh_step=run.example_step)

    def after_failure(self, run) -> None:
        if self.verifier is None or self.verifier.referenced:
            return
        # eager's own failure or disagreement still comes first in the accuracy status (the harness runs eager
        # first); the config's model is let go before eager's are built
        run.release_model()
        self.verifier.compute_reference(run.experiment)

    def finish(self, record: dict) -> Optional[str]:
        return self.verifier.finish(record) if self.verifier is not None else None


class PairedSpeedup(Hook):
    """--speedup=paired: eager's step on the same module and example inputs, timed just before each timed run of
    the config's (measured_loop.measure), and the record's paired_speedup."""

    def before_timing(self, run) -> None:
        from benchmarks.child import measured_loop

        run.eager_step = measured_loop.make_step(run.bm, run.experiment.with_(dynamo=None), run.module, run.args,
                                                 run.kwargs)

    def after_timing(self, run) -> None:
        metrics = run.record["metrics"]
        run.record["paired_speedup"] = paired_speedup.summarize(metrics["eager_per_iter_time"],
                                                                metrics["per_iter_time"])


class DynamicBatch(Hook):
    """--dynamic: each step's inputs cycle through batch sizes (the batch dimension marked dynamic under `batch`,
    unbacked under `unbacked`); the checks run at the example batch, and the record says which sizes ran."""

    def __init__(self):
        self.varying: Optional[dynamic_shapes.VaryingBatch] = None  # the last step's: the timed one's

    def step_inputs(self, run, inputs):
        self.varying = dynamic_shapes.VaryingBatch(run.args, run.kwargs, run.bm.batch_size,
                                                   dynamic_shapes.MARKS.get(run.experiment.dynamic))
        return self.varying

    def check(self, run) -> None:
        run.record["dynamic_shapes"] = self.varying.summary()
        self.varying.stop()  # --verify and --golden check at the example batch


class Export(Hook):
    """--dynamo=export / export_nonstrict / aot_inductor: the steps call the exported program (or AOTInductor's
    package) instead of the module (child/exporting.py); the record's `export` says how it went."""

    def compile(self, run) -> None:
        from benchmarks.child import exporting

        run.exported = exporting.prepare(run.experiment, run.module, run.args, run.kwargs, run.diag.files, run.record)


def dynamic_batch(value: str, experiment) -> Optional[Hook]:
    """The `dynamic` axis's hook (config/axes.py): static shapes ask nothing of the run."""
    return DynamicBatch() if value != experiment_config.DEFAULT_DYNAMIC else None


def paired_speedup_hook(value: str, experiment) -> Optional[Hook]:
    """The `speedup` axis's hook (config/axes.py): an isolated config asks nothing of the run."""
    return PairedSpeedup() if value == paired_speedup.PAIRED else None


def axis_hooks(experiment) -> list:
    """The hooks the experiment's axes declare (each Axis's `child`: "module:function" under benchmarks/child/, given
    the config's value and the experiment), in the table's order; an axis whose value asks nothing gives none."""
    hooks = []
    for axis in axes.AXES:
        if axis.child:
            module, _, name = axis.child.partition(":")
            hook = getattr(importlib.import_module(f"benchmarks.child.{module}"), name)(getattr(experiment, axis.key),
                                                                                       experiment)
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
    if experiment.dynamo in experiment_config.EXPORT_BACKENDS:
        hooks.append(Export())
    if options.verify.enabled:
        hooks.append(Verify(options.verify))
    if options.golden.check_dir:
        hooks.append(GoldenCheck(options.golden))
    return hooks
