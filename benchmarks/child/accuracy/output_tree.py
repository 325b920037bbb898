"""A model's output as every check sees it (child only; torch is imported by the functions): a detached CPU copy of
any output (`to_cpu`), its plain form for files (`plain`), its leaves named by one path syntax (`leaves`) and two
trees' leaves paired (`pairs`). --verify's comparison (eager_comparison), the harness's judgement (accuracy.check),
the golden check (golden) and --save-output (inputs_outputs) all read outputs through it, so one tensor has one name
in every message and every check copies namedtuples, Hugging Face outputs, sparse tensors and unknown leaves alike.

Paths: the root name (`output` for eval, none for train), then `[key!r]` for a dict key, `[index]` for a list or
tuple item, `.field` for a field of a dataclass-like output (a Hugging Face output, a namedtuple, a plain object):
`output['logits']`, `output.hidden_states[0]`, `grad['fc.weight']`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional


@dataclasses.dataclass
class Node:
    """A dataclass-like output (model output class, namedtuple, plain object) as type name + fields."""

    type_name: str
    fields: dict
    sequence: bool = False  # a namedtuple: its plain form is a tuple of its fields


def to_cpu(obj: Any, memo: Optional[dict] = None) -> Any:
    """A detached CPU copy of any output: tensors cloned (no view keeps a model's memory alive; sparse ones made
    dense), dicts, lists and tuples rebuilt as such, dataclass-like objects as `Node`s, numpy arrays as tensors;
    other leaves as they are."""
    import torch

    memo = {} if memo is None else memo
    if isinstance(obj, torch.Tensor):
        tensor = obj.detach()
        if tensor.layout != torch.strided:
            tensor = tensor.to_dense()
        return tensor.to("cpu", copy=True)
    if id(obj) in memo:  # cycles in plain objects
        return memo[id(obj)]
    if isinstance(obj, (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size)):
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):  # before dict: HF outputs are both
        node = memo[id(obj)] = Node(type(obj).__name__, {})
        node.fields.update((f.name, to_cpu(getattr(obj, f.name), memo)) for f in dataclasses.fields(obj))
        return node
    if isinstance(obj, dict):
        return {key: to_cpu(value, memo) for key, value in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return Node(type(obj).__name__, {name: to_cpu(getattr(obj, name), memo) for name in obj._fields}, True)
    if isinstance(obj, (list, tuple)):
        items = [to_cpu(item, memo) for item in obj]
        return items if isinstance(obj, list) else tuple(items)
    if type(obj).__module__ == "numpy":
        import numpy as np

        if isinstance(obj, np.ndarray):
            return torch.from_numpy(obj.copy())
        return obj.item() if hasattr(obj, "item") else obj
    if hasattr(obj, "__dict__") and not callable(obj):
        node = memo[id(obj)] = Node(type(obj).__name__, {})
        node.fields.update((key, to_cpu(value, memo)) for key, value in vars(obj).items())
        return node
    return obj


def plain(tree: Any, seen: Optional[set] = None) -> Any:
    """A CPU tree (`to_cpu`'s) in plain containers only, for files (torch.load(weights_only=True), safetensors'
    metadata): a namedtuple's node as a tuple, any other node as a dict of its fields but the None ones (as a Hugging
    Face output's own keys() leaves them out); a leaf that is not a tensor or a plain value as its repr."""
    import torch

    seen = set() if seen is None else seen
    if isinstance(tree, torch.Tensor) or tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    if id(tree) in seen:  # a cycle of plain objects
        return repr(tree)
    seen = seen | {id(tree)}
    if isinstance(tree, Node):
        if tree.sequence:
            return tuple(plain(value, seen) for value in tree.fields.values())
        return {key: plain(value, seen) for key, value in tree.fields.items() if value is not None}
    if isinstance(tree, dict):
        return {key: plain(value, seen) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        items = [plain(item, seen) for item in tree]
        return items if isinstance(tree, list) else tuple(items)
    return repr(tree)


def leaves(tree: Any, path: str = "") -> dict:
    """A CPU tree as {path: leaf}, every path in the syntax above (lists and tuples alike)."""
    import torch

    if isinstance(tree, torch.Tensor):
        return {path: tree}
    if isinstance(tree, Node):
        items = [(f"{path}.{key}", value) for key, value in tree.fields.items()]
    elif isinstance(tree, dict):
        items = [(f"{path}[{key!r}]", value) for key, value in tree.items()]
    elif isinstance(tree, (list, tuple)):
        items = [(f"{path}[{index}]", value) for index, value in enumerate(tree)]
    else:
        return {path: tree}
    found = {}
    for where, value in items:
        found.update(leaves(value, where))
    return found


@dataclasses.dataclass
class Pairs:
    """Two trees' leaves side by side: (path, expected leaf, actual leaf) where both have the path, in the expected
    tree's order, and the paths only one of them has."""

    matched: list
    missing: list  # in the expected tree only
    extra: list  # in the actual tree only


def pairs(expected: Any, actual: Any, root: str = "") -> Pairs:
    want, got = leaves(expected, root), leaves(actual, root)
    return Pairs([(where, leaf, got[where]) for where, leaf in want.items() if where in got],
                 [where for where in want if where not in got], [where for where in got if where not in want])
