"""Paths under the output directory, made safe (docs/architecture.md, "Paths stay under the output directory"):
names made safe once, every path checked to stay under its root, and the deterministic names of everything a
config writes (no random hashes).

`safe_name` turns any text (a model name, a config slug) into one path component: no separator, no `..`,
never empty, never hidden, the same text always giving the same name, and two different texts two different names
(a name that had to change ends with a hash of the original, so `ä` and `ö` don't share a log). `inside` is the
check every writer makes before it writes: the resolved path, or `PathEscapes` naming the root and the path that
left it. `open_no_follow` opens a file the runner writes (a lock, a log) without following a symbolic link at its
last component: a link there, even one pointing inside, is refused (`LinkRefused`), so nothing of the user's is
written through it.

Under the output directory (`under`: joined, then checked with `inside`): logs at <out>/logs/<model>/<config>.log,
artifacts at <out>/<model>/<kind>-<config>[-<repeat>].<ext> (the XLA dumps torch_xla writes because of the child's
environment among them: hlo_dir, ir_file)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
from typing import Optional

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


class LinkRefused(OSError):
    """A file the runner would write is a symbolic link: it is not followed (ELOOP, as O_NOFOLLOW says)."""

    def __init__(self, path: str):
        super().__init__(errno.ELOOP, "a symbolic link; the runner writes through no link (docs/runner.md, "
                         "\"Paths stay under the output directory\")", path)


def safe_name(text: str) -> str:
    """One path component made from `text`: [A-Za-z0-9._=-] only, no `..`, no leading dot, never empty, at most
    MAX_NAME long. A text that is already such a name is kept as it is; any other (a character replaced, the name
    cut) ends with `-` and 8 hex digits of its SHA-1, so that two texts never share a name (`ä`, `ö` -> `_-961fa22f`,
    `_-cce6ff74`; `a b` -> `a_b-7dbde935` beside `a_b`)."""
    text = str(text)
    name = _UNSAFE.sub("_", text)
    name = _DOTS.sub(lambda dots: "_" * len(dots.group()), name)
    if name.startswith("."):
        name = "_" + name[1:]
    if not name:
        name = "_"
    if name == text and len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return name[:MAX_NAME - len(digest) - 1] + "-" + digest


def open_no_follow(path: str, flags: int, mode: int = 0o666) -> int:
    """os.open(path, flags | O_NOFOLLOW): a descriptor of the file itself, never of what a link at `path` points
    to (a dangling link's target is not created either); LinkRefused when `path` is a link."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise LinkRefused(path) from None
        raise


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


def under(output_dir: str, *parts: str) -> str:
    """output_dir joined with parts, as given (records name it relative to output_dir), once it is known to
    resolve under output_dir."""
    relative_path = os.path.join(*parts)
    inside(output_dir, relative_path)
    return os.path.join(output_dir, relative_path)


def relative(path: str, output_dir: str) -> str:
    """How records name a file: relative to the output directory, so the directory can move."""
    return os.path.relpath(path, output_dir)


def model_dirname(model_config: dict) -> str:
    name = safe_name(str(model_config.get("model_name", "model")))
    params = model_config.get("params")
    if params:
        name += "-" + short_hash(json.dumps(params, sort_keys=True))
    return name


def log_path(output_dir: str, model_config: dict, experiment, round_index: int = 0) -> str:
    """<out>/logs/<model>/<config>.log; a --rounds round past the first: <config>.round<N>.log."""
    suffix = f".round{round_index}" if round_index else ""
    return under(output_dir, "logs", model_dirname(model_config), experiment.slug() + suffix + ".log")


def artifact_path(output_dir: str, model_config: dict, experiment, kind: str, ext: str = "",
                  repeat: Optional[int] = None) -> str:
    name = f"{kind}-{experiment.slug()}"
    if repeat is not None:
        name += f"-{repeat}"
    if ext:
        name += "." + ext.lstrip(".")
    return under(output_dir, model_dirname(model_config), name)


def artifact_file(output_dir: str, model_config: dict, experiment, kind: str, ext: str = "",
                  repeat: Optional[int] = None) -> str:
    """artifact_path made absolute: what a tool (torch_xla, a profiler) is given to write to."""
    return os.path.abspath(artifact_path(output_dir, model_config, experiment, kind, ext, repeat))


def hlo_dir(output_dir: str, model_config: dict, experiment) -> str:
    """--dump-hlo's directory (torch_xla's --xla_dump_to)."""
    return artifact_file(output_dir, model_config, experiment, "hlo")


def ir_file(output_dir: str, model_config: dict, experiment, save_ir_format: str) -> str:
    """--save-ir-format's file (torch_xla's XLA_SAVE_TENSORS_FILE, to which it appends the device ordinal)."""
    return artifact_file(output_dir, model_config, experiment, "dump", save_ir_format)
