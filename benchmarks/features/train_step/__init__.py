"""--train-step (train configs; null for eval), an experiment axis: `harness`, the dynamo harness's step compiled
whole (clone the inputs, zero the grads, forward, the suite's loss, backward, the optimizer's step: none on the
CPU), or `forward_loss`, ours (forward + loss under the backend; backward and an eager SGD step after it).
docs/runner.md, "Training step". A record without the key ran forward_loss. What each step does is the child's
measured_loop; which a suite runs by default is its `default_train_step`. No torch.
"""

from __future__ import annotations

from typing import Optional

from benchmarks.config.axis import Axis
from benchmarks.config.train_steps import DEFAULT_TRAIN_STEP, TRAIN_STEPS


def _as_given(value):
    """A value as read (its axis's `check` judges it, with the config's other keys)."""
    return value


def _train_step_rule(e) -> Optional[str]:
    """A training step is a train config's: one of TRAIN_STEPS there, null for eval."""
    if e.train_step is not None and (e.test != "train" or e.train_step not in TRAIN_STEPS):
        return (f"train_step must be one of {', '.join(TRAIN_STEPS)} (train configs) or null, not {e.train_step!r} "
                f"for test {e.test}")
    return None


ORDER = 50  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "train_step",
        "train configs' step: harness (the dynamo harness's, as PyTorch's dashboard measures: the whole step compiled, "
        "the suite's loss, no optimizer on the CPU), forward_loss (forward + loss compiled, eager backward and SGD "
        "step); default: the suite's (harness for torchbench, timm, huggingface; forward_loss for the others); "
        "experiment key `train_step`",
        parse=_as_given, default=DEFAULT_TRAIN_STEP, choices=TRAIN_STEPS,  # None asked: the suite's, by the plan
        for_config=lambda step, e: step if e.test == "train" else None, check=_train_step_rule,
        label="{}-step", slug="step-{}", example="harness",  # "harness" alone would not say what it is
        meaning="harness or forward_loss (null for eval; absent: forward_loss)"),
)
