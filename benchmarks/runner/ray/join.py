"""Join the Ray cluster a sweep names, or start a Ray instance of its own (docs/parallel.md, "On a cluster").

- A cluster started with `ray start --head` where a token exists (~/.ray/auth_token, which Ray writes the
  first time any local instance starts) asks every client for that token; Ray's client presents it only when
  RAY_AUTH_MODE=token. So when a token is there (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)
  and the mode is unset, the runner asks for token mode before Ray is imported, and a refused or missing
  token is one line that says which, instead of Ray's 15 s of retries on stderr.
- Without an address the runner starts its own instance (`address="local"`), whatever an earlier
  `ray start --head` that was never stopped left in Ray's ray_current_cluster file.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from typing import Optional

from benchmarks.plumbing.cli_support import UsageError

CONNECT_TIMEOUT = 5.0  # seconds to reach the cluster's address before saying it is unreachable
AUTH_MODE = "RAY_AUTH_MODE"
REFUSED = ("Unauthenticated", "InvalidAuthToken", "AuthenticationError")


def token_source(environ=os.environ) -> Optional[str]:
    """Where Ray's client would read a cluster token from, or None when there is none."""
    if environ.get("RAY_AUTH_TOKEN"):
        return "$RAY_AUTH_TOKEN"
    home = environ.get("HOME") or os.path.expanduser("~")
    for path in (environ.get("RAY_AUTH_TOKEN_PATH"), os.path.join(home, ".ray", "auth_token")):
        if path and os.path.isfile(path) and os.path.getsize(path):
            return path
    return None


def ask_for_token_mode(environ=os.environ) -> Optional[str]:
    """Set RAY_AUTH_MODE=token when a token exists and the user set no mode (before `import ray`); returns
    where the token is."""
    source = token_source(environ)
    if source and AUTH_MODE not in environ:
        environ[AUTH_MODE] = "token"
    return source


def check_reachable(address: str) -> None:
    """A host:port (or [IPv6]:port) that answers nothing is one line; anything else (auto, ray://...) is Ray's."""
    host, _, port = address.rpartition(":")
    if address == "auto" or "://" in address or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as exc:
        raise UsageError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def stderr_kept(sink):
    """Ray's C++ client writes its retries to fd 2; they go to `sink` instead (read back on failure)."""
    saved = os.dup(2)
    os.dup2(sink.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def init(ray, address: Optional[str], token: Optional[str], **options) -> None:
    """ray.init on `address` (None: a new local instance); any failure is one UsageError line."""
    where = address or "a new local instance"
    with tempfile.TemporaryFile() as sink:
        try:
            with stderr_kept(sink):
                ray.init(address=address or "local", include_dashboard=False, log_to_driver=False,
                         configure_logging=False, **options)
            return
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
            sink.seek(0)
            said = sink.read().decode("utf-8", "replace") + str(exc)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if address and any(word in said for word in REFUSED):
        if token:
            raise UsageError(f"the Ray cluster at {address} refused the token from {token}: use the head node's "
                             "(its ~/.ray/auth_token, or `ray get-auth-token` there)") from None
        raise UsageError(f"the Ray cluster at {address} requires a token and none was found here: copy the head "
                         "node's ~/.ray/auth_token to this machine's ~/.ray/, or set RAY_AUTH_TOKEN") from None
    raise UsageError(f"cannot join the Ray cluster at {where}: {first}") from None
