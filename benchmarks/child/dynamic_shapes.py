"""--dynamic: the batch sizes a config's iterations cycle through, inputs resized to each (made before the
timed runs), the batch dimension marked dynamic, and what the record says about it (docs/architecture.md,
"Dynamic shapes and export"). Child only: torch inside the functions."""

from __future__ import annotations

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
    from benchmarks.child.backends import map_tensors

    def rows(tensor):
        if tensor.dim() == 0 or tensor.shape[0] != old or new == old:
            return tensor
        repeats = -(-new // old)
        values = tensor.detach().repeat(repeats, *([1] * (tensor.dim() - 1))) if repeats > 1 else tensor.detach()
        return tensor_layout.like(tensor, values[:new])

    return map_tensors(tree, rows)


def mark_batch_dynamic(tree, batch_size: int) -> None:
    """Mark dimension 0 of every tensor with `batch_size` rows dynamic, so dynamo compiles one graph for all
    batch sizes instead of one per size."""
    import torch

    if isinstance(tree, torch.Tensor):
        if tree.dim() > 0 and tree.shape[0] == batch_size:
            torch._dynamo.mark_dynamic(tree, 0)
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            mark_batch_dynamic(item, batch_size)
    elif isinstance(tree, dict):
        for value in tree.values():
            mark_batch_dynamic(value, batch_size)


class VaryingBatch:
    """Hands each iteration its inputs at the next batch size of the cycle, from sets made up front, and
    counts the sizes that ran; `stop()` goes back to the examples (for --verify's check)."""

    def __init__(self, args: tuple, kwargs: dict, batch_size: int, mark_dynamic: bool):
        self.batch_size = batch_size
        self.sizes = batch_cycle(batch_size)
        self.mark_dynamic = mark_dynamic
        self.template = (args, kwargs)
        self.sets = [self._at(args, kwargs, size) for size in self.sizes]
        self.next = 0
        self.ran: dict = {}  # batch size -> iterations run at it
        self.varying = True

    def _at(self, args, kwargs, size: int) -> tuple:
        new = (resized(args, self.batch_size, size), resized(kwargs, self.batch_size, size))
        if self.mark_dynamic:
            mark_batch_dynamic(new, size)
        return new

    def summary(self) -> dict:
        """The record's `dynamic_shapes`: the sizes of the cycle and the iterations run at each (the recompiles
        they caused are `dynamo_stats.recompiles`, child/compile_settings.py)."""
        return {
            "batch_sizes": self.sizes,
            "iterations_by_batch_size": {str(size): count for size, count in sorted(self.ran.items())},
        }

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

