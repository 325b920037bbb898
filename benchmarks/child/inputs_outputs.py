"""A config's inputs and outputs as diagnostics see them: fresh random inputs per timed iteration
(--randomize-input) and the saved output of each timed repeat (--save-output). torch inside the functions."""

from __future__ import annotations

from typing import Any

from benchmarks.child import tensor_layout
from benchmarks.child.accuracy import output_tree


def save_output(files, index: int, output: Any) -> None:
    """--save-output: the CPU copy of a timed repeat's last output, output-<config>-<repeat>.pt."""
    import torch

    path = files.path("output", "pt", index)
    torch.save(output_tree.plain(output_tree.to_cpu(output)), path)  # plain: torch.load(weights_only=True) reads it
    files.add_artifact("output", path, index)


def randomized(tree, generator):
    """A copy of `tree` whose floating-point tensors hold fresh standard-normal values (same shape, dtype,
    device and memory layout: channels-last stays channels-last); other leaves are kept. Drawn on the CPU in
    float32 (float64 stays float64), then cast, so every float dtype works and eager and XLA configs get the same
    values."""
    import torch

    from benchmarks.suites.tensor_trees import map_tensors

    def fresh(tensor):
        if not tensor.is_floating_point():
            return tensor
        draw_dtype = torch.float64 if tensor.dtype == torch.float64 else torch.float32
        return tensor_layout.like(tensor, torch.randn(tuple(tensor.shape), generator=generator, dtype=draw_dtype))

    return map_tensors(tree, fresh)


class RandomInputs:
    """Hands each iteration its inputs: the example inputs until `refill`, then one fresh random set per
    iteration (made by `refill`, before the timed run starts)."""

    def __init__(self, args: tuple, kwargs: dict, seed: int):
        import torch

        self.template = (args, kwargs)
        self.generator = torch.Generator().manual_seed(seed)
        self.sets = [self.template]
        self.next = 0

    def refill(self, count: int) -> None:
        self.sets = [(randomized(self.template[0], self.generator), randomized(self.template[1], self.generator))
                     for _ in range(count)]
        self.next = 0

    def __call__(self) -> tuple:
        inputs = self.sets[self.next % len(self.sets)]
        self.next += 1
        return inputs
