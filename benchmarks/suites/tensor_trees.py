"""A model's inputs as the suites give them (BenchmarkModel's example_inputs and example_kwargs): nested tuples,
lists and dicts of tensors, mapped, cast or moved tensor by tensor with the structure kept. The suites build with
these and the child runs with them. Child only: imports torch."""

from __future__ import annotations

import torch


def map_tensors(tree, fn):
    """`fn` applied to every tensor in a nested structure of tuples, lists and dicts (same structure back)."""
    if isinstance(tree, torch.Tensor):
        return fn(tree)
    if isinstance(tree, (list, tuple)):
        mapped = [map_tensors(item, fn) for item in tree]
        return type(tree)(mapped) if not hasattr(tree, "_fields") else type(tree)(*mapped)
    if isinstance(tree, dict):
        return type(tree)((key, map_tensors(value, fn)) for key, value in tree.items())
    return tree


def cast_tree(tree, dtype):
    """Every floating-point tensor of a nested structure cast to `dtype`; integer and boolean tensors (indices,
    masks) kept."""
    return map_tensors(tree, lambda tensor: tensor.to(dtype) if tensor.is_floating_point() else tensor)


def move(tree, device):
    """Move every tensor in a nested structure of tuples, lists and dicts."""
    return map_tensors(tree, lambda tensor: tensor.to(device))
