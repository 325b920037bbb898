"""The file locks a timed-out child was waiting for, and who held them (Linux's /proc/locks), so that its
timeout record says when another process kept it waiting. Under --compile-cache=shared a neighbour hung while
compiling the same kernel holds the Inductor cache's lock (docs/runner.md, "--compile-cache")."""

from __future__ import annotations

import getpass
import os
import re
from typing import Optional

import psutil

PROC_LOCKS = "/proc/locks"


def parse(text: str) -> list:
    """(lock id, waiting?, pid, inode) per line of /proc/locks: `1: FLOCK ADVISORY WRITE 42 08:01:1234 0 EOF`,
    a waiter's line `1: -> FLOCK ...` (same id as the lock it waits for)."""
    entries = []
    for line in text.splitlines():
        fields = line.split()
        waiting = len(fields) > 1 and fields[1] == "->"
        rest = fields[2:] if waiting else fields[1:]
        try:
            entries.append((fields[0], waiting, int(rest[3]), int(rest[4].rsplit(":", 1)[1])))
        except (IndexError, ValueError):  # a line of another shape: nothing to say about it
            continue
    return entries


def read_locks(text: Optional[str] = None) -> list:
    """`parse` of /proc/locks (or of `text`); [] where there is none (not Linux, no procfs)."""
    if text is None:
        try:
            with open(PROC_LOCKS) as handle:
                text = handle.read()
        except OSError:
            return []
    return parse(text)


def waits(pids: set, text: Optional[str] = None) -> list:
    """The locks any of `pids` waits for: [{"pid", "holder", "path", "holder_is"}] (path: the lock file, when
    a waiter's descriptors show it; holder_is: `holder_facts`, read now, while the holder is there)."""
    entries = read_locks(text)
    holders = {lock: pid for lock, waiting, pid, _ in entries if not waiting}
    return [{"pid": pid, "holder": holders[lock], "path": path_of(pid, inode), "holder_is": holder_facts(holders[lock])}
            for lock, waiting, pid, inode in entries if waiting and pid in pids and lock in holders]


def tree(pid: int) -> set:
    """Process `pid` and its descendants (empty once it is gone)."""
    try:
        return {pid} | {child.pid for child in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return set()


def held_in(directory: Optional[str], mine: set, text: Optional[str] = None) -> list:
    """The locks on files in `directory` held by processes outside `mine`: [{"pid": None, "holder", "path",
    "holder_is"}]. For a lock that is polled (filelock, Inductor's), where no waiter shows in /proc/locks."""
    if not directory:
        return []
    try:
        inodes = {entry.inode(): entry.path for entry in os.scandir(directory)}
    except OSError:  # no such directory: no lock there
        return []
    return [{"pid": None, "holder": pid, "path": inodes[inode], "holder_is": holder_facts(pid)}
            for _, waiting, pid, inode in read_locks(text) if not waiting and pid not in mine and inode in inodes]


def inductor_lock_dir(env: dict) -> str:
    """The locks directory of the Inductor cache a --compile-cache=shared child with environment `env` uses
    (torch's own default when the variable is unset; cold and warm children make caches of their own)."""
    cache = env.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(
        env.get("TMPDIR") or "/tmp", "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser()))
    return os.path.join(cache, "locks")


def path_of(pid: int, inode: int) -> Optional[str]:
    fd_dir = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return None
    for name in names:
        try:
            if os.stat(os.path.join(fd_dir, name)).st_ino == inode:
                return os.readlink(os.path.join(fd_dir, name))
        except OSError:
            continue
    return None


def holder_facts(pid: int) -> str:
    """What the holder is: its state, and where its output goes when that is a file (a config's log names the
    config), else its command line."""
    try:
        process = psutil.Process(pid)
        state = process.status()
        output = os.readlink(f"/proc/{pid}/fd/1")
        what = f"its output goes to {output}" if output.startswith("/") else " ".join(process.cmdline())[:160]
    except (psutil.Error, OSError):
        return "gone since"
    return f"{state}; {what}"


def describe(found: list) -> str:
    """`; waiting for the file lock PATH held by pid N (...)` per lock, or ''."""
    return "".join(f"; waiting for the file lock {entry['path'] or '(path unknown)'} held by pid {entry['holder']} "
                   f"({entry['holder_is']})" for entry in found)
