"""One sweep per results file: the parent holds a lock on `<results file>.lock` for the sweep's life
(docs/runner.md, "One sweep per results file").

A POSIX record lock (fcntl) on the lock file rather than an O_EXCL file alone: the kernel (or, on NFS, the
server's lock manager) drops it when its holder dies, SIGKILL included, so a dead parent's lock is taken over
without guessing from a pid whether it is dead, and without the race of two parents both breaking a stale file.
The file also says who holds it (pid, host, start time) so that a second parent can name the holder. The holder
unlinks the file before it lets go; a parent that locked a file already unlinked tries again."""

from __future__ import annotations

import datetime
import errno
import fcntl
import json
import logging
import os
import socket
import sys
import time
from typing import Callable, Optional

from benchmarks.plumbing import safe_paths
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.results import records

log = logging.getLogger("benchmarks.runner.results_lock")

SUFFIX = ".lock"
POLL_SECONDS = 0.2  # how often a --wait parent tries again (polling also works where blocking locks don't)
HOLDER_READ_SECONDS = 1.0  # how long to wait for a holder that just locked to write who it is
_BUSY = (errno.EACCES, errno.EAGAIN)


class LockBusy(Exception):
    """Another live parent holds the results file."""

    def __init__(self, results_path: str, holder: Optional[dict]):
        super().__init__(f"{results_path} is being written by another sweep ({describe(holder)}); wait for it with "
                         "--wait, or write elsewhere with --output-dirname")
        self.holder = holder


class LockUnavailable(Exception):
    """The file system can't lock the file (no POSIX locks there): the sweep does not run unguarded."""


def describe(holder: Optional[dict]) -> str:
    if not holder:
        return "a parent that has not yet said who it is"
    return f"pid {holder.get('pid')} on host {holder.get('host')}, started {holder.get('started')}"


def this_parent() -> dict:
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": started, "argv": sys.argv}


def _read_holder(path: str) -> Optional[dict]:
    try:
        with os.fdopen(safe_paths.open_no_follow(path, os.O_RDONLY), encoding="utf-8", errors="replace") as handle:
            return _parse(handle.read())
    except OSError:
        return None


class ResultsLock:
    """The lock of one results file: `acquire` (raises LockBusy, or waits), `release`; a context manager."""

    def __init__(self, results_path: str, wait: bool = False, on_wait: Optional[Callable[[Optional[dict]], None]] = None):
        self.results_path = results_path
        self.path = results_path + SUFFIX
        self.wait = wait
        self.on_wait = on_wait
        self.fd: Optional[int] = None
        self.previous: Optional[dict] = None  # the holder of a lock taken over (ended without releasing it)

    def acquire(self) -> "ResultsLock":
        announced = False
        while True:
            fd = self._try_lock()
            if fd is not None:
                break
            holder = self._busy_holder()
            if not self.wait:
                raise LockBusy(self.results_path, holder)
            if not announced and self.on_wait:
                self.on_wait(holder)
            announced = True
            time.sleep(POLL_SECONDS)
        # read through this descriptor: closing any other one of this file would drop the lock (POSIX)
        self.previous = _parse(os.pread(fd, 1 << 16, 0).decode("utf-8", "replace"))
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(this_parent()).encode(), 0)
        self.fd = fd
        if self.previous:
            log.warning("took over the lock on %s from %s, which ended without releasing it", self.results_path,
                        describe(self.previous))
        return self

    def _try_lock(self) -> Optional[int]:
        """The locked descriptor of the file now at self.path, or None while another parent holds it."""
        # not through a link: its target (a file of the user's, maybe outside the output directory) would be
        # emptied and given the holder's JSON; LinkRefused instead (the sweep's one line, exit 2)
        fd = safe_paths.open_no_follow(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in _BUSY:
                return None
            raise LockUnavailable(f"cannot lock {self.path} ({exc.strerror}): this file system has no working "
                                  "POSIX locks; write the results to a local disk or NFS (docs/runner.md)") from None
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            current = None
        if current is None or not os.path.samestat(os.fstat(fd), current):
            os.close(fd)  # its holder unlinked it as it let go: lock the file that is there now
            return self._try_lock()
        return fd

    def _busy_holder(self) -> Optional[dict]:
        """Who holds it, as its file says (a holder that has only just locked may not have written it yet)."""
        deadline = time.monotonic() + HOLDER_READ_SECONDS
        while True:
            holder = _read_holder(self.path)
            if holder or time.monotonic() >= deadline:
                return holder
            time.sleep(0.05)

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.path)  # before letting go, so no parent ever locks a file that says we hold it
        except FileNotFoundError:
            pass
        os.close(self.fd)  # closing drops the lock
        self.fd = None

    def __enter__(self) -> "ResultsLock":
        return self if self.fd is not None else self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def take(output_dir: str, results_path: str, wait: bool = False,
         on_wait: Optional[Callable[[Optional[dict]], None]] = None, beside: tuple = ()) -> ResultsLock:
    """The lock of `results_path`, held (the sweep's, or the batch-size search's attempts), once the output directory
    is made and writable, and the file, and each (path, what) `beside` it that the same parent reads, is no FIFO nor
    device (reading it would block); a UsageError (one line) otherwise, or while another parent holds it (without
    --wait) or the file system can't lock. A Ctrl-C while it waits is the caller's."""
    lock = ResultsLock(results_path, wait=wait, on_wait=on_wait)
    problem = records.check_writable_dir(output_dir) or records.results_file_problem(results_path)
    for path, what in beside:
        problem = problem or records.results_file_problem(path, what)
    if problem:
        raise UsageError(problem)
    try:
        return lock.acquire()
    except (LockBusy, LockUnavailable) as exc:
        raise UsageError(str(exc)) from None


def _parse(text: str) -> Optional[dict]:
    try:
        value = json.loads(text) if text.strip() else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
