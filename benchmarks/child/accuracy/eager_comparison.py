"""--verify's comparison with eager in upstream's terms (child only; torch is imported by the functions): on CPU copies
of the outputs (child/accuracy/output_tree.py), an element-by-element comparison that names every mismatch by its path
(`compare`, `Comparison`: the mean relative error, max abs error and cosine similarity of the record's
`verification_*` figures; boolean masks by overlap, as the harness judges them) and upstream's PASS/FAIL against a
tolerance (`verification_code`). child/accuracy/verify.py runs it;
child/accuracy/check.py judges the same CPU trees by the harness's rule."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

from benchmarks.child.accuracy.check import judge_mask, masks_message
from benchmarks.child.accuracy.output_tree import Node
from benchmarks.results import records

MAX_LISTED = 3  # mismatches named in the message; the rest are counted


@dataclasses.dataclass
class Comparison:
    """Running sums over every floating-point element compared, and what did not match (and where)."""

    abs_diff_sum: float = 0.0
    ref_abs_sum: float = 0.0
    max_abs_error: float = 0.0
    dot: float = 0.0
    out_square_sum: float = 0.0
    ref_square_sum: float = 0.0
    elements: int = 0
    mismatches: list = dataclasses.field(default_factory=list)  # "where: what" lines
    near_masks: list = dataclasses.field(default_factory=list)  # "where IoU x": boolean masks that passed, not equal

    @property
    def mean_rel_error(self) -> float:
        if self.ref_abs_sum > 0:
            return self.abs_diff_sum / self.ref_abs_sum
        return 0.0 if self.abs_diff_sum == 0 else math.inf

    @property
    def cosine_similarity(self) -> Optional[float]:
        if not self.elements:
            return None
        if self.out_square_sum == 0 or self.ref_square_sum == 0:
            return 1.0 if self.out_square_sum == self.ref_square_sum else 0.0
        cosine = self.dot / math.sqrt(self.out_square_sum * self.ref_square_sum)
        return max(-1.0, min(1.0, cosine))

    @property
    def identical(self) -> bool:
        return not self.mismatches and not self.near_masks and self.abs_diff_sum == 0

    def describe_mismatches(self) -> str:
        shown = "; ".join(self.mismatches[:MAX_LISTED])
        more = len(self.mismatches) - MAX_LISTED
        return shown + (f"; and {more} more" if more > 0 else "")

    def describe_masks(self) -> Optional[str]:
        """The boolean masks that passed by overlap without matching exactly, or None."""
        return masks_message(self.near_masks) if self.near_masks else None

    def figures(self) -> dict:
        """Record values; a non-finite figure is null (strict JSON has no Infinity)."""
        def finite(value):
            return value if value is not None and math.isfinite(value) else None

        return {"verification_mean_rel_error": finite(self.mean_rel_error),
                "verification_max_abs_error": finite(self.max_abs_error),
                "verification_cosine_similarity": finite(self.cosine_similarity)}


def _type_word(obj) -> str:
    if isinstance(obj, Node):
        return obj.type_name
    if isinstance(obj, (list, tuple)):
        return "sequence"
    return type(obj).__name__


def _compare_tensors(ref, out, where: str, acc: Comparison) -> None:
    import torch

    if ref.shape != out.shape:
        acc.mismatches.append(f"{where}: shape {tuple(out.shape)}, eager {tuple(ref.shape)}")
        return
    if ref.dtype != out.dtype:
        acc.mismatches.append(f"{where}: dtype {out.dtype}, eager {ref.dtype}")
        return
    if ref.dtype == torch.bool:  # masks by overlap, as the harness's rule (accuracy.check.judge_mask)
        why = judge_mask(where, out, ref, acc.near_masks)
        if why:
            acc.mismatches.append(why)
        return
    if not (ref.is_floating_point() or ref.is_complex()):
        differ = int((ref != out).sum())
        if differ:
            acc.mismatches.append(f"{where}: {differ} of {ref.numel()} {ref.dtype} elements differ")
        return
    if ref.is_complex():
        ref, out = torch.view_as_real(ref), torch.view_as_real(out)
    r = ref.reshape(-1).to(torch.float64)
    o = out.reshape(-1).to(torch.float64)
    finite = torch.isfinite(r) & torch.isfinite(o)
    same_special = (torch.isnan(r) & torch.isnan(o)) | (torch.isinf(r) & (r == o))  # NaN = NaN here
    odd = int((~finite & ~same_special).sum())
    if odd:
        acc.mismatches.append(f"{where}: {odd} element(s) NaN or infinite where the other is not")
        acc.abs_diff_sum = acc.max_abs_error = math.inf
    r, o = r[finite], o[finite]
    if not r.numel():
        return
    diff = (o - r).abs()
    acc.elements += r.numel()
    acc.abs_diff_sum += float(diff.sum())
    acc.ref_abs_sum += float(r.abs().sum())
    acc.max_abs_error = max(acc.max_abs_error, float(diff.max()))
    acc.dot += float((o * r).sum())
    acc.out_square_sum += float((o * o).sum())
    acc.ref_square_sum += float((r * r).sum())


def _leaves_equal(ref, out) -> bool:
    if isinstance(ref, float) and isinstance(out, float) and math.isnan(ref) and math.isnan(out):
        return True
    try:
        return bool(ref == out)
    except Exception:  # objects whose == is not a truth value
        return repr(ref) == repr(out)


def compare(ref: Any, out: Any, where: str = "output", acc: Optional[Comparison] = None) -> Comparison:
    """Compare two CPU trees (output_tree.to_cpu's) element by element; every mismatch is noted with its path (the
    path syntax of output_tree). Lists and tuples are both sequences."""
    import torch

    acc = Comparison() if acc is None else acc
    if isinstance(ref, torch.Tensor) or isinstance(out, torch.Tensor):
        if isinstance(ref, torch.Tensor) and isinstance(out, torch.Tensor):
            _compare_tensors(ref, out, where, acc)
        else:
            acc.mismatches.append(f"{where}: {_type_word(out)}, eager {_type_word(ref)}")
        return acc
    if isinstance(ref, Node) or isinstance(out, Node):
        if not (isinstance(ref, Node) and isinstance(out, Node)) or ref.type_name != out.type_name:
            acc.mismatches.append(f"{where}: {_type_word(out)}, eager {_type_word(ref)}")
            return acc
        ref, out = ref.fields, out.fields
        sep = "."
    else:
        sep = None
    if isinstance(ref, dict) or isinstance(out, dict):
        if not (isinstance(ref, dict) and isinstance(out, dict)):
            acc.mismatches.append(f"{where}: {_type_word(out)}, eager {_type_word(ref)}")
            return acc
        missing = [k for k in ref if k not in out]
        extra = [k for k in out if k not in ref]
        if missing or extra:
            parts = ([f"missing {missing}"] if missing else []) + ([f"extra {extra}"] if extra else [])
            acc.mismatches.append(f"{where}: keys differ from eager's ({', '.join(parts)})")
        for key in ref:
            if key in out:
                path = f"{where}.{key}" if sep else f"{where}[{key!r}]" if where else str(key)
                compare(ref[key], out[key], path, acc)
        return acc
    if isinstance(ref, (list, tuple)) or isinstance(out, (list, tuple)):
        if not (isinstance(ref, (list, tuple)) and isinstance(out, (list, tuple))):
            acc.mismatches.append(f"{where}: {_type_word(out)}, eager {_type_word(ref)}")
            return acc
        if len(ref) != len(out):
            acc.mismatches.append(f"{where}: length {len(out)}, eager {len(ref)}")
        for index, (r, o) in enumerate(zip(ref, out)):
            compare(r, o, f"{where}[{index}]", acc)
        return acc
    if not _leaves_equal(ref, out):
        acc.mismatches.append(f"{where}: {out!r:.60}, eager {ref!r:.60}")
    return acc


def verification_code(comparison: Comparison, tolerance: float) -> tuple:
    """(code, message or None) for a config compared with eager; a pass's message names the boolean masks that
    passed by overlap without matching exactly."""
    if comparison.mismatches:
        return records.VerificationCode.FAIL, f"differs from eager: {comparison.describe_mismatches()}"
    error = comparison.mean_rel_error
    if error > tolerance:
        return records.VerificationCode.FAIL, f"mean relative error {error:.3g} is above the tolerance {tolerance:g}"
    return records.VerificationCode.PASS, comparison.describe_masks()


# ---------------------------------------------------------------- the child's side
