"""Features that read torch's private APIs (dynamo's counters, graph-break reasons and compile timers, Inductor's
config, ...), which move between releases. Each is read through `reading`: on a torch that moved or reshaped what
it reads, that feature is left out and the record's `absent` says which and why ({feature: one line}), and the
child's log too; the config itself runs on (docs/architecture.md, "The record"; README.md, "Your own torch").
torch is imported only to name its version."""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Optional

log = logging.getLogger("benchmarks.child.torch_internals")

# feature -> why it is absent, for this process's record (a child runs one config; a forked child starts empty).
ABSENT: dict = {}

# The features, as the record's `absent` names them.
DYNAMO_COUNTERS = "dynamo_counters"  # dynamo_stats' counts, the dynamo_graph_* metrics (torch._dynamo.utils.counters)
RECOMPILES = "recompiles"  # dynamo_stats.recompiles (torch._dynamo.convert_frame.FRAME_COMPILE_COUNTER)
GRAPH_BREAK_REASONS = "graph_break_reasons"  # torch._dynamo.utils.graph_break_reasons
COMPILE_SECONDS_BY_PHASE = "compile_seconds_by_phase"  # torch._dynamo.utils.calculate_time_spent
COMPILE_SECONDS_BY_FUNCTION = "compile_seconds_by_function"  # torch._dynamo.utils.compilation_time_metrics
COMPILE_THREADS = "compile_threads"  # a forked child's Inductor compile threads (torch._inductor.config)
FALLBACK_RANDOM = "fallback_random"  # --verify's own compiled step with Inductor's fallback_random
CUDAGRAPHS = "cudagraphs"  # Inductor's CUDA graphs where the config asks for them (torch._inductor.config.triton)
CUDAGRAPH_SKIPS = "cudagraph_skips"  # the graphs Inductor ran without CUDA graphs (its counter)
INDUCTOR_DETERMINISTIC = "inductor_deterministic"  # --deterministic: torch._inductor.config.deterministic (2.10 on)
INDUCTOR_BATCH_INVARIANT = "inductor_batch_invariant"  # --batch-invariant: torch._inductor.config.batch_invariant
UNBACKED_ARGUMENTS = "unbacked_arguments"  # --dynamic=unbacked: mark_unbacked's hint_override and shape_id
CPU_VEC_ISA = "cpu_vec_isa"  # Inductor's probe of the CPU's vector instruction sets (child/cpu_vec_isa.py)
AOT_PRECOMPILE = "aot_precompile"  # --aot-precompile (torch._dynamo.config.enable_aot_compile, load_compiled_function)


def torch_version() -> str:
    torch = sys.modules.get("torch")
    return str(getattr(torch, "__version__", "?"))


def mark_absent(feature: str, source: str, exc: BaseException) -> str:
    """Record that `feature` (read from `source`, e.g. "torch._dynamo.utils.graph_break_reasons") is absent here
    because of `exc`; the one-line reason (the first one stays when a feature fails twice)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    reason = f"torch {torch_version()}: {source} could not be read ({type(exc).__name__}{': ' + text if text else ''})"
    if len(reason) > 300:
        reason = reason[:297] + "..."
    if feature not in ABSENT:
        ABSENT[feature] = reason
        log.warning("%s absent: %s", feature, reason)
    return reason


@contextlib.contextmanager
def reading(feature: str, source: str):
    """Run the block that reads `source` for `feature`; any failure of it marks the feature absent and is swallowed
    (the block's results are simply not set): `with reading(...): found[key] = ...`."""
    try:
        yield
    except Exception as exc:  # a private API's failure of any kind: moved, renamed, reshaped
        mark_absent(feature, source, exc)


def read(feature: str, source: str, fn, default=None):
    """fn()'s value, or `default` with `feature` marked absent when it fails."""
    try:
        return fn()
    except Exception as exc:
        mark_absent(feature, source, exc)
        return default


def absent() -> Optional[dict]:
    """The record's `absent` (a copy), or None when every feature was read."""
    return dict(ABSENT) if ABSENT else None
