"""--dynamic: the batch sizes a config's iterations cycle through, inputs resized to each (made before the
timed runs), the batch dimension marked dynamic (backed) or unbacked, and what the record says about it
(benchmarks/features/dynamic/__init__.py); the `dynamic` axis's hook (DynamicBatch). Child only: torch inside the
functions."""

from __future__ import annotations

import inspect
from typing import Optional

from benchmarks.child import torch_internals
from benchmarks.child.config_hooks import Hook, HookRun
from benchmarks.features.dynamic import DEFAULT_DYNAMIC

# How each --dynamic value marks the batch dimension: backed (torch._dynamo.mark_dynamic: dynamo knows its value and
# may guard on it) or unbacked (torch._dynamo.decorators.mark_unbacked: data-dependent, never 0 or 1, asserts at
# run time); `all` marks nothing (torch.compile(dynamic=True)).
BACKED, UNBACKED = "backed", "unbacked"
MARKS = {"batch": BACKED, "unbacked": UNBACKED}
# mark_unbacked's arguments that newer torches take (not 2.9): the size hint Inductor tunes for (the requested batch)
# and one symbol shared by every input's batch dimension (else each input's is a symbol of its own).
UNBACKED_ARGUMENTS = ("hint_override", "shape_id")
SHAPE_ID = "batch"

# The batch varies by this fraction either side of the requested size (the issue's ±20%).
SPREAD = 0.2
# Batches of 0 and 1 are specialized by dynamo (a recompile of their own): never run them.
SMALLEST = 2


def batch_cycle(batch_size: int) -> list:
    """The sizes iterations cycle through: the requested one, 20% fewer, 20% more (distinct, at least 2),
    so their mean stays near the requested size and per-iteration times stay comparable."""
    sizes = []
    for size in (batch_size, round(batch_size * (1 - SPREAD)), round(batch_size * (1 + SPREAD))):
        size = max(SMALLEST, size)
        if size not in sizes:
            sizes.append(size)
    return sizes


def resized(tree, old: int, new: int):
    """A copy of `tree` whose tensors with `old` rows in dimension 0 have `new` rows: the first rows, or the
    rows repeated, in the template's memory layout (channels-last stays channels-last); other leaves are kept."""
    from benchmarks.child import tensor_layout
    from benchmarks.suites.tensor_trees import map_tensors

    def rows(tensor):
        if tensor.dim() == 0 or tensor.shape[0] != old or new == old:
            return tensor
        repeats = -(-new // old)
        values = tensor.detach().repeat(repeats, *([1] * (tensor.dim() - 1))) if repeats > 1 else tensor.detach()
        return tensor_layout.like(tensor, values[:new])

    return map_tensors(tree, rows)


def unbacked_arguments(batch_size: int) -> dict:
    """mark_unbacked's keyword arguments for the batch dimension that this torch takes (UNBACKED_ARGUMENTS); those
    it lacks are named in the record's `absent` (`unbacked_arguments`), and the dimension is marked without them."""
    import torch

    wanted = {"hint_override": batch_size, "shape_id": SHAPE_ID}
    taken = set(inspect.signature(torch._dynamo.decorators.mark_unbacked).parameters)
    lacking = [name for name in UNBACKED_ARGUMENTS if name not in taken]
    if lacking:
        torch_internals.mark_absent(torch_internals.UNBACKED_ARGUMENTS, "torch._dynamo.decorators.mark_unbacked",
                                    TypeError(f"it takes no {', '.join(lacking)}: Inductor sizes the batch by its "
                                              "fallback hint, and each input's batch is a symbol of its own"))
    return {name: value for name, value in wanted.items() if name in taken}


def mark_batch(tree, batch_size: int, mark: str, unbacked: Optional[dict] = None) -> None:
    """Mark dimension 0 of every tensor with `batch_size` rows dynamic (`mark` BACKED) or unbacked (UNBACKED, with
    mark_unbacked's `unbacked` arguments), so dynamo compiles one graph for all batch sizes instead of one per size."""
    import torch

    if isinstance(tree, torch.Tensor):
        if tree.dim() > 0 and tree.shape[0] == batch_size:
            if mark == UNBACKED:
                torch._dynamo.decorators.mark_unbacked(tree, 0, **(unbacked or {}))
            else:
                torch._dynamo.mark_dynamic(tree, 0)
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            mark_batch(item, batch_size, mark, unbacked)
    elif isinstance(tree, dict):
        for value in tree.values():
            mark_batch(value, batch_size, mark, unbacked)


class VaryingBatch:
    """Hands each iteration its inputs at the next batch size of the cycle, from sets made up front, and
    counts the sizes that ran; `stop()` goes back to the examples (for --verify's check)."""

    def __init__(self, args: tuple, kwargs: dict, batch_size: int, mark: Optional[str]):
        self.batch_size = batch_size
        self.sizes = batch_cycle(batch_size)
        self.mark = mark  # BACKED, UNBACKED, or None (nothing marked)
        self.unbacked = unbacked_arguments(batch_size) if mark == UNBACKED else None
        self.template = (args, kwargs)
        self.sets = [self._at(args, kwargs, size) for size in self.sizes]
        self.next = 0
        self.ran: dict = {}  # batch size -> iterations run at it
        self.varying = True

    def _at(self, args, kwargs, size: int) -> tuple:
        new = (resized(args, self.batch_size, size), resized(kwargs, self.batch_size, size))
        if self.mark:
            mark_batch(new, size, self.mark, self.unbacked)
        return new

    def summary(self) -> dict:
        """The record's `dynamic_shapes`: the sizes of the cycle and the iterations run at each (the recompiles
        they caused are `dynamo_stats.recompiles`, features/compile_options/child.py)."""
        out = {
            "batch_sizes": self.sizes,
            "iterations_by_batch_size": {str(size): count for size, count in sorted(self.ran.items())},
        }
        if self.mark:
            out["batch_dimension"] = self.mark
        if self.unbacked is not None:  # what mark_unbacked was given beyond the dimension (this torch's)
            out["unbacked_arguments"] = dict(self.unbacked)
        return out

    def stop(self) -> None:
        self.varying = False

    def __call__(self) -> tuple:
        if not self.varying:
            return self.template
        inputs = self.sets[self.next % len(self.sets)]
        size = self.sizes[self.next % len(self.sizes)]
        self.ran[size] = self.ran.get(size, 0) + 1
        self.next += 1
        return inputs


class DynamicBatch(Hook):
    """--dynamic: each step's inputs cycle through batch sizes (the batch dimension marked dynamic under `batch`,
    unbacked under `unbacked`); the checks run at the example batch, and the record says which sizes ran."""

    def __init__(self):
        self.varying: Optional[VaryingBatch] = None  # the last step's: the timed one's

    def step_inputs(self, run: HookRun, inputs):
        self.varying = VaryingBatch(run.args, run.kwargs, run.bm.batch_size, MARKS.get(run.experiment.dynamic))
        return self.varying

    def check(self, run: HookRun) -> None:
        run.record["dynamic_shapes"] = self.varying.summary()
        self.varying.stop()  # --verify and --golden check at the example batch


def hook_for(value: str, experiment) -> Optional[Hook]:
    """The `dynamic` axis's hook (child/config_hooks.axis_hooks): static shapes ask nothing of the run."""
    return DynamicBatch() if value != DEFAULT_DYNAMIC else None
