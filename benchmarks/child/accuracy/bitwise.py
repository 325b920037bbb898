"""Are two outputs bitwise equal, and if not, where is the largest difference? (child only; torch is imported by the
functions). --deterministic's two runs (features/deterministic/child.py) and --batch-invariant's batch sizes
(features/batch_invariant/child.py) both ask it of CPU trees (output_tree.to_cpu's), whose leaves are named by output_tree's
one path syntax. Bitwise: every element's bits, so -0.0 and 0.0 differ (by 0) and NaN equals only the same NaN."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

from benchmarks.child.accuracy.output_tree import Pairs, pairs


@dataclasses.dataclass
class Difference:
    """What differs between two trees: the elements whose bits differ, the largest absolute difference among them
    and where it is (inf: a NaN or infinity against a number), and any difference of structure (shape, dtype, type,
    a leaf only one tree has)."""

    elements: int = 0  # elements whose bits differ, over every tensor leaf
    compared: int = 0  # elements compared
    largest: float = 0.0
    where: Optional[str] = None  # the leaf holding the largest difference
    structure: list = dataclasses.field(default_factory=list)  # "where: what" lines

    @property
    def identical(self) -> bool:
        return not self.elements and not self.structure

    def describe(self) -> str:
        """One line: the structure's first difference, else how many elements differ and the largest difference."""
        if self.structure:
            more = len(self.structure) - 1
            return self.structure[0] + (f" (and {more} more difference(s) of structure)" if more else "")
        return (f"{self.elements} of {self.compared} element(s) differ, the largest by {self.largest:.6g} at "
                f"{self.where}")

    def figures(self) -> dict:
        """The record's: elements differing, the largest difference (null where not finite) and where."""
        return {"elements_differing": self.elements, "elements_compared": self.compared,
                "max_abs_difference": self.largest if math.isfinite(self.largest) else None,
                "where": self.where if not self.structure else self.structure[0]}


def _bits(tensor):
    """The tensor's elements as integers of the same width (complex as real pairs), for a bitwise comparison."""
    import torch

    if tensor.is_complex():
        tensor = torch.view_as_real(tensor)
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return tensor.contiguous().view(ints[tensor.element_size()]) if tensor.is_floating_point() else tensor


def _tensors(where: str, expected, actual, found: Difference) -> None:
    import torch

    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        found.structure.append(f"{where}: {actual.dtype} {tuple(actual.shape)}, expected {expected.dtype} "
                               f"{tuple(expected.shape)}")
        return
    found.compared += expected.numel()
    if expected.dtype == torch.bool:
        differ = expected != actual
    else:
        differ = _bits(expected) != _bits(actual)
        if differ.dim() > expected.dim():  # complex: a pair differs where either part does
            differ = differ.any(dim=-1)
    count = int(differ.sum())
    if not count:
        return
    found.elements += count
    if expected.is_floating_point() or expected.is_complex():
        gap = (expected[differ].to(torch.complex128 if expected.is_complex() else torch.float64)
               - actual[differ].to(torch.complex128 if expected.is_complex() else torch.float64)).abs()
        largest = float(torch.nan_to_num(gap, nan=math.inf).max())  # NaN against a number: infinitely apart
    else:
        largest = float((expected[differ].to(torch.float64) - actual[differ].to(torch.float64)).abs().max())
    if found.where is None or largest > found.largest:
        found.largest, found.where = largest, where


def _same_leaf(want, got) -> bool:
    try:
        return bool(want == got) or bool(want != want and got != got)  # a plain NaN equals a NaN
    except Exception:  # an object whose == is not a truth value
        return repr(want) == repr(got)


def compare(expected: Any, actual: Any, root: str = "output") -> Difference:
    """Every leaf of two CPU trees compared bit by bit (non-tensor leaves by ==): what differs, and the largest."""
    return compare_pairs(pairs(expected, actual, root))


def compare_pairs(matched: Pairs) -> Difference:
    """compare's, for leaves already paired (output_tree.Pairs: a caller's own choice of leaves)."""
    import torch

    found = Difference(structure=[f"{where}: missing" for where in matched.missing]
                       + [f"{where}: not expected" for where in matched.extra])
    for where, want, got in matched.matched:
        if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
            _tensors(where, want, got, found)
        elif isinstance(want, torch.Tensor) or isinstance(got, torch.Tensor) or type(want) is not type(got):
            found.structure.append(f"{where}: {type(got).__name__}, expected {type(want).__name__}")
        elif not _same_leaf(want, got):
            found.structure.append(f"{where}: {got!r:.60}, expected {want!r:.60}")
    return found
