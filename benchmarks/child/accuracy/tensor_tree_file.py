"""A nested structure of tensors (inputs, outputs, a state dict) in one safetensors file: the tensors by their
path, the structure as JSON in the file's metadata. Reading runs no code from the file (safetensors holds only
tensors and strings), so a golden file from anywhere is safe to open. Child only: torch inside the functions.

Dict keys keep their type (str, int, float, bool, None: JSON holds them as they are; any other key is refused),
and a tensor's name is its path as a JSON list (`["fc.weight"]`, `[0, "mask"]`), so {"a.b": x} and
{"a": {"b": x}}, or {0: x} and {"0": x}, never share a name.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.plumbing import disk_writes

STRUCTURE_KEY = "tree"


class TreeFileError(Exception):
    """The file cannot be read as a tree of tensors; the message says why."""


JSON_KEYS = (str, int, float, bool, type(None))


def encode(tree: Any, path: list, tensors: dict) -> Any:
    """The JSON form of `tree` (output_tree.plain: tensors, dicts, lists, tuples, plain values),
    its tensors moved into `tensors` under their path (the keys and indexes from the root, as JSON)."""
    import torch

    if isinstance(tree, torch.Tensor):
        name = json.dumps(path)
        tensors[name] = tree.detach().cpu().contiguous().clone()  # safetensors refuses shared or strided storage
        return {"tensor": name}
    if isinstance(tree, dict):
        for key in tree:
            if not isinstance(key, JSON_KEYS):
                raise TreeFileError(f"a dict key of type {type(key).__name__} ({str(key)[:60]}) at {json.dumps(path)}:"
                                    " only str, int, float, bool and None keys can be stored")
        return {"dict": [[key, encode(value, path + [key], tensors)] for key, value in tree.items()]}
    if isinstance(tree, (list, tuple)):
        kind = "list" if isinstance(tree, list) else "tuple"
        return {kind: [encode(item, path + [index], tensors) for index, item in enumerate(tree)]}
    return {"value": tree}


def decode(node: Any, tensors: dict) -> Any:
    if not isinstance(node, dict) or len(node) != 1:
        raise TreeFileError(f"unexpected structure entry {str(node)[:60]}")
    (kind, body), = node.items()
    if kind == "tensor":
        if body not in tensors:
            raise TreeFileError(f"the structure names tensor {body!r}, which the file does not hold")
        return tensors[body]
    if kind == "dict":
        if any(not isinstance(key, JSON_KEYS) for key, _ in body):
            raise TreeFileError(f"a dict key that is not a str, int, float, bool or None in {str(body)[:60]}")
        return {key: decode(value, tensors) for key, value in body}
    if kind in ("list", "tuple"):
        items = [decode(item, tensors) for item in body]
        return items if kind == "list" else tuple(items)
    if kind == "value":
        return body
    raise TreeFileError(f"unknown structure kind {kind!r}")


def save(tree: Any, path: str) -> None:
    """Atomically, through the one writer (a full disk is WriteFailed naming `path`, and leaves no partial file)."""
    from safetensors.torch import save as to_bytes

    tensors: dict = {}
    structure = encode(tree, [], tensors)
    disk_writes.write_bytes(path, to_bytes(tensors, metadata={STRUCTURE_KEY: json.dumps(structure)}))


def load(path: str) -> Any:
    """The tree saved by `save`; TreeFileError (with the reason) for a file that is not one."""
    from safetensors import safe_open

    try:
        with safe_open(path, framework="pt") as handle:
            metadata = handle.metadata() or {}
            tensors = {key: handle.get_tensor(key) for key in handle.keys()}
    except FileNotFoundError:
        raise
    except Exception as exc:  # safetensors' own errors name no common base class
        raise TreeFileError(f"not a readable safetensors file ({type(exc).__name__}: {str(exc)[:120]})")
    if STRUCTURE_KEY not in metadata:
        raise TreeFileError("a safetensors file without the structure this runner writes")
    try:
        structure = json.loads(metadata[STRUCTURE_KEY])
    except ValueError as exc:
        raise TreeFileError(f"its structure is not valid JSON ({exc})")
    except RecursionError:  # a shared file's structure nested past what the parser takes: damaged, not a crash
        raise TreeFileError("its structure is nested deeper than this runner reads")
    try:
        return decode(structure, tensors)
    except RecursionError:
        raise TreeFileError("its structure is nested deeper than this runner reads")
    except (TypeError, ValueError) as exc:  # a body of the wrong shape (a dict's pairs that are not pairs)
        raise TreeFileError(f"unexpected structure ({type(exc).__name__}: {str(exc)[:60]})")
