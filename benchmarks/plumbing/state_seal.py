"""A file we find in an output folder is a claim, not a fact (docs/architecture.md, "The rule for state"). A state
whose content can't be checked cheaply against what it stands for (a site's change points, a bisection's checkout)
is sealed: an HMAC-SHA256 of its bytes under a key only this user has (`seal.key` in the user's cache directory,
plumbing/user_cache.py, made 0600 the first time, never read through a link). A folder handed over by someone else
carries no valid seal, so its state is ignored and rebuilt, never obeyed. With caching off
(BENCHMARKS_PROBE_CACHE=off) the key lives for one process only: nothing sealed earlier is trusted. Standard library
only."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from typing import Optional

from benchmarks.plumbing import safe_reads, user_cache
from benchmarks.plumbing.safe_paths import open_no_follow

KEY_FILE = "seal.key"
KEY_BYTES = 32
_process_key: Optional[bytes] = None


def _new_key(path: str) -> bytes:
    key = secrets.token_bytes(KEY_BYTES)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = open_no_follow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


def _key() -> bytes:
    """This user's key: read from the cache directory, or made there (once); a process-wide one without a cache."""
    global _process_key
    directory = user_cache.cache_dir()
    if directory is None:
        if _process_key is None:
            _process_key = secrets.token_bytes(KEY_BYTES)
        return _process_key
    path = os.path.join(directory, KEY_FILE)
    for _ in range(2):  # a second process may make it between our read and our exclusive create
        try:
            key = safe_reads.read_regular(path, KEY_BYTES, follow_links=False)
            if len(key) == KEY_BYTES:
                return key
        except FileNotFoundError:
            pass
        except (OSError, ValueError):
            break
        try:
            return _new_key(path)
        except FileExistsError:
            continue
        except OSError:
            break
    if _process_key is None:  # an unusable cache directory: trust nothing from earlier runs
        _process_key = secrets.token_bytes(KEY_BYTES)
    return _process_key


def seal(data: bytes) -> str:
    """The seal of `data`: 64 hex digits that only this user's key gives."""
    return hmac.new(_key(), data, hashlib.sha256).hexdigest()


def sealed(data: bytes, claimed) -> bool:
    """Whether `claimed` is `data`'s seal under this user's key (a constant-time comparison)."""
    return isinstance(claimed, str) and hmac.compare_digest(seal(data), claimed)
