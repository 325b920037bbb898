"""What a config's failure is in its record: its status (an out-of-memory error or another) and its cause, where a
lost CUDA context hid behind the error that surfaced (child/config_run.py's ConfigRun.failed)."""

from __future__ import annotations

from typing import Optional

from benchmarks.results.records import RecordStatus


def classify(exc: BaseException) -> str:
    import torch

    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)):
        return RecordStatus.OOM
    return RecordStatus.ERROR


# What a CUDA error says when the process's context is lost: every later CUDA call fails too
CONTEXT_LOST = ("device-side assert triggered", "illegal memory access", "unspecified launch failure",
                "misaligned address", "illegal instruction")


def device_lost(exc: BaseException) -> bool:
    return any(words in str(exc) for words in CONTEXT_LOST)


def lost_context_error(experiment) -> Optional[BaseException]:
    """The error a lost CUDA context keeps giving, when a CUDA config's failure may have hidden it, else None. A
    kernel's illegal access is reported by the next call that checks, as that call's own failure (on an H100 with
    torch 2.11: cublasCreate's CUBLAS_STATUS_INTERNAL_ERROR); a synchronize then gives the cause."""
    if experiment.accelerator != "cuda" or experiment.xla:
        return None
    import torch

    if not torch.cuda.is_initialized():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - whatever it raises is the context's state
        return exc if device_lost(exc) else None
    return None


def failure_cause(exc: BaseException, lost: Optional[BaseException]) -> tuple:
    """(type name, message) for the record: the lost context's error first where it hid behind `exc`."""
    if lost is None or device_lost(exc):
        return type(exc).__name__, str(exc)
    return type(lost).__name__, f"{lost} (it surfaced as {type(exc).__name__}: {exc})"
