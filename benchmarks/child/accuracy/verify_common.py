"""What the two verifiers share (child/accuracy/verify.py for forwards and training steps, generation_verify.py for
generate): the record keys of the figures and where they go, the harness's status for an eager reference that
raised, one line of an exception, freeing memory between the references."""

from __future__ import annotations

import gc

from benchmarks.results import records
from benchmarks.results.accuracy_status import AccuracyStatus

# Record keys, placed right after upstream's `verification_code`.
FIGURE_KEYS = ("verification_mean_rel_error", "verification_max_abs_error", "verification_cosine_similarity",
               "verification_tolerance", "verification_message")


def free_memory() -> None:
    gc.collect()
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def eager_failure_status(run: int, exc: BaseException) -> str:
    """The harness's status for an eager reference that raised: building it (0), its first (1) or second (2) run."""
    import torch

    if run == 0:
        return AccuracyStatus.EAGER_FAIL_TO_RUN
    oom = isinstance(exc, (MemoryError, torch.OutOfMemoryError))
    if run == 1:
        return AccuracyStatus.EAGER_1ST_RUN_OOM if oom else AccuracyStatus.EAGER_1ST_RUN_FAIL
    return AccuracyStatus.EAGER_2ND_RUN_OOM if oom else AccuracyStatus.EAGER_2ND_RUN_FAIL


def one_line(what: str, exc: BaseException) -> str:
    return f"{what}: {type(exc).__name__}: {records.short_message(str(exc)) or type(exc).__name__}"


def place_after(record: dict, anchor: str, values: dict) -> None:
    """Set `values` in `record`, the new keys right after `anchor` (records keep a readable key order)."""
    items = [(k, v) for k, v in record.items() if k not in values or k == anchor]
    record.clear()
    for key, value in items:
        if key == anchor:
            record.update(values)
        else:
            record[key] = value
    if anchor not in record:
        record.update(values)
