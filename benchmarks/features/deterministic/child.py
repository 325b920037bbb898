"""--deterministic in the child (the `deterministic` axis's hook, config/axes.py): set in the setup phase, before any
model of the config is built, so the timed runs and --verify's references all run under it:
`torch.use_deterministic_algorithms(True)` (torch's `fill_uninitialized_memory`, on by default, then fills every
new tensor's memory with NaN, which costs time), `CUBLAS_WORKSPACE_CONFIG` on CUDA unless the environment sets it,
and, for Inductor configs, Inductor's `deterministic` setting where this torch has one (torch 2.10 on; elsewhere
the record's `absent` says why, as for every private API: child/torch_internals.py).

Our check on top of the harness's timing: after the timed runs, the config's step runs twice from the same seed,
inputs and weights (training: the weights and buffers put back between the runs and after them); outputs that are
not bitwise equal are the accuracy `fail_nondeterministic`, naming the largest difference. An operator without a
deterministic implementation makes torch raise, naming it: the config's error record, and the record's
`determinism.no_deterministic_implementation` names the operator. Child only: torch inside the functions."""

from __future__ import annotations

import logging
import os
import re
from typing import Optional

from benchmarks.child import torch_internals
from benchmarks.child.accuracy import bitwise
from benchmarks.child.config_hooks import Hook, HookRun, Verdict
from benchmarks.config import backend_registry
from benchmarks.features import deterministic
from benchmarks.features.compile_options import child as compile_options_child
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.records import RecordStatus

log = logging.getLogger("benchmarks.features.deterministic.child")

RUNS = 2
# torch's error for an operator with no deterministic implementation: "put_ does not have a deterministic
# implementation, but you set 'torch.use_deterministic_algorithms(True)'..." (possibly inside dynamo's wrapping).
_NO_IMPLEMENTATION = re.compile(r"([\w.:]+) does not have a deterministic implementation")


def hook_for(value: bool, experiment) -> Optional[Hook]:
    return DeterministicMode() if value else None


def operator_without_implementation(message: str) -> Optional[str]:
    """The operator a failure's message says has no deterministic implementation, or None."""
    found = _NO_IMPLEMENTATION.search(message or "")
    return found.group(1) if found else None


def inductor_deterministic(experiment) -> Optional[bool]:
    """Inductor's `deterministic` setting turned on for an Inductor config: True; None off Inductor, or where this
    torch has no such setting (marked absent, with why)."""
    if not backend_registry.uses_inductor(experiment.dynamo):
        return None
    return compile_options_child.turn_on(torch_internals.INDUCTOR_DETERMINISTIC, "deterministic")


class DeterministicMode(Hook):
    def __init__(self):
        self.state: dict = {}  # the record's `determinism`
        self.difference: Optional[bitwise.Difference] = None  # the check's, once it ran

    def setup(self, run: HookRun) -> None:
        import torch

        if run.experiment.accelerator == "cuda":
            os.environ.setdefault(deterministic.CUBLAS_VARIABLE, deterministic.CUBLAS_WORKSPACE)
        torch.use_deterministic_algorithms(True)
        self.state = {
            "use_deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "fill_uninitialized_memory": bool(torch.utils.deterministic.fill_uninitialized_memory),
            "cublas_workspace_config": (os.environ.get(deterministic.CUBLAS_VARIABLE)
                                        if run.experiment.accelerator == "cuda" else None),
            "inductor_deterministic": inductor_deterministic(run.experiment),
        }

    def check(self, run: HookRun) -> None:
        """The config's step twice, from the same seed, inputs and weights: are the outputs bitwise equal?"""
        from benchmarks.child import backends, measured_loop
        from benchmarks.child.accuracy.verify_outputs import collect, root_name

        run.channel.set_phase("verify")
        weights = _snapshot(run.module) if run.experiment.test == "train" else None
        outputs = []
        for _ in range(RUNS):
            if weights is not None:
                run.module.load_state_dict(weights)
            backends.seed_everything(run.experiment)
            _, _, output = measured_loop.timed_run(run.example_step(), run.experiment, 1)
            outputs.append(collect(run.experiment, run.module, output))
            del output
        if weights is not None:  # the weights as timing left them, for the checks after this one
            run.module.load_state_dict(weights)
        self.difference = bitwise.compare(outputs[0], outputs[1], root_name(run.experiment))
        log.info("--deterministic: %s", "two runs bitwise equal" if self.difference.identical
                 else "two runs differ: " + self.difference.describe())

    def after_failure(self, run: HookRun) -> None:
        error = run.record.get("error") or {}
        operator = operator_without_implementation(error.get("message"))
        if operator:
            self.state["no_deterministic_implementation"] = operator
            log.error("--deterministic: %s has no deterministic implementation in this torch", operator)

    def finish(self, record: dict) -> Optional[Verdict]:
        if self.difference is not None:
            self.state["runs_compared"] = RUNS
            self.state["identical"] = self.difference.identical
            if not self.difference.identical:
                self.state.update(self.difference.figures())
        record["determinism"] = self.state
        if self.difference is None or record.get("status") != RecordStatus.OK:
            return None
        reason = ("--deterministic's check: two runs of the config's step from the same seed, inputs and weights, "
                  "compared bit by bit")
        if self.difference.identical:
            return Verdict(AccuracyStatus.PASS, None, reason + ": equal")
        return Verdict(AccuracyStatus.FAIL_NONDETERMINISTIC, f"two runs differ: {self.difference.describe()}",
                       reason)


def _snapshot(module) -> dict:
    """A copy of the module's weights and buffers, to start each run from (a train step changes them)."""
    return {name: value.detach().clone() if hasattr(value, "detach") else value
            for name, value in module.state_dict().items()}
