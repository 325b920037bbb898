"""Names made safe once, and every write checked to stay under its root directory (docs/architecture.md,
"Executors": files shipped from Ray nodes are written through `inside`).

`safe_name(text)`: one path component, never `..`, never a separator. `inside(root, relative)`: the resolved
path under `root`, or `PathEscapes` (a ValueError) when it would land outside it."""

from __future__ import annotations

import os
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


class PathEscapes(ValueError):
    """A path that would resolve outside the directory it must stay in."""


def safe_name(text: str) -> str:
    """[A-Za-z0-9._=-] only, no `..`, no leading dot, never empty."""
    name = _UNSAFE.sub("_", str(text)).replace("..", "__")
    if name.startswith("."):
        name = "_" + name[1:]
    return name or "_"


def inside(root: str, relative: str) -> str:
    """The absolute, resolved path of `relative` under `root` (links followed), or PathEscapes."""
    real_root = os.path.realpath(root)
    resolved = os.path.realpath(os.path.join(real_root, relative))
    if resolved != real_root and not resolved.startswith(real_root.rstrip(os.sep) + os.sep):
        raise PathEscapes(f"path {relative!r} resolves to {resolved!r}, outside {root!r}")
    return resolved
