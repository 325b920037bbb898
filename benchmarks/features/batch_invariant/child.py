"""--batch-invariant in the child (the `batch_invariant` axis's hook, config/axes.py): an accuracy mode. After the timed
runs, the config's forward (compiled as timed) runs on its example inputs at the config's batch N, then on their
first N/2, N/4, ..., 1 rows (every input tensor with N rows in dimension 0 cut; others as they are), and each
output tensor with N rows must give, at each smaller batch b, bits equal to its first b rows at N. The first batch
size that differs is the accuracy `fail_batch_invariance`, naming it and the largest difference; output leaves
without the batch dimension are not compared (the record counts them). Inductor's `batch_invariant` setting is set
for CUDA Inductor configs where this torch has one (April 2026 on; elsewhere the record's `absent` says why).
The record's `batch_invariance` says what ran. Child only: torch inside the functions."""

from __future__ import annotations

import logging
from typing import Optional

from benchmarks.child import torch_internals
from benchmarks.child.accuracy import bitwise
from benchmarks.child.accuracy.output_tree import Pairs, leaves
from benchmarks.child.config_hooks import Hook, HookRun, Verdict
from benchmarks.config import backend_registry
from benchmarks.features import batch_invariant
from benchmarks.features.compile_options import child as compile_options_child
from benchmarks.features.dynamic import child as dynamic_child
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.records import RecordStatus

log = logging.getLogger("benchmarks.features.batch_invariant.child")

REASON = ("--batch-invariant's check: the compiled forward at each smaller batch against the same samples at the "
          "config's batch, compared bit by bit")


def hook_for(value: bool, experiment) -> Optional[Hook]:
    return BatchInvariance() if value else None


def inductor_batch_invariant(experiment) -> Optional[bool]:
    """Inductor's `batch_invariant` setting turned on for a CUDA Inductor config: True; None elsewhere, or where this
    torch has no such setting (marked absent, with why)."""
    if not backend_registry.uses_inductor(experiment.dynamo) or experiment.accelerator != "cuda":
        return None
    return compile_options_child.turn_on(torch_internals.INDUCTOR_BATCH_INVARIANT, "batch_invariant")


def rows(output, batch_size: int) -> dict:
    """The output's tensor leaves with `batch_size` rows in dimension 0, by path (output_tree's)."""
    import torch

    return {where: leaf for where, leaf in leaves(output, "output").items()
            if isinstance(leaf, torch.Tensor) and leaf.dim() > 0 and leaf.shape[0] == batch_size}


def against_full(full: dict, smaller, batch_size: int) -> bitwise.Difference:
    """The leaves of the output at `batch_size` against the first `batch_size` rows of the same leaves at N."""
    got = leaves(smaller, "output")
    return bitwise.compare_pairs(Pairs([(where, leaf[:batch_size], got[where]) for where, leaf in full.items()
                                        if where in got], [where for where in full if where not in got], []))


class BatchInvariance(Hook):
    def __init__(self):
        self.state: dict = {}  # the record's `batch_invariance`
        self.differences: dict = {}  # batch size -> bitwise.Difference, in the order checked

    def setup(self, run: HookRun) -> None:
        self.state["inductor_batch_invariant"] = inductor_batch_invariant(run.experiment)

    def check(self, run: HookRun) -> None:
        """The forward at N, then at N/2, ..., 1: each sample's output against its own at N."""
        batch_size = run.bm.batch_size
        self.state.update(batch_size=batch_size, batch_sizes=batch_invariant.batch_sizes(batch_size))
        why = self._cannot_check(run)
        if why:
            self.state["unchecked_because"] = why
            run.record.setdefault("warnings", []).append(f"--batch-invariant: not checked: {why}")
            log.warning("--batch-invariant: not checked: %s", why)
            return
        run.channel.set_phase("verify")
        forward = _Forward(run)
        full = rows(forward.at(batch_size), batch_size)
        self.state["leaves_compared"] = len(full)
        if not full:
            self.state["unchecked_because"] = f"no output tensor has {batch_size} rows in dimension 0"
            return
        for size in self.state["batch_sizes"]:
            self.differences[size] = against_full(full, forward.at(size), size)
        log.info("--batch-invariant: %s", self.message() or "every smaller batch bitwise equal")

    def _cannot_check(self, run: HookRun) -> Optional[str]:
        if run.experiment.test != "eval":
            return "an accuracy mode of inference (--test=eval)"
        if not self.state["batch_sizes"]:
            return f"batch size {run.bm.batch_size}: no smaller batch to compare"
        if not rows((run.args, run.kwargs), run.bm.batch_size):
            return f"no input tensor has the batch size {run.bm.batch_size} in dimension 0"
        return None

    def first_differing(self) -> Optional[int]:
        return next((size for size, found in self.differences.items() if not found.identical), None)

    def message(self) -> Optional[str]:
        """What differed: the first batch size, and where the largest difference was; None when nothing did."""
        first = self.first_differing()
        if first is None:
            return None
        text = (f"batch {first} differs from batch {self.state['batch_size']}: "
                f"{self.differences[first].describe()}")
        worst = max(self.differences, key=lambda size: self.differences[size].largest)
        if worst != first and self.differences[worst].largest > self.differences[first].largest:
            text += f"; the largest difference, {self.differences[worst].largest:.6g}, at batch {worst}"
        return text

    def finish(self, record: dict) -> Optional[Verdict]:
        if self.differences:
            self.state["compared"] = {str(size): dict(found.figures(), identical=found.identical)
                                      for size, found in self.differences.items()}
            self.state["first_differing_batch_size"] = self.first_differing()
        record["batch_invariance"] = self.state
        if not self.differences or record.get("status") != RecordStatus.OK:
            return None
        message = self.message()
        if message is None:
            return Verdict(AccuracyStatus.PASS, None, REASON + ": equal")
        return Verdict(AccuracyStatus.FAIL_BATCH_INVARIANCE, message, REASON)


class _Forward:
    """The config's eval step (compiled as it was timed) on the example inputs cut to a batch size."""

    def __init__(self, run: HookRun):
        from benchmarks.child import measured_loop

        self.run, self.inputs = run, (run.args, run.kwargs)
        self.step = measured_loop.make_step(run.bm, run.experiment, run.module, run.args, run.kwargs,
                                            fullgraph=run.diag.fullgraph, inputs=lambda: self.inputs)

    def at(self, size: int):
        """The output on the first `size` rows of every batched input, on the CPU."""
        from benchmarks.child import backends, measured_loop
        from benchmarks.child.accuracy.output_tree import to_cpu

        full = self.run.bm.batch_size
        self.inputs = (dynamic_child.resized(self.run.args, full, size), dynamic_child.resized(self.run.kwargs, full,
                                                                                                  size))
        backends.seed_everything(self.run.experiment)
        _, _, output = measured_loop.timed_run(self.step, self.run.experiment, 1)
        return to_cpu(output)
