"""--matmul-precision in the child (the `matmul_precision` axis's hook, config/axes.py): set in the setup phase,
before any model of the config is built (--save-golden's and --verify's included), with --disable-tf32 and the CUDA
profile's TF32; the settings in effect go in the record's diagnostics.matmul_precision for every config."""

from __future__ import annotations

from typing import Optional

from benchmarks.child.config_hooks import Hook, HookRun
from benchmarks.features import cuda_profile


def hook_for(value: Optional[str], experiment) -> Hook:
    return MatmulPrecision(value)  # every config: the record says which precision ran, asked for or not


class MatmulPrecision(Hook):
    def __init__(self, asked: Optional[str]):
        self.asked = asked

    def setup(self, run: HookRun) -> None:
        from benchmarks.child import backends

        run.record["diagnostics"]["matmul_precision"] = backends.set_matmul_precision(
            run.experiment, cuda_profile.matmul_precision(run.experiment, self.asked),
            run.options.diagnostics.disable_tf32)
