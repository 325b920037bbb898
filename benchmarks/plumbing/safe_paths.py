"""Names made safe once, and every write checked to stay under the output directory (docs/architecture.md,
"Paths stay under the output directory").

`safe_name` turns any text (a model name, a config slug) into one path component: no separator, no `..`,
never empty, never hidden, the same text always giving the same name. `inside` is the check every writer
makes before it writes: the resolved path, or `PathEscapes` naming the root and the path that left it."""

from __future__ import annotations

import hashlib
import os
import re

# Longest name kept as is; a longer one keeps its start and ends with a hash of the whole, so two long
# names that share their start stay apart.
MAX_NAME = 120
_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")
_DOTS = re.compile(r"\.{2,}")


class PathEscapes(ValueError):
    """A path that would resolve outside the directory it must stay in."""

    def __init__(self, root: str, relative: str, resolved: str):
        super().__init__(f"path {relative!r} resolves to {resolved!r}, outside {root!r}")
        self.root = root
        self.relative = relative
        self.resolved = resolved


def safe_name(text: str) -> str:
    """One path component made from `text`: [A-Za-z0-9._=-] only, no `..`, no leading dot, never empty."""
    name = _UNSAFE.sub("_", str(text))
    name = _DOTS.sub(lambda dots: "_" * len(dots.group()), name)
    if name.startswith("."):
        name = "_" + name[1:]
    if not name:
        name = "_"
    if len(name) > MAX_NAME:
        digest = hashlib.sha1(str(text).encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = name[:MAX_NAME - len(digest) - 1] + "-" + digest
    return name


def short_hash(text: str) -> str:
    """8 hex digits of `text`'s SHA-1: a long value (XLA_FLAGS, Inductor settings) named in a file name."""
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def inside(root: str, relative: str) -> str:
    """The absolute, resolved path of `relative` under `root` (symbolic links followed); PathEscapes when it
    would land outside `root` (an absolute `relative`, `..`, or a link that points out)."""
    real_root = os.path.realpath(root)
    resolved = os.path.realpath(os.path.join(real_root, relative))
    if resolved != real_root and not resolved.startswith(real_root.rstrip(os.sep) + os.sep):
        raise PathEscapes(root, relative, resolved)
    return resolved
