"""What --verify (child/accuracy/verify.py) holds between its steps: the references kept on the CPU, upstream's
verification outcome, and the parts of the accuracy status."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from benchmarks.child.accuracy import check
from benchmarks.child.accuracy.eager_comparison import Comparison
from benchmarks.child.accuracy.verify_outputs import tensor_bytes
from benchmarks.config import accuracy_rule
from benchmarks.results.records import VerificationCode


@dataclasses.dataclass
class Kept:
    """What --verify holds on the CPU until the config's result is compared (or the config failed)."""

    reference: Any = None  # the eager result
    fp64: Any = None  # the fp64 eager result (None: the cosine fallback)
    initial: Optional[tuple] = None  # train: the config's weights, optimizer and loss-scaler state before timing

    def release(self) -> None:
        self.reference = self.fp64 = self.initial = None

    def nbytes(self) -> int:
        return tensor_bytes((self.reference, self.fp64, self.initial))


@dataclasses.dataclass
class Outcome:
    """Upstream's verification: the code (None: the reference is ready, `check` decides), its message, the
    tolerance it was decided at and the comparison with eager (the verification_* figures)."""

    code: Optional[str] = VerificationCode.VERIFIER_SKIPPED
    message: Optional[str] = None
    tolerance: Optional[float] = None
    comparison: Optional[Comparison] = None


@dataclasses.dataclass
class Judging:
    """The accuracy status's parts: the harness's rule for the config, a status decided before the check (an eager
    failure, the harness's skip) with its reason, or the check's judgement by the rule."""

    rule: Optional[accuracy_rule.Rule] = None
    judged: bool = False  # whether `check` also judges by the rule (not for declared random outputs)
    tolerance: Optional[float] = None  # the rule's tolerance, when judged
    fp64_problem: Optional[str] = None  # why there is no fp64 reference
    status: Optional[str] = None
    reason: Optional[str] = None  # accuracy_reason, when decided before the check
    judgement: Optional[check.Judgement] = None
    force_max: bool = False  # whether the judgement used same()'s force_max_multiplier
