"""Launch one child for one config and get its record back: the executor interface (docs/architecture.md, "Executors").

The child runs in its own session (process group). Its output streams to a log file (and to the
terminal with --print-subprocess); its record comes back over a pipe named on its command line.
A timeout or a memory limit kills the whole group. Whatever happens, no process of it is left.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import logging
import os
import re
import signal
import subprocess
import threading
import time
from typing import Callable, Optional

import psutil

from benchmarks.config.process_env import PARENT_PID_VARIABLE, STACKS_SIGNAL
from benchmarks.plumbing import cli_support, disk_writes, safe_paths, scratch_dirs
from benchmarks.plumbing.process_groups import kill_group
from benchmarks.runner import lock_waits, warm_start

log = logging.getLogger("benchmarks.runner.launcher")


@dataclasses.dataclass
class ChildRequest:
    argv: list
    env: dict
    log_path: str
    timeout: float
    memory_limit: Optional[int] = None
    echo: Optional[Callable[[str], None]] = None  # where to stream output too (--print-subprocess)
    cpu_affinity: Optional[list] = None  # cores to pin the child to (--cpu-affinity, or its --jobs grant)
    on_start: Optional[Callable[[int], None]] = None  # told the child's pid (= its process group) once started
    fork: Optional[object] = None  # the fork server that may start it (fork_server.client.ServerSpec); None: spawn it
    shared_compile_cache: bool = False  # --compile-cache=shared: its Inductor cache (and locks) are the machine's
    uses_cuda: bool = False  # a CUDA config: a fork server whose forks can't use CUDA refuses it (it is spawned)
    warm_start: bool = False  # --compile-cache=warm-start: two children in turn on one cache (runner/warm_start.py)


@dataclasses.dataclass
class ChildResult:
    record: Optional[dict]
    returncode: Optional[int]
    last_phase: str = "setup"
    timed_out: bool = False
    out_of_memory: bool = False
    peak_tree_rss: int = 0
    seconds: float = 0.0
    cpu_affinity: Optional[list] = None  # the cores the child had
    start_error: Optional[str] = None  # why the child could not be started at all
    lost: Optional[str] = None  # why the executor lost the child with its host (e.g. a Ray worker died)
    launch: str = "spawn"  # how it started: "spawn" (a fresh interpreter) or "fork" (from a fork server)
    launch_reason: Optional[str] = None  # why a config that could have been forked was spawned
    # The disk refused a write of this config's files (its log, its golden entry): {"path", "errno", "strerror"}.
    # Not the model's failure: the sweep stops there and writes no record for it (docs/runner.md, "A full disk").
    write_failed: Optional[dict] = None
    # Timed out: the file locks its process tree was waiting for, and their holders (runner/lock_waits.py).
    lock_waits: list = dataclasses.field(default_factory=list)
    hung_in: Optional[str] = None  # timed out: the innermost frame of the stack it wrote (`where_it_hung`)
    warm_start: Optional[dict] = None  # a warm start's pair: the record's `warm_start` (runner/warm_start.py)
    # The record's undeclared keys a feature's code set -> that feature, as the child handed them beside the record
    # (results/record.py's Record.undeclared_by): the writer's check names the feature.
    undeclared_by: dict = dataclasses.field(default_factory=dict)

    def signal_name(self) -> Optional[str]:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


def tree_rss(process: psutil.Process) -> int:
    total = 0
    try:
        members = [process] + process.children(recursive=True)
    except psutil.Error:
        return 0
    for member in members:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            continue
    return total


class _RecordReader(threading.Thread):
    """Reads the child's hand-back pipe: phase markers, then one record (JSON lines)."""

    def __init__(self, fd: int):
        super().__init__(name="record-reader", daemon=True)
        self.fd = fd
        self.phase = "setup"
        self.record = None
        self.undeclared_by = {}
        self.write_failed = None

    def run(self) -> None:
        with os.fdopen(self.fd, "r", encoding="utf-8", errors="replace") as stream:
            for line in stream:
                try:
                    message = json.loads(line)
                except ValueError:
                    log.warning("ignored a malformed line on the record pipe")
                    continue
                if "phase" in message:
                    self.phase = message["phase"]
                if "write_failed" in message:  # the child's disk refused a write (single_config.main)
                    self.write_failed = message["write_failed"]
                if "record" in message:
                    self.record = message["record"]
                    if isinstance(message.get("undeclared_by"), dict):
                        self.undeclared_by = message["undeclared_by"]
                    return


class _Tee(threading.Thread):
    def __init__(self, source, log_file, echo):
        super().__init__(name="output-tee", daemon=True)
        self.source, self.log_file, self.echo = source, log_file, echo

    def run(self) -> None:
        for raw in iter(self.source.readline, b""):
            self.log_file.write(raw)
            self.log_file.flush()
            self.echo(raw.decode("utf-8", errors="replace").rstrip("\n"))


class Spawned:
    """A child started as a fresh interpreter (the launcher is its parent)."""

    launch = "spawn"
    lost = None

    def __init__(self, popen: subprocess.Popen):
        self.popen = popen
        self.pid = popen.pid

    def ended_within(self, seconds: Optional[float]) -> bool:
        try:
            self.popen.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    @property
    def returncode(self) -> Optional[int]:
        return self.popen.returncode


def spawn(request: ChildRequest, env: dict, output_fd: int, record_fd: int) -> Spawned:
    """Start the child's command line in a new session; `output_fd` is its stdout and stderr."""
    return Spawned(subprocess.Popen(
        request.argv + [f"--record-fd={record_fd}"], env=env, stdin=subprocess.DEVNULL, stdout=output_fd,
        stderr=subprocess.STDOUT, pass_fds=(record_fd,), start_new_session=True))


def run_child(request: ChildRequest, start: Callable = spawn) -> ChildResult:
    """Run the config's child to its end (`run_one`); a warm start's pair, both spawned, one after the other."""
    if request.warm_start:
        return warm_start.run_pair(request, run_one)
    return run_one(request, start)


def run_one(request: ChildRequest, start: Callable = spawn) -> ChildResult:
    """Run one child to its end; KeyboardInterrupt kills its group and propagates. `start(request, env, output_fd,
    record_fd)` starts it and returns its handle (`spawn`, or a fork server's)."""
    log_offset = open_log(request)
    read_fd, write_fd = os.pipe()
    with os.fdopen(safe_paths.open_no_follow(request.log_path, os.O_WRONLY | os.O_APPEND), "ab") as log_file:
        child, echo_fd = start_child(request, start, log_file, read_fd, write_fd)
        started = time.monotonic()  # the child exists from here (a fork server's own start is not its time)
        cpu_affinity = cores_it_had(pin(child.pid, request.cpu_affinity), request.cpu_affinity, child.launch)
        if request.on_start:
            request.on_start(child.pid)
        reader = _RecordReader(read_fd)
        reader.start()
        tee = _Tee(os.fdopen(echo_fd, "rb"), log_file, request.echo) if request.echo else None
        if tee:
            tee.start()
        result = ChildResult(record=None, returncode=None)
        try:
            wait_for(child, request, result, started, log_offset)
        except BaseException:
            kill_group(child.pid)
            child.ended_within(None)
            raise
        finally:
            kill_group(child.pid)  # grandchildren left in the group (compile workers, ...)
        reader.join(timeout=5)
        if tee:
            tee.join(timeout=5)
    result.returncode = child.returncode
    if child.returncode != 0 and child.pid:  # killed (by us, a timeout, anyone): what it made for itself goes
        scratch_dirs.remove_owned_by(child.pid)
    result.record, result.undeclared_by = reader.record, reader.undeclared_by
    result.last_phase = reader.phase
    result.cpu_affinity = cpu_affinity
    result.launch, result.lost = child.launch, child.lost
    result.seconds = time.monotonic() - started
    result.write_failed = reader.write_failed or disk_full_log(request.log_path)
    if result.write_failed and not result.write_failed.get("path"):  # the child's own output: its log
        result.write_failed = dict(result.write_failed, path=request.log_path)
    return result


def open_log(request: ChildRequest) -> int:
    """The child's log with its command line written first; the offset where the child's own output starts."""
    try:
        os.makedirs(os.path.dirname(request.log_path), exist_ok=True)
    except OSError as exc:
        raise disk_writes.WriteFailed.of(request.log_path, exc) from None
    disk_writes.append_bytes(request.log_path, f"$ {cli_support.command_line(request.argv)}\n".encode())
    return os.path.getsize(request.log_path)


def start_child(request: ChildRequest, start: Callable, log_file, read_fd: int, write_fd: int) -> tuple:
    """(the started child, the read end of its output's pipe with --print-subprocess, else None): its output goes to
    `log_file`, or through that pipe; the record pipe's write end is the child's alone afterwards. If it can't be
    started, the parent's ends are closed too."""
    echo_fd = None
    try:
        env = dict(request.env, **{PARENT_PID_VARIABLE: str(os.getpid())})  # the child dies with this process
        output_fd = log_file.fileno()
        if request.echo:
            echo_fd, output_fd = os.pipe()
        try:
            return start(request, env, output_fd, write_fd), echo_fd
        finally:
            if request.echo:
                os.close(output_fd)
    except BaseException:
        os.close(read_fd)
        if echo_fd is not None:
            os.close(echo_fd)
        raise
    finally:
        os.close(write_fd)


def wait_for(child, request: ChildRequest, result: ChildResult, started: float, log_offset: int) -> None:
    """Wait for the child's end. Past its timeout (`diagnose_timeout` first) or its memory limit, its group is killed
    and `result` says which."""
    try:
        watched = psutil.Process(child.pid)
    except psutil.Error:  # it ended already
        watched = None
    poll = 0.1 if request.memory_limit else 0.25
    while not child.ended_within(poll):
        if time.monotonic() - started > request.timeout:
            result.timed_out = True
            result.lock_waits, result.hung_in = diagnose_timeout(child, request, log_offset)
        elif request.memory_limit and watched is not None:
            rss = tree_rss(watched)
            result.peak_tree_rss = max(result.peak_tree_rss, rss)
            result.out_of_memory = rss > request.memory_limit
        if result.timed_out or result.out_of_memory:
            kill_group(child.pid)
            child.ended_within(None)
            return


def diagnose_timeout(child, request: ChildRequest, log_offset: int) -> tuple:
    """A timed-out child, before it is killed: (the file locks its process tree waits for, with their holders; the
    innermost frame of the stacks it writes to its log when asked: where it hung)."""
    tree = lock_waits.tree(child.pid)
    waits = lock_waits.waits(tree)  # before the kill: who kept it waiting
    ask_for_stacks(child)
    hung_in = where_it_hung(request.log_path, log_offset)
    if request.shared_compile_cache and hung_in and hung_in.startswith(POLLED_LOCK) and not waits:
        # a polled lock leaves no waiter in /proc/locks: who holds the shared cache's locks
        waits = lock_waits.held_in(lock_waits.inductor_lock_dir(request.env), tree)
    return waits, hung_in


def disk_full_log(log_path: str) -> Optional[dict]:
    """The child's log could not be written whole: its file system has no block left (the child's own writes
    to it fail unseen by the parent, and any record it handed back is followed by a log cut short)."""
    if not disk_writes.no_space_left(log_path):
        return None
    return {"path": log_path, "errno": errno.ENOSPC, "strerror": os.strerror(errno.ENOSPC)}


def pin(pid: int, cores: Optional[list]) -> Optional[list]:
    """Pin a just-started child to `cores` (before it starts threads: they inherit it); returns the cores it has."""
    try:
        process = psutil.Process(pid)
        if cores:
            process.cpu_affinity(list(cores))
        return sorted(process.cpu_affinity())
    except (psutil.Error, AttributeError, OSError) as exc:  # gone already, or no affinity on this OS
        if cores:
            log.warning("could not pin pid %d to cores %s: %s", pid, cores, exc)
        return None


STACKS_WAIT = 1.0  # seconds a timed-out child gets to write its stacks
POLLED_LOCK = "_poll_until_acquired (filelock/"  # where filelock (Inductor's cache locks) waits, trying again


def ask_for_stacks(child) -> None:
    """A timed-out child writes every thread's Python stack to its log (faulthandler, registered by the child);
    a stopped or native-hung one can't, and is killed all the same."""
    try:
        os.kill(child.pid, STACKS_SIGNAL)
    except (ProcessLookupError, PermissionError):
        return
    child.ended_within(STACKS_WAIT)


def where_it_hung(log_path: str, offset: int = 0) -> Optional[str]:
    """The innermost frame of the stack the child wrote at its timeout (the last `Current thread` block of
    its log past `offset`, where its run's output starts): `function (file:line)`, or None."""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(max(offset, os.path.getsize(log_path) - 65536))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    block = text.rpartition("Current thread 0x")[2] if "Current thread 0x" in text else ""
    match = re.search(r'File "([^"]+)", line (\d+) in (\S+)', block)
    if not match:
        return None
    path, line, function = match.groups()
    # a library's file from its package on (filelock/_core/_acquire.py), ours from the repository's root on
    short = path.split("/site-packages/", 1)[1] if "/site-packages/" in path else "/".join(path.split("/")[-3:])
    return f"{function} ({short}:{line})"


def cores_it_had(read: Optional[list], requested: Optional[list], launch: str) -> Optional[list]:
    """The cores a child ran on: as read after pinning it, or, when it ended before it could be read (a forked
    config that crashes at once), the ones asked for if its fork server set them in the child before anything
    ran (benchmarks/fork_server/zygote.py); a spawned child that quick was never pinned, so it stays unknown."""
    if read is None and launch == "fork" and requested:
        return sorted(requested)
    return read


def log_tail(path: str, limit: int = 400) -> str:
    """The last meaningful line of a child's log (often the exception), for a failure message."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - 16384))
            lines = handle.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        text = line.strip()
        if text and not text.startswith("$ "):
            return text[:limit]
    return ""
