"""--channels-last in the child (the `channels_last` axis's hook, config/axes.py): every model built for the config
(its own, --verify's eager references) has its module and 4-D inputs converted to `torch.channels_last`, as the
dynamo harness does; the layout is asserted on the module and on every input set the timed step is handed; the
record's `memory_format` says what was converted. Child only: torch inside the functions."""

from __future__ import annotations

from typing import Optional

from benchmarks.child import tensor_layout
from benchmarks.child.config_hooks import Hook, HookRun


class LayoutLost(RuntimeError):
    """A tensor that should be channels-last is not, where the timed step gets it."""


def hook_for(value: bool, experiment) -> Optional[Hook]:
    return ChannelsLast() if value else None


def to_channels_last(tensor):
    """A 4-D tensor's values in channels-last order (the same tensor where it is already); others as they are."""
    import torch

    if tensor.dim() != 4 or tensor_layout.is_channels_last(tensor):
        return tensor
    return tensor.detach().contiguous(memory_format=torch.channels_last).requires_grad_(tensor.requires_grad)


def four_d(tree) -> list:
    """The 4-D tensors of a nested structure of tuples, lists and dicts, with where they are (`args[0]`, ...)."""
    import torch

    found = []

    def walk(node, where):
        if isinstance(node, torch.Tensor):
            if node.dim() == 4:
                found.append((where, node))
        elif isinstance(node, (list, tuple)):
            for index, item in enumerate(node):
                walk(item, f"{where}[{index}]")
        elif isinstance(node, dict):
            for key, item in node.items():
                walk(item, f"{where}[{key!r}]")

    walk(tree, "")
    return found


def check(tensors: list, what: str) -> None:
    """LayoutLost naming the first 4-D tensor of `tensors` ((where, tensor) pairs) that is not channels-last."""
    for where, tensor in tensors:
        if not tensor_layout.is_channels_last(tensor):
            raise LayoutLost(f"--channels-last: {what} {where} (shape {tuple(tensor.shape)}, strides "
                             f"{tensor.stride()}) is not channels-last where the timed step gets it")


class CheckedInputs:
    """An input source whose every new input set is checked to be channels-last when the step first takes it (a set
    handed out again is not checked again: the cost in the timed loop is one lookup)."""

    def __init__(self, source):
        self.source = source
        self.checked: set = set()

    def __call__(self) -> tuple:
        inputs = self.source()
        if id(inputs) not in self.checked:
            check(four_d(inputs), "input")
            self.checked.add(id(inputs))
        return inputs


class ChannelsLast(Hook):
    """The module and 4-D inputs of every model built in channels-last; the layout asserted before timing (module,
    example inputs) and at each new input set the step takes (--randomize-input, --dynamic)."""

    def __init__(self):
        self.parameters = self.inputs = 0  # 4-D ones converted, in the config's own model (the last built)
        self.source: Optional[CheckedInputs] = None

    def built(self, bm):
        import torch

        bm.module = bm.module.to(memory_format=torch.channels_last)
        bm.example_inputs = tuple(_mapped(tuple(bm.example_inputs)))
        bm.example_kwargs = dict(_mapped(dict(bm.example_kwargs)))
        self.parameters = sum(1 for p in bm.module.parameters() if p.dim() == 4)
        self.inputs = len(four_d((bm.example_inputs, bm.example_kwargs)))
        return bm

    def step_inputs(self, run: HookRun, inputs):
        if inputs is None:  # the example inputs: checked once before timing, nothing added to the timed loop
            return None
        self.source = CheckedInputs(inputs)
        return self.source

    def before_timing(self, run: HookRun) -> None:
        check([(f"parameter {name}", p) for name, p in run.module.named_parameters() if p.dim() == 4], "module")
        check(four_d((run.args, run.kwargs)), "example input")

    def finish(self, record: dict) -> Optional[str]:
        record["memory_format"] = {"format": "channels_last", "parameters_4d": self.parameters,
                                   "inputs_4d": self.inputs,
                                   "input_sets_checked": len(self.source.checked) if self.source else 0}
        if not (self.parameters or self.inputs):
            record.setdefault("warnings", []).append(
                "--channels-last changed nothing: the model has no 4-D weight or input")
        return None


def _mapped(tree):
    from benchmarks.suites.tensor_trees import map_tensors

    return map_tensors(tree, to_channels_last)
