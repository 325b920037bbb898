"""The one writer of files that must survive a full disk: a whole file replaced atomically (`replacing`,
`write_bytes`, `write_text`, `write_json`) and an append of whole bytes (`write_all`, the results file's and
the logs'). Every refusal of the disk is one error, `WriteFailed`, naming the path (docs/architecture.md,
"Writing files").

A file replaced atomically is written to a temporary file in its own directory (so the rename never crosses
file systems), fsynced, then renamed over the target with os.replace: a reader or a crash sees the old file or
the new one, never half of one. A write that fails removes its temporary file, so a full disk is left no
fuller by the attempt.

Fault injection (tests, and anyone who wants to see what a full disk does without filling one): the variable
PTBENCH_WRITE_FAULT=ERRNO:PATTERN[:AFTER] makes the writes to files whose name matches PATTERN (fnmatch, the
base name) fail with ERRNO (ENOSPC, EDQUOT or EIO) once AFTER of them (default 0) have succeeded in this
process; the failing write first writes half its bytes, as a disk that fills mid-write does.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import os
import secrets
import stat
from typing import Iterator, Optional

from benchmarks.plumbing import safe_paths, safe_reads

# What a disk says when it can't take more (EIO: what NFS and failing disks say, often for the same cause).
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EIO)
FAULT_VARIABLE = "PTBENCH_WRITE_FAULT"


class WriteFailed(OSError):
    """The disk refused a write of `path` (errno and strerror: its reason). An OSError, so callers that let any
    OSError through (run_main: one line, exit 2) need nothing new; its text names the path."""

    def __init__(self, code: int, strerror: str, path: str):  # OSError's own order: it pickles and unpickles
        super().__init__(code, strerror, path)
        self.path = path

    @classmethod
    def of(cls, path: str, cause: OSError) -> "WriteFailed":
        if isinstance(cause, WriteFailed):
            return cause
        return cls(cause.errno or errno.EIO, cause.strerror or str(cause), path)

    @property
    def disk_full(self) -> bool:
        return self.errno in DISK_FULL_ERRNOS

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.strerror} [{errno.errorcode.get(self.errno, self.errno)}]"


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` (or what it was raised from) is the disk refusing more: a full disk, a quota, an I/O error."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def describe_failure(exc: BaseException, default_path: Optional[str]) -> dict:
    """A disk refusal as plain data (it crosses a pipe, or Ray): {"path", "errno", "strerror"}; the path is the
    one the error names, else `default_path`."""
    while exc is not None and not (isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS):
        exc = exc.__cause__ or exc.__context__
    code = exc.errno if exc is not None else errno.EIO
    path = (getattr(exc, "path", None) or getattr(exc, "filename", None)) if exc is not None else None
    path = path or default_path
    return {"path": str(path) if path else None, "errno": code, "strerror": os.strerror(code)}


def from_description(found: dict) -> WriteFailed:
    return WriteFailed(found.get("errno") or errno.EIO, found.get("strerror") or "write failed", found.get("path"))


# ---------------------------------------------------------------- fault injection

_fault_counts: dict = {}


def _injected_fault(path: str) -> Optional[int]:
    """The errno this write must fail with (PTBENCH_WRITE_FAULT), or None; counts the writes it lets through."""
    spec = os.environ.get(FAULT_VARIABLE)
    if not spec:
        return None
    name, _, rest = spec.partition(":")
    pattern, _, after = rest.partition(":")
    code = getattr(errno, name, None)
    if code not in DISK_FULL_ERRNOS or not pattern or not fnmatch.fnmatch(os.path.basename(path), pattern):
        return None
    done = _fault_counts.get(spec, 0)
    if done < (int(after) if after.isdigit() else 0):
        _fault_counts[spec] = done + 1
        return None
    return code


# ---------------------------------------------------------------- appending

def write_all(fd: int, data: bytes, path: str) -> None:
    """Write every byte of `data` at `fd` (a descriptor of `path`, e.g. opened O_APPEND); WriteFailed if the disk
    refuses (some bytes may have been written: an appender truncates back, see records.ResultsWriter)."""
    try:
        fault = _injected_fault(path)
        if fault is not None:
            os.write(fd, data[: len(data) // 2])
            raise OSError(fault, os.strerror(fault))
        written = os.write(fd, data)
        while written < len(data):  # regular files write whole; this only guards odd file systems
            written += os.write(fd, data[written:])
    except OSError as exc:
        raise WriteFailed.of(path, exc) from None


def append_bytes(path: str, data: bytes) -> None:
    """Append `data` to `path` (created if need be), whole or not at all: a refused append is cut back off and is
    WriteFailed naming `path` (a log's lines, the parent's part of it). A symbolic link at `path` is not followed:
    WriteFailed saying so (nothing is written where it points, and a dangling one's target is not created)."""
    try:
        fd = safe_paths.open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as exc:
        raise WriteFailed.of(path, exc) from None
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        try:
            write_all(fd, data, path)
        except WriteFailed:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end)
            raise
    finally:
        os.close(fd)


def no_space_left(path: str) -> bool:
    """Whether the file system holding `path` (a file or directory) has no block left for this user: a write
    there has failed or will (what a child that died writing its log leaves)."""
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    try:
        found = os.statvfs(directory)
    except OSError:
        return False
    if not found.f_blocks:  # a file system that says nothing of its size (some FUSE ones): no sign either way
        return False
    return (found.f_bfree if os.geteuid() == 0 else found.f_bavail) == 0  # root may write the reserved blocks


# ---------------------------------------------------------------- replacing a whole file

def temporary_path(path: str) -> str:
    """A new hidden name beside `path` (same directory, so same file system) for what will replace it."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def _sync_directory(directory: str) -> None:
    """The rename itself reaches the disk (best effort: some file systems can't open a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def refuse_unsafe_target(path: str) -> None:
    """LinkRefused when `path` is a symbolic link (it is never followed, nor replaced: a link planted at a report's
    name is a mistake or an attack, never an order), NotRegularFile when it is a device or a folder (`-o /dev/sda`
    as root would replace the device's node). A FIFO or a socket left there is replaced, never written into."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise WriteFailed.of(path, exc) from None
    if stat.S_ISLNK(mode):
        raise safe_paths.LinkRefused(path)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISDIR(mode):
        raise safe_reads.NotRegularFile(errno.EEXIST, "a device or a folder; only a file is replaced", path)


@contextlib.contextmanager
def replacing(path: str, mode: str = "wb", encoding: Optional[str] = None, keep_mode: bool = True) -> Iterator:
    """Open a temporary file beside `path` for writing; on a clean exit it is fsynced and renamed over `path`
    (keeping the old file's permissions with `keep_mode`). On any failure the temporary file is removed and
    `path` is untouched; a refusal of the disk is WriteFailed naming `path`. A link at `path` (LinkRefused) or
    something there that is not a regular file (NotRegularFile: a FIFO, a device, a folder) is refused before
    anything is written: a file is only ever replaced by a temporary file of ours in its own real folder."""
    refuse_unsafe_target(path)
    temporary = temporary_path(path)
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for open()
    except OSError as exc:
        raise WriteFailed.of(path, exc) from None
    try:
        try:
            with os.fdopen(fd, mode, **({"encoding": encoding} if "b" not in mode else {})) as handle:
                yield handle
                handle.flush()
                fault = _injected_fault(path)
                if fault is not None:
                    raise OSError(fault, os.strerror(fault))
                os.fsync(handle.fileno())
            if keep_mode and os.path.exists(path):
                import shutil

                shutil.copymode(path, temporary)
            os.replace(temporary, path)
        except OSError as exc:
            raise WriteFailed.of(path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_directory(os.path.dirname(os.path.abspath(path)))


def publish(temporary: str, path: str) -> None:
    """Rename `temporary` (a whole file written beside `path`, e.g. by several workers; temporary_path names
    it) over `path`, after an fsync. On a refusal `temporary` is removed and WriteFailed names `path`; a link or a
    non-regular file at `path` is refused as `replacing` refuses it (`temporary` removed)."""
    try:
        refuse_unsafe_target(path)
        fault = _injected_fault(path)
        if fault is not None:
            raise OSError(fault, os.strerror(fault))
        fd = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise WriteFailed.of(path, exc) from None
    _sync_directory(os.path.dirname(os.path.abspath(path)))


def write_bytes(path: str, data: bytes) -> None:
    """`path` holds exactly `data` afterwards, or (WriteFailed) is as it was."""
    with replacing(path, "wb") as handle:
        handle.write(data)


def write_text(path: str, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str, data, indent: Optional[int] = None, sort_keys: bool = False, newline: bool = False) -> None:
    write_text(path, json.dumps(data, indent=indent, sort_keys=sort_keys) + ("\n" if newline else ""))
