"""Scratch directories under the machine's temp directory, named so that their owner can be told apart and
what a dead owner left is collected (docs/architecture.md, "Executors").

Two shapes, both under `tempfile.gettempdir()`:
- a process's own: `ptbench-<kind>-<pid>-<random>` (a fork server's socket, a child's compile cache); it is
  stale once that pid is gone;
- a sweep's, per node: `ptbench-<kind>-<uid>/<sweep id>` (the Ray tasks' core locks and output scratch),
  where the sweep id starts `<driver host>-<driver pid>-`; it is stale once that driver is gone. Only a
  driver of this host can be checked: another host's sweep directory is left to that sweep's own end.

A sweep removes its own at its end, and the launcher what a child that did not end well made for itself
(`remove_owned_by`); `collect_stale` removes the dead ones a killed process left, at the start of the next
sweep. A pid that was reused by another process keeps its directory (never removes a live one).

A sweep's root sits at a name anyone on the machine can predict, so it is used (and its sweeps collected) only when
it is a real directory of this user that no one else may write (`checked_root`: created 0o700; a symbolic link
planted there, another user's folder or a group- or world-writable one is refused, `ScratchRefused`, and never
listed for removal): a link at `ptbench-cores-<uid>` would otherwise lead collect_stale to delete folders outside.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile

from benchmarks.plumbing.safe_paths import safe_name

PREFIX = "ptbench-"
OWNED_KINDS = ("fork-server", "compile-cache")  # a process's own: ptbench-<kind>-<pid>-<random>
SWEEP_KINDS = ("cores", "ray")  # a sweep's, per node: ptbench-<kind>-<uid>/<sweep id>


def owned_dir(kind: str) -> str:
    """A new directory of this process's own (only this user may open it)."""
    return tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{os.getpid()}-")


class ScratchRefused(OSError):
    """A sweep's scratch root that is not a real directory of this user's alone: not used."""


def sweep_root(kind: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"{PREFIX}{kind}-{os.getuid()}")


def root_problem(path: str):
    """None when `path` is a directory (not a link to one) owned by this user that no one else may write, else why
    not (FileNotFoundError when there is nothing there)."""
    found = os.lstat(path)
    if stat.S_ISLNK(found.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(found.st_mode):
        return "is not a directory"
    if found.st_uid != os.getuid():
        return f"belongs to uid {found.st_uid}, not to this user ({os.getuid()})"
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "may be written by others (group or world writable)"
    return None


def checked_root(kind: str) -> str:
    """The sweep root of `kind`, made (0o700) when missing; ScratchRefused when what is there is not ours alone."""
    root = sweep_root(kind)
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    problem = root_problem(root)
    if problem:
        raise ScratchRefused(f"scratch directory {root} {problem}; remove it, or set TMPDIR to another folder")
    return root


def sweep_dir(kind: str, sweep_id: str) -> str:
    return os.path.join(checked_root(kind), safe_name(sweep_id))


def sweep_id_of(host: str, pid: int, timestamp) -> str:
    return f"{host}-{pid}-{timestamp}"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _owner_pid(name: str, kind: str):
    rest = name[len(f"{PREFIX}{kind}-"):]
    pid = rest.split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def _driver_gone(sweep_name: str, host: str) -> bool:
    """Whether a sweep directory's driver (`<host>-<pid>-<timestamp>`) was of this host and is gone."""
    parts = sweep_name.rsplit("-", 2)
    return len(parts) == 3 and parts[0] == safe_name(host) and parts[1].isdigit() and not alive(int(parts[1]))


def stale(root: str = None) -> list:
    """Every scratch directory under `root` (default: the temp directory) whose owner is gone."""
    root = root or tempfile.gettempdir()
    host = socket.gethostname()
    found = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return found
    for name in names:
        path = os.path.join(root, name)
        for kind in OWNED_KINDS:
            if name.startswith(f"{PREFIX}{kind}-"):
                pid = _owner_pid(name, kind)
                if pid is not None and pid != os.getpid() and not alive(pid) and _mine(path):
                    found.append(path)
        for kind in SWEEP_KINDS:
            if name == f"{PREFIX}{kind}-{os.getuid()}":
                try:
                    if root_problem(path):  # a link planted there, another's folder: nothing in it is ours
                        continue
                    sweeps = sorted(os.listdir(path))
                except OSError:
                    continue
                found.extend(os.path.join(path, s) for s in sweeps if _driver_gone(s, host))
    return found


def _mine(path: str) -> bool:
    try:
        return os.lstat(path).st_uid == os.getuid()
    except OSError:
        return False


def collect_stale(root: str = None) -> list:
    """Remove what `stale` finds; the paths removed."""
    removed = []
    for path in stale(root):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            removed.append(path)
    return removed


def remove_owned_by(pid: int, root: str = None) -> list:
    """Remove the directories a process that is gone made for itself (a killed child's compile cache: it
    had no chance to); the paths removed."""
    import glob

    if alive(pid):
        return []
    removed = []
    for kind in OWNED_KINDS:
        for path in glob.glob(os.path.join(root or tempfile.gettempdir(), f"{PREFIX}{kind}-{pid}-*")):
            if _mine(path):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed


def remove_empty_dirs(root: str) -> None:
    """Remove every directory under `root` (and `root`) that holds no file, deepest first."""
    for folder, _, _ in sorted(os.walk(root), key=lambda entry: -len(entry[0])):
        try:
            os.rmdir(folder)
        except OSError:
            pass
