"""--pure-wall-time's reach, without torch: which configs have a CUDA device timeline to time with. The parent
drops the others with this reason (a support rule); the child refuses them, when run by hand, with the same."""

from __future__ import annotations

from typing import Optional


def pure_wall_time_reason(experiment) -> Optional[str]:
    """Why --pure-wall-time cannot time this config (no CUDA device timeline), or None."""
    if experiment.accelerator != "cuda" or experiment.xla:
        where = f"accelerator {experiment.accelerator}" + (" through PyTorch/XLA" if experiment.xla else "")
        return (f"--pure-wall-time times with CUDA events, and {where} has none "
                "(run this config without --pure-wall-time)")
    return None


def support_rules(options) -> list:
    """Support rules (runner/matrix.py's SUPPORT_RULES form) that --pure-wall-time (`options`: the timing
    section) adds to the sweep."""
    if not options.pure_wall_time:
        return []
    return [("pure-wall-time-needs-cuda", lambda e, c: pure_wall_time_reason(e) is not None,
             lambda e, c: pure_wall_time_reason(e))]
