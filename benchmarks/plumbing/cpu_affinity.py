"""--cpu-affinity: which cores a child may use, parsed, formatted and applied (the parent pins each child;
a config run by hand pins itself). Pure Python, no torch."""

from __future__ import annotations

import argparse
import os
from typing import Optional



def parse_cores(text: str) -> list:
    """'0-2,5' -> [0, 1, 2, 5]; ValueError with a one-line reason."""
    cores = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty item in core list {text!r}")
        low, dash, high = part.partition("-")
        try:
            first, last = int(low), int(high) if dash else int(low)
        except ValueError:
            raise ValueError(f"{part!r} is not a core number or range (try 0-3 or 0,2)") from None
        if first < 0 or last < first:
            raise ValueError(f"{part!r} is not a valid core range")
        cores.update(range(first, last + 1))
    return sorted(cores)


def usable_cores() -> list:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def format_cores(cores) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    parts, cores = [], sorted(cores)
    start = prev = None
    for core in cores + [None]:
        if start is not None and (core is None or core != prev + 1):
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if core is not None and start is None:
            start = core
        prev = core
    return ",".join(parts)


def cpu_affinity_spec(text: str) -> str:
    """argparse type: validates the core list against the cores this process may use; returns it in
    canonical form (a string, so that it is forwarded to children as it was given)."""
    try:
        cores = parse_cores(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))
    available = usable_cores()
    missing = [c for c in cores if c not in available]
    if missing:
        raise argparse.ArgumentTypeError(
            f"core(s) {format_cores(missing)} not available here (usable cores: {format_cores(available)})")
    return format_cores(cores)


def requested_cores(options) -> Optional[list]:
    spec = options.cpu_affinity
    return parse_cores(spec) if spec else None


def pin_self(options) -> list:
    """Pin this process to --cpu-affinity (if given) before torch starts its threads; returns the cores it has."""
    cores = requested_cores(options)
    if cores:
        os.sched_setaffinity(0, cores)
    return usable_cores()
