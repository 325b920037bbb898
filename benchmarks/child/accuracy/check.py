"""--verify's accuracy judgement, the dynamo harness's way (docs/accuracy.md): a config's result
against eager at the run's precision and an fp64 eager reference. Child only; torch is imported by the functions.

Per tensor of the output (train: the loss and every gradient):
- floating point: pass when allclose to eager (rtol = atol = tol); else when its RMSE to the fp64 reference is at
  most `multiplier` x eager's own RMSE to it + tol/10. The multiplier is 2, or 3 for a float16/bfloat16 result, a
  tensor of fewer than 1000 elements, a 1x1 spatial map, or a tolerance of at least 2e-2 (noise dominates there);
  for a model on the harness's larger-multiplier list 10 for at most 10 elements and 8 for at most 500; 10 for
  every tensor when `force_max` (freezing folded a convolution in bfloat16);
- without an fp64 reference (a model that can't run float64), or when the rule says cosine: cosine similarity to
  eager >= 0.99;
- a question-answering output (Hugging Face's QuestionAnsweringModelOutput): its loss only, as the harness judges
  it (start and end logits are not compared);
- boolean masks: their overlap (intersection over union; 1 when both are empty) at least MASK_IOU, 0.99 whatever
  the tolerance, as the harness judges them since exact matching of SAM's masks flaked (pytorch#171927); the
  record says so (`accuracy_reason`, and `accuracy_message` names a mask that passed without matching exactly);
- integers and other leaves: equal. A structure, shape or dtype that differs from eager's fails.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

from benchmarks.child.accuracy import output_tree

FP64 = "fp64"
COSINE = "cosine"  # the fallback reference: eager at the run's precision, judged by cosine similarity
COSINE_THRESHOLD = 0.99
MASK_IOU = 0.99  # a boolean mask passes when its intersection over union with eager's is at least this
QUESTION_ANSWERING = "QuestionAnsweringModelOutput"  # Hugging Face's; judged by its loss only
MAX_LISTED = 3


@dataclasses.dataclass
class Judgement:
    """The verdict and the figures the record keeps (`accuracy_*` keys)."""

    passed: bool
    reference: str  # FP64 or COSINE
    tolerance: float
    rmse: Optional[float] = None  # the result's RMSE to fp64, over every floating-point element judged by it
    eager_rmse: Optional[float] = None  # eager's (at the run's precision) over the same elements
    failures: list = dataclasses.field(default_factory=list)  # "where: why"
    # where the fp64 reference's tensor has another shape or dtype, so cosine similarity judged the result
    cosine_leaves: list = dataclasses.field(default_factory=list)
    masks: list = dataclasses.field(default_factory=list)  # where a boolean mask was judged by overlap
    near_masks: list = dataclasses.field(default_factory=list)  # "where IoU x" of those that passed, not equal

    def message(self) -> Optional[str]:
        parts = []
        if self.failures:
            more = len(self.failures) - MAX_LISTED
            parts.append("; ".join(self.failures[:MAX_LISTED]) + (f"; and {more} more" if more > 0 else ""))
        if self.cosine_leaves:  # said on a pass too: these leaves were not held to the fp64 rule
            parts.append(f"judged by cosine similarity, the fp64 reference's tensor having another shape or dtype: "
                         f"{', '.join(self.cosine_leaves[:MAX_LISTED])}")
        if self.near_masks:  # said on a pass too: these masks differ from eager's, within the overlap rule
            parts.append(masks_message(self.near_masks))
        return "; ".join(parts) or None


def masks_message(near: list) -> str:
    """The masks that passed by overlap without matching eager's exactly ("where IoU x" each)."""
    more = len(near) - MAX_LISTED
    return (f"boolean masks judged by overlap (IoU >= {MASK_IOU:g}), not exactly: "
            + ", ".join(near[:MAX_LISTED]) + (f" and {more} more" if more > 0 else ""))


def multiplier(result, eager, elements: int, tol: float, larger_for_small: bool = False,
               force_max: bool = False) -> float:
    """How much worse than eager's own error to fp64 the result may be (the harness's rule); `larger_for_small`:
    the model is on the harness's larger-multiplier list; `force_max`: freezing folded a bf16 convolution."""
    import torch

    if force_max:
        return 10.0
    if larger_for_small and elements <= 10:
        return 10.0
    if larger_for_small and elements <= 500:
        return 8.0
    small_or_noisy = (elements < 1000 or (eager.ndim == 4 and eager.shape[-1] == eager.shape[-2] == 1)
                      or tol >= 2e-2)
    return 3.0 if small_or_noisy or result.dtype in (torch.float16, torch.bfloat16) else 2.0


class _Sums:
    """Squared errors to fp64, summed over the elements judged by the RMSE rule (the record's two figures)."""

    def __init__(self):
        self.result = self.eager = 0.0
        self.elements = 0

    def add(self, result_sq: float, eager_sq: float, elements: int) -> None:
        self.result += result_sq
        self.eager += eager_sq
        self.elements += elements

    def rmse(self, total: float) -> Optional[float]:
        if not self.elements:
            return None
        value = math.sqrt(total / self.elements)
        return value if math.isfinite(value) else None


def _as_real(tensor):
    import torch

    return torch.view_as_real(tensor) if tensor.is_complex() else tensor


def _judge_floating(where, result, eager, fp64, tol, sums, cosine_leaves, options) -> Optional[str]:
    """None when the tensor passes, else why not. Appends `where` to `cosine_leaves` when the fp64 reference's
    tensor can't judge it (another shape or dtype)."""
    import torch

    o = _as_real(result).to(torch.float64)
    e = _as_real(eager).to(torch.float64)
    if torch.allclose(o, e, rtol=tol, atol=tol, equal_nan=True):
        if fp64 is not None and fp64.shape == result.shape:
            r = _as_real(fp64).to(torch.float64)
            sums.add(float(((o - r) ** 2).sum()), float(((e - r) ** 2).sum()), r.numel())
        return None
    if fp64 is None:
        return _judge_cosine(where, o, e)
    if fp64.shape != result.shape or not fp64.is_floating_point() and not fp64.is_complex():
        cosine_leaves.append(where)
        why = _judge_cosine(where, o, e)
        return why and (f"{why} (judged by cosine: the fp64 reference's is {fp64.dtype} "
                        f"{tuple(fp64.shape)})")
    r = _as_real(fp64).to(torch.float64)
    result_sq, eager_sq = float(((o - r) ** 2).sum()), float(((e - r) ** 2).sum())
    sums.add(result_sq, eager_sq, r.numel())
    n = max(r.numel(), 1)
    result_error, eager_error = math.sqrt(result_sq / n), math.sqrt(eager_sq / n)
    if torch.isnan(e).any() and not torch.isnan(r).any() and not torch.isnan(o).any() and \
            torch.allclose(o, r, rtol=4e-2, atol=4e-2):
        return None  # eager's NaN is its own precision's problem; the result matches fp64 closely
    if math.isnan(result_error) and math.isnan(eager_error):
        return None  # both NaN where fp64 is not: no worse than eager
    factor = multiplier(result, eager, r.numel(), tol, options.larger_for_small, options.force_max)
    if result_error <= factor * eager_error + tol / 10:
        return None
    return (f"{where}: RMSE to fp64 {result_error:.3g} > {factor:g} x eager's {eager_error:.3g} + tol/10 "
            f"(and not allclose to eager at tol {tol:g})")


def _judge_cosine(where, o, e) -> Optional[str]:
    """Cosine similarity, for a tensor its caller found not allclose to eager's and that fp64 can't judge."""
    import torch

    o, e = o.reshape(-1), e.reshape(-1)
    cosine = float(torch.nn.functional.cosine_similarity(o, e, dim=0, eps=1e-6))
    if cosine >= COSINE_THRESHOLD:
        return None
    return f"{where}: cosine similarity to eager {cosine:.4f} < {COSINE_THRESHOLD}"


def mask_overlap(result, eager) -> float:
    """Intersection over union of two boolean masks of one shape; 1 when both are empty."""
    union = int((result | eager).sum())
    return 1.0 if union == 0 else int((result & eager).sum()) / union


def judge_mask(where: str, result, eager, near: list) -> Optional[str]:
    """None when the mask's overlap with eager's is at least MASK_IOU (appending "where IoU x" to `near` when it
    is not exact), else why not."""
    overlap = mask_overlap(result, eager)
    if overlap >= MASK_IOU:
        if overlap < 1:
            near.append(f"{where} IoU {overlap:.4f}")
        return None
    return f"{where}: boolean mask overlaps eager's by IoU {overlap:.4f} < {MASK_IOU:g}"


def _judge_leaf(where, result, eager, fp64, tol, sums, judgement, options) -> Optional[str]:
    import torch

    if isinstance(eager, torch.Tensor) != isinstance(result, torch.Tensor):
        return f"{where}: {type(result).__name__}, eager {type(eager).__name__}"
    if not isinstance(eager, torch.Tensor):
        if isinstance(eager, float) and isinstance(result, float):
            same = math.isclose(result, eager, rel_tol=tol, abs_tol=tol) or (math.isnan(result) and math.isnan(eager))
        else:
            same = result == eager or repr(result) == repr(eager)
        return None if same else f"{where}: {result!r:.60}, eager {eager!r:.60}"
    if result.shape != eager.shape:
        return f"{where}: shape {tuple(result.shape)}, eager {tuple(eager.shape)}"
    if result.dtype != eager.dtype:
        return f"{where}: dtype {result.dtype}, eager {eager.dtype}"
    if eager.dtype == torch.bool:
        judgement.masks.append(where)
        return judge_mask(where, result, eager, judgement.near_masks)
    if eager.is_floating_point() or eager.is_complex():
        fp64_leaf = fp64 if isinstance(fp64, torch.Tensor) else None
        return _judge_floating(where, result, eager, fp64_leaf, tol, sums, judgement.cosine_leaves, options)
    differ = int((result != eager).sum())
    return f"{where}: {differ} of {eager.numel()} {eager.dtype} elements differ" if differ else None


@dataclasses.dataclass(frozen=True)
class Options:
    """The rule's per-model switches (config/accuracy_rule.Rule) that change how a tensor is judged."""

    cosine: bool = False  # cosine similarity even with an fp64 reference
    larger_for_small: bool = False  # same()'s use_larger_multiplier_for_smaller_tensor
    force_max: bool = False  # same()'s force_max_multiplier


def _qa_loss(tree: Any) -> Any:
    """A question-answering output's loss (None when the tree is not one, or has no loss)."""
    if getattr(tree, "type_name", None) == QUESTION_ANSWERING:
        return tree.fields.get("loss")
    return None


def judge(result: Any, eager: Any, fp64: Optional[Any], tol: float, root: str = "output",
          options: Options = Options()) -> Judgement:
    """The verdict on a config's CPU result tree against eager's (at the run's precision) and the fp64
    reference's (None, or `options.cosine`: cosine similarity)."""
    if _qa_loss(eager) is not None and _qa_loss(result) is not None:  # the harness judges the loss alone
        result, eager, fp64, root = _qa_loss(result), _qa_loss(eager), _qa_loss(fp64), f"{root}.loss"
    if options.cosine:
        fp64 = None
    paired = output_tree.pairs(eager, result, root)
    fp64_leaves = output_tree.leaves(fp64, root) if fp64 is not None else {}
    judgement = Judgement(passed=True, reference=FP64 if fp64 is not None else COSINE, tolerance=tol)
    if paired.missing or paired.extra:
        judgement.failures.append(f"structure differs from eager's (missing {paired.missing[:MAX_LISTED]}, "
                                  f"extra {paired.extra[:MAX_LISTED]})")
    sums = _Sums()
    for where, eager_leaf, result_leaf in paired.matched:
        why = _judge_leaf(where, result_leaf, eager_leaf, fp64_leaves.get(where), tol, sums, judgement, options)
        if why:
            judgement.failures.append(why)
    judgement.passed = not judgement.failures
    judgement.rmse, judgement.eager_rmse = sums.rmse(sums.result), sums.rmse(sums.eager)
    return judgement
