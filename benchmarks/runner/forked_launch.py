"""A config's child started by a fork server (benchmarks/fork_server/: the servers, and how to ask one to fork) and
watched by the launcher as a spawned child is: a server lost under the child is replaced once and the config run
again; a server that refuses (its forks could not use CUDA) leaves the child to be spawned, its record saying why."""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable, Optional

from benchmarks.fork_server.client import ForkRefused, ServerClient, ServerLost
from benchmarks.plumbing import disk_writes
from benchmarks.runner import launcher

log = logging.getLogger("benchmarks.runner.forked_launch")


def run_child(request: launcher.ChildRequest, servers=None) -> launcher.ChildResult:
    """launcher.run_child, forked from `servers` (the sweep's ForkServers) when the request names a server."""
    if servers is None or request.fork is None:
        return launcher.run_child(request)
    return run_forked(request, servers.server)


def run_forked(request: launcher.ChildRequest, server_for: Callable, first: Optional[ServerClient] = None
               ) -> launcher.ChildResult:
    """launcher.run_child on the server `server_for(spec, replacing=None)` gives (a ServerClient; `first`: that
    server, asked for already); a server lost under the child is replaced (`server_for(spec, replacing=lost)`,
    which may raise ServerLost itself) and the config run once more."""
    server = first or server_for(request.fork, None)
    result = _attempt(server, request)
    if result.record is not None or not result.lost:
        return result
    log.warning("%s; starting a new fork server and running the config again", result.lost)
    disk_writes.append_bytes(request.log_path,
                             f"[fork server] {result.lost}; the config runs again on a new server\n".encode())
    try:
        server = server_for(request.fork, server)
    except ServerLost as exc:
        return launcher.ChildResult(record=None, returncode=None, lost=str(exc), launch="fork")
    return _attempt(server, request)


def _attempt(server: ServerClient, request: launcher.ChildRequest) -> launcher.ChildResult:
    try:
        return launcher.run_child(request, start=server.start)
    except ServerLost as exc:
        return launcher.ChildResult(record=None, returncode=None, lost=str(exc), launch="fork")
    except ForkRefused as exc:  # spawned instead; the record says why
        reason = f"{exc}; spawned instead"
        log.warning("%s: %s", server.spec.name, reason)
        disk_writes.append_bytes(request.log_path, f"[fork server] {reason}\n".encode())
        return dataclasses.replace(launcher.run_child(request), launch_reason=reason)
