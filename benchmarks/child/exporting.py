"""--dynamo=export / export_nonstrict / aot_inductor: torch.export of the model (the dashboard's export pass
rate), and AOTInductor's package of it, loaded and timed (benchmarks/features/dynamic/__init__.py).
Child only: torch inside the functions."""

from __future__ import annotations

import time


class ExportFailed(RuntimeError):
    """torch.export (or AOTInductor) refused the model; the message is its first line."""


def strict(experiment) -> bool:
    """Strict export traces with dynamo (`export`); `export_nonstrict` and `aot_inductor` trace with Python
    (torch.export's default)."""
    return experiment.dynamo == "export"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def prepare(experiment, module, args: tuple, kwargs: dict, files, record: dict):
    """The callable the timed iterations run: the exported program's module, or the loaded AOTInductor
    package. Fills the record's `export` (passed or not, why, and the times apart from the run); raises
    ExportFailed when the model does not export or compile."""
    import torch

    info = record["export"] = {"strict": strict(experiment), "passed": False}
    module.eval()
    start = time.perf_counter()
    try:
        program = torch.export.export(module, args, kwargs, strict=info["strict"])
    except Exception as exc:
        info["reason"] = _first_line(exc)
        raise ExportFailed(f"torch.export ({'strict' if info['strict'] else 'non-strict'}) failed: "
                           f"{info['reason']}") from exc
    info["export_seconds"] = time.perf_counter() - start
    if experiment.dynamo != "aot_inductor":
        info["passed"] = True
        return program.module()
    path = files.path("aoti-package", "pt2")
    start = time.perf_counter()
    try:
        torch._inductor.aoti_compile_and_package(program, package_path=path)
    except Exception as exc:
        info["reason"] = _first_line(exc)
        raise ExportFailed(f"AOTInductor failed: {info['reason']}") from exc
    info["aot_compile_seconds"] = time.perf_counter() - start
    start = time.perf_counter()
    loaded = torch._inductor.aoti_load_package(path)
    info["load_seconds"] = time.perf_counter() - start
    info["passed"] = True
    files.add_artifact("aoti-package", path)
    return loaded
