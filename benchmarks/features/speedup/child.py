"""--speedup=paired in the child (the `speedup` axis's hook): eager's step timed beside the config's, and the
record's paired_speedup (features/speedup/__init__.py summarizes the pairs). Child only: torch inside the functions."""

from __future__ import annotations

from typing import Optional

from benchmarks.child.config_hooks import Hook, HookRun
from benchmarks.features import speedup


class PairedSpeedup(Hook):
    """--speedup=paired: eager's step on the same module and example inputs, timed just before each timed run of
    the config's (measured_loop.measure), and the record's paired_speedup."""

    def before_timing(self, run: HookRun) -> None:
        from benchmarks.child import measured_loop

        run.eager_step = measured_loop.make_step(run.bm, run.experiment.with_(dynamo=None), run.module, run.args,
                                                 run.kwargs)

    def after_timing(self, run: HookRun) -> None:
        metrics = run.record["metrics"]
        run.record["paired_speedup"] = speedup.summarize(metrics["eager_per_iter_time"], metrics["per_iter_time"])


def hook_for(value: str, experiment) -> Optional[Hook]:
    """The `speedup` axis's hook (child/config_hooks.axis_hooks): an isolated config asks nothing of the run."""
    return PairedSpeedup() if value == speedup.PAIRED else None
