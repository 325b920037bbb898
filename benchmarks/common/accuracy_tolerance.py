"""The tolerance `--verify` judges accuracy with, per suite, precision and test: the values PyTorch's dynamo
harness publishes for its suites (docs/architecture.md, "Accuracy"). Pure Python (no torch).

The harness's values (benchmarks/dynamo/{torchbench,huggingface,timm_models}.py, their per-suite defaults; the
per-model "higher tolerance" lists are not carried here):
- TorchBench: 1e-4; 1e-3 under float16 or any autocast; 1e-3 for training on CUDA.
- Hugging Face: 1e-3 for inference, 1e-2 for training, whatever the precision.
- timm: 1e-3 for inference, 1e-2 for training, whatever the precision.
Our other suites (dummy, faults, torchvision, files, microbench) take TorchBench's, whose models they resemble.
An explicit `--verify-tolerance` replaces the table.
"""

from __future__ import annotations

from typing import Optional

from benchmarks.common import precision as precisions

TORCHBENCH, HUGGINGFACE, TIMM = "torchbench", "huggingface", "timm"
# suite -> (inference, training); TorchBench's depends on precision and device too (see `harness_tolerance`).
_BY_TEST = {HUGGINGFACE: (1e-3, 1e-2), TIMM: (1e-3, 1e-2)}


def harness_tolerance(suite: str, precision: Optional[str], test: str, accelerator: str) -> float:
    """The harness's tolerance for a config of `suite` run at `precision` (None: fp32) for `test` on `accelerator`."""
    if suite in _BY_TEST:
        inference, training = _BY_TEST[suite]
        return training if test == "train" else inference
    if precisions.cast_dtype(precision) == "float16" or precisions.autocast_dtype(precision, accelerator):
        return 1e-3
    if test == "train" and accelerator == "cuda":
        return 1e-3
    return 1e-4


def tolerance(suite: str, precision: Optional[str], test: str, accelerator: str,
              override: Optional[float] = None) -> float:
    """`--verify-tolerance` when given, else the harness's value."""
    return override if override is not None else harness_tolerance(suite, precision, test, accelerator)
