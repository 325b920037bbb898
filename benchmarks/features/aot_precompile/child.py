"""--aot-precompile in the child (the `aot_precompile` axis's hook, config/axes.py), as the dynamo harness's
(pytorch#164906): the module's forward compiled ahead of time by Inductor (`torch.compile(module, fullgraph=True)
.forward.aot_compile`, under the step's grad mode and autocast, every guard but torch's global state dropped), the
artifact saved (`aot-precompile`), dynamo reset, the artifact loaded (`torch.compiler.load_compiled_function`, timed:
the record's metric `aot_precompile_load_time`) and the loaded function timed as the config's step. The record's
`aot_precompile` says how it went. A torch without the API makes the config a skip that says why (and the record's
`absent` names it). Child only: torch inside the functions."""

from __future__ import annotations

import os
import time
from typing import Optional

from benchmarks.child import torch_internals
from benchmarks.child.config_hooks import Hook, HookRun
from benchmarks.features import aot_precompile
from benchmarks.suites import ModelSkipped

# What it needs of torch (torch 2.9 has both; older ones neither).
NEEDED = ("torch._dynamo.config.enable_aot_compile", "torch.compiler.load_compiled_function")


class AotPrecompileFailed(RuntimeError):
    """aot_compile refused the model (a graph break, an output it can't serialize); the message is its first line."""


def hook_for(value: bool, experiment) -> Optional[Hook]:
    return AotPrecompile() if value else None


class AotPrecompile(Hook):
    """The config's step calls the loaded artifact instead of a JIT-compiled module (measured_loop's `exported`)."""

    def __init__(self):
        self.load_seconds: Optional[float] = None

    def compile(self, run: HookRun) -> None:
        run.exported, self.load_seconds = precompile(run.experiment, run.bm, run.module, run.args, run.kwargs,
                                                     run.diag.files, run.record)

    def after_timing(self, run: HookRun) -> None:
        run.record["metrics"][aot_precompile.LOAD_TIME] = [self.load_seconds]


def missing_api() -> Optional[str]:
    """The first of NEEDED this torch lacks, or None."""
    import torch

    for name in NEEDED:
        holder, _, attribute = name.rpartition(".")
        found = torch
        for part in holder.split(".")[1:]:
            found = getattr(found, part, None)
        if not hasattr(found, attribute):
            return name
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def precompile(experiment, bm, module, args: tuple, kwargs: dict, files, record: dict) -> tuple:
    """(the callable the timed iterations run, seconds the load took). Fills the record's `aot_precompile`; raises
    ModelSkipped where this torch has no AOT precompile, AotPrecompileFailed where the model does not compile."""
    import torch

    from benchmarks.features.compile_options import child as compile_options_child
    from benchmarks.features.precision import child as precision_child

    lacking = missing_api()
    if lacking:
        why = torch_internals.mark_absent(torch_internals.AOT_PRECOMPILE, lacking,
                                          AttributeError(f"{lacking} does not exist"))
        raise ModelSkipped(f"--aot-precompile needs {lacking} (torch 2.9 and later): {why}")
    info = record["aot_precompile"] = {"passed": False}
    module.eval()
    compile_options_child.before_compile(experiment)
    grad_mode = torch.enable_grad if bm.eval_needs_grad else torch.no_grad
    path = files.path("aot-precompile", "bin")
    start = time.perf_counter()
    try:
        with torch._dynamo.config.patch(enable_aot_compile=True):
            compiled = torch.compile(module, backend=experiment.dynamo, fullgraph=True,
                                     options={"guard_filter_fn": lambda guards: [False for _ in guards]})
            with grad_mode(), precision_child.step_context(experiment):  # as the step calls it (a global-state guard)
                function = compiled.forward.aot_compile((tuple(args), dict(kwargs)))
        function.save_compiled_function(path)
    except Exception as exc:
        info["reason"] = _first_line(exc)
        raise AotPrecompileFailed(f"AOT precompile failed: {info['reason']}") from exc
    info["compile_seconds"] = time.perf_counter() - start
    info["artifact_bytes"] = os.path.getsize(path)
    files.add_artifact("aot-precompile", path)
    torch._dynamo.reset()  # the load finds nothing of the compile in this process's dynamo (the harness resets too)
    start = time.perf_counter()
    with open(path, "rb") as handle:
        loaded = torch.compiler.load_compiled_function(handle)
    info["load_seconds"] = load_seconds = time.perf_counter() - start
    info["passed"] = True

    def forward(*a, **k):
        with precision_child.step_context(experiment):
            return loaded(module, *a, **k)

    return forward, load_seconds
