"""Reading a small file the tools keep for themselves (a cache entry, a state file) that a shared or planted folder
may have made hostile: only a regular file is read (a FIFO there would block the tool for ever, a device never
end), it is opened without waiting (O_NONBLOCK) and, where asked, without following a link at its last component;
it is read up to a size cap; and JSON too deep to parse (RecursionError) or not JSON is `DamagedFile`, which the
caller treats as a state to rebuild or to refuse with one line, never as a traceback. Standard library only."""

from __future__ import annotations

import json
import os
import stat

MAX_STATE_BYTES = 64 * 1024 * 1024  # far above any state file we write; a bigger one is not ours


class NotRegularFile(OSError):
    """The path is a FIFO, a device, a socket or a directory: not read."""


class DamagedFile(ValueError):
    """The file is not what we write: not JSON, nested past what the parser takes, or too big."""


def read_regular(path: str, max_bytes: int = MAX_STATE_BYTES, follow_links: bool = True) -> bytes:
    """The bytes of the regular file at `path` (FileNotFoundError when there is none); NotRegularFile for
    anything else (a FIFO is opened without waiting for a writer, then refused); DamagedFile past `max_bytes`;
    `follow_links=False`: a link at `path` is refused (ELOOP), its target not read."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_links else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise NotRegularFile(f"{path} is {kind}; only a regular file is read")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > max_bytes:
                raise DamagedFile(f"{path} is larger than {max_bytes} bytes")
            chunks.append(chunk)
    finally:
        os.close(fd)


def load_json(path: str, max_bytes: int = MAX_STATE_BYTES, follow_links: bool = True):
    """The JSON value in the regular file at `path`: read_regular's errors, and DamagedFile when it is not JSON
    (bad UTF-8, bad syntax, or nested deeper than the parser's recursion allows)."""
    data = read_regular(path, max_bytes, follow_links)
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise DamagedFile(f"{path} is not valid JSON ({type(exc).__name__})") from None
