"""The user's cache directory for what is measured once per machine and environment: the parent's probe of torch
(runner/capabilities.py) and the child's ceilings of the machine (child/ceilings.py). BENCHMARKS_PROBE_CACHE names it
(default $XDG_CACHE_HOME/ptbench-matrix, else ~/.cache/ptbench-matrix); "off" disables every such cache."""

from __future__ import annotations

import os
from typing import Optional

CACHE_ENV = "BENCHMARKS_PROBE_CACHE"


def cache_dir(environ: Optional[dict] = None) -> Optional[str]:
    """The cache directory, or None when caching is off."""
    environ = os.environ if environ is None else environ
    chosen = environ.get(CACHE_ENV)
    if chosen == "off":
        return None
    if chosen:
        return chosen
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ptbench-matrix")
