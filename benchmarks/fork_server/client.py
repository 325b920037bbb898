"""--launch=fork: the sweep's fork servers, and which configs they may start (benchmarks/fork_server/__init__.py).

A fork server (`fork_server/zygote.py`) has imported torch (a second one also torch_xla) under the environment its
configs share, and forks one child per config, which skips the interpreter start and `import torch`. The
launcher watches a forked child as it watches a spawned one (timeout, memory limit, group kill, the record
pipe, the log); the server reports its pid and its exit status over a Unix socket.

A config is forked only when its environment differs from its server's in variables that take effect after
the fork (`AFTER_FORK`: thread counts, visible GPUs, the launcher's pid); any other difference (XLA_FLAGS,
the diagnostics' XLA dump variables) could only take effect before `import torch`, so that config is spawned.
A server that dies is started again, and the config it was running is run once more on the new one
(runner/forked_launch.py, which asks a server here to fork each child).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
from typing import Optional

from benchmarks.config import axes, backend_registry
from benchmarks.config.process_env import PARENT_PID_VARIABLE, server_environment
from benchmarks.config.run_options import RunOptions
from benchmarks.fork_server import protocol
from benchmarks.plumbing import machine_facts, process_groups, safe_paths, scratch_dirs
from benchmarks.suites import declarations as suite_declarations

log = logging.getLogger("benchmarks.fork_server.client")

# Variables a forked child sets for itself (fork_server/zygote.py applies what they mean: threads, compile threads).
AFTER_FORK = frozenset({"OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS",
                        "CUDA_VISIBLE_DEVICES", PARENT_PID_VARIABLE})
UNIX_PATH_MAX = 107  # bytes of a Unix socket path (sun_path, less its NUL)
SERVER_START_SECONDS = 600  # how long a request may wait for a new server's imports (slow under load)
# What a server imports before it serves (names the zygote imports; this parent imports none of them): torch
# (and torch_xla), and what every config's child imports anyway before its model runs: the entry point and the
# single-config run, every suite (the entry point's parser lists them all) and numpy.random (each child seeds
# it). None of them starts a thread or touches a device at import.
EVERY_CONFIG = ("benchmarks.__main__", "benchmarks.child.single_config", "benchmarks.child.backends",
                "benchmarks.child.measured_loop", "numpy.random",
                *(declared.module for declared in suite_declarations()))
PRELOAD = {"torch": ("torch",) + EVERY_CONFIG, "xla": ("torch", "torch_xla") + EVERY_CONFIG}
# What some configs' children import for seconds more (none starts a thread at import either): dynamo (a train
# step's optimizer imports it, every torch.compile, and the roofline's count: FakeTensorMode imports it), the FLOP
# counter and Inductor. A server preloads those its sweep's configs need (`preloads_for`): an eager inference sweep
# with --no-roofline waits for none of them.
DYNAMO, INDUCTOR = "torch._dynamo", "torch._inductor.compile_fx"
FLOP_COUNTER = "torch.utils.flop_counter"  # the roofline's count (child/work_count.py), after the timed runs
CPU_VEC_ISA_PROBE = "benchmarks.child.cpu_vec_isa:probe"  # Inductor's probe of the CPU, run by the server
# How a server starts: the project first on its import path (a clone run from another directory, not installed, finds
# its package as the spawned child's script does), nothing added to its environment (its forks' is their twins').
ZYGOTE_BOOT = "import runpy, sys; sys.path.insert(0, {root!r}); runpy.run_module('benchmarks.fork_server.zygote', " \
              "run_name='__main__', alter_sys=True)"


def preloads_for(experiments, counts_work: bool = True) -> tuple:
    """The modules beyond PRELOAD that these configs' children would each import themselves. `counts_work`: each
    child counts its roofline's work (not --no-roofline), which imports dynamo and the FLOP counter."""
    names = []
    if counts_work or any(e.test == "train" or e.dynamo for e in experiments):
        names.append(DYNAMO)
    if counts_work:
        names.append(FLOP_COUNTER)
    if any(e.dynamo and "inductor" in e.dynamo for e in experiments):  # inductor, aot_inductor
        names.append(INDUCTOR)
    if any(backend_registry.generates_cpu_code(e) for e in experiments):  # once, not in each child's compile_time
        names.append(CPU_VEC_ISA_PROBE)
    return tuple(names)


class ServerLost(Exception):
    """The fork server died (or never answered) before it reported the child's end."""


class ForkRefused(Exception):
    """The fork server did not fork this child, and said why (a CUDA config, forks that can't use CUDA)."""


def available() -> bool:
    """Fork servers need fork, descriptor passing over Unix sockets and Linux's parent-death signal."""
    return sys.platform == "linux" and hasattr(os, "fork") and hasattr(socket, "send_fds")


@dataclasses.dataclass(frozen=True)
class ServerSpec:
    """One fork server: what it preloads and the environment it imports torch under (sorted items)."""

    kind: str  # "torch" or "xla"
    env: tuple
    entry: tuple  # the child's entry point, as the child's command line starts (interpreter first)
    # what tells servers of one kind apart in their log's name (the allocator policy); env is their identity
    variant: str = dataclasses.field(default="", compare=False)

    @property
    def name(self) -> str:
        return self.kind + (f"-{self.variant}" if self.variant else "")


def after_fork(name: str) -> bool:
    """Whether a forked child may take this variable after the fork: AFTER_FORK, and Ray's own (a node's workers
    differ in them, RAY_JOB_ID for one; torch reads none of them)."""
    return name in AFTER_FORK or name.startswith("RAY_")


def before_import(env: dict) -> dict:
    return {k: v for k, v in env.items() if not after_fork(k)}


def server_spec(experiment, options: RunOptions, env: dict, argv: list, entry: list) -> Optional[ServerSpec]:
    """The server that may fork this config's child (`env`, `argv`: its spawned environment and command), or
    None when it must be spawned: its environment differs from its kind's shared one before `import torch`.
    The shared environment holds the config's allocator policy (LD_PRELOAD, glibc's thresholds), which acts only
    from a process's start: configs of different policies get different servers, each started under its own."""
    shared = server_environment(experiment, options, dict(os.environ))
    if before_import(env) != before_import(shared) or argv[:len(entry)] != list(entry):
        return None
    return ServerSpec("xla" if experiment.xla else "torch", tuple(sorted(before_import(shared).items())),
                      tuple(entry), variant=server_variant(experiment))


def server_variant(experiment) -> str:
    """The policy part of a server's log name: empty for the default allocator."""
    return "" if axes.at_default("allocator", experiment.allocator) else f"allocator-{experiment.allocator}"


class Forked:
    """A child forked by a server: the server is its parent, so its end comes over the request's socket."""

    launch = "fork"

    def __init__(self, conn: socket.socket):
        self.conn = conn
        self.pid = 0  # the server's first answer
        self.returncode: Optional[int] = None
        self.lost: Optional[str] = None
        self._buffer = b""

    def next_message(self) -> dict:
        """The next JSON line from the server; ServerLost when it closed the connection."""
        while b"\n" not in self._buffer:
            data = self.conn.recv(65536)
            if not data:
                raise ServerLost("connection closed")
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def ended_within(self, seconds: Optional[float]) -> bool:
        if self.returncode is not None or self.lost:
            return True
        self.conn.settimeout(seconds)
        try:
            message = self.next_message()
        except socket.timeout:
            return False
        except (OSError, ValueError, ServerLost) as exc:
            self.lost = f"the fork server died while it ran this config ({exc})"
            self.conn.close()
            return True
        self.returncode = int(message[protocol.RETURNCODE])
        self.conn.close()
        return True


@contextlib.contextmanager
def unix_address(path: str):
    """`path` as a Unix socket address: those hold at most 107 bytes, so a longer one (a long TMPDIR) is reached
    through a descriptor of its directory (/proc/self/fd/N/name, Linux's; fork servers need Linux anyway)."""
    if len(os.fsencode(path)) <= UNIX_PATH_MAX:
        yield path
        return
    directory = os.open(os.path.dirname(path), os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{directory}/{os.path.basename(path)}"
    finally:
        os.close(directory)


class ServerClient:
    """How a launcher asks a running server (at its socket `path`) to fork a config's child; any process on the
    server's machine may ask (a Ray task asks its node's server, which another process started)."""

    def __init__(self, spec: ServerSpec, path: str):
        self.spec, self.path = spec, path

    def start(self, request, env: dict, output_fd: int, record_fd: int) -> Forked:
        """launcher.run_child's `start` (`request`: its ChildRequest): ask the server to fork this config's child
        (ServerLost if it can't; ForkRefused if it won't: its forks can't use CUDA)."""
        shared = dict(self.spec.env)
        changes = {name: env.get(name) for name in set(env) | set(shared) | AFTER_FORK
                   if after_fork(name) and env.get(name) != shared.get(name)}
        message = {protocol.ARGS: request.argv[len(self.spec.entry):], protocol.ENV: changes,
                   protocol.CORES: request.cpu_affinity, protocol.CUDA: request.uses_cuda}
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.settimeout(SERVER_START_SECONDS)  # the first request waits for the server's imports
            with unix_address(self.path) as address:
                conn.connect(address)
            socket.send_fds(conn, [json.dumps(message).encode() + b"\n"], [output_fd, record_fd])
            child = Forked(conn)
            first = child.next_message()
            if protocol.REFUSED in first:
                conn.close()
                raise ForkRefused(str(first[protocol.REFUSED]))
            child.pid = int(first[protocol.PID])
            return child
        except (OSError, ValueError, KeyError, ServerLost) as exc:
            conn.close()
            raise ServerLost(f"the fork server did not start the child: {exc}") from None


class ForkServer(ServerClient):
    """One zygote process, started at once, this process its parent (it dies with it); its socket lives in a
    directory only this user may open."""

    def __init__(self, spec: ServerSpec, log_path: str, preloads: tuple = ()):
        directory = scratch_dirs.owned_dir("fork-server")  # named after this process: collected if it is killed
        super().__init__(spec, os.path.join(directory, "socket"))
        self.directory = directory
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with unix_address(self.path) as address:
                listener.bind(address)
            listener.listen(64)
            os.makedirs(os.path.dirname(log_path), exist_ok=True)
            argv = [spec.entry[0], "-c", ZYGOTE_BOOT.format(root=machine_facts.PROJECT_ROOT), f"--listen-fd={listener.fileno()}",
                    f"--parent-pid={os.getpid()}", f"--socket-path={self.path}", f"--log={log_path}"] + [
                        f"--entry={word}" for word in spec.entry[1:]] + [
                        f"--preload={name}" for name in PRELOAD[spec.kind] + tuple(preloads)]
            # not through a link: a dangling logs/fork-server-*.log link would create its target outside
            log_fd = safe_paths.open_no_follow(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            with os.fdopen(log_fd, "ab") as server_log:
                self.process = subprocess.Popen(argv, env=dict(spec.env), stdin=subprocess.DEVNULL, stdout=server_log,
                                                stderr=subprocess.STDOUT, pass_fds=(listener.fileno(),),
                                                start_new_session=True)
        finally:
            listener.close()  # the server holds it now: if the server dies, connecting fails at once
        log.info("fork server (%s) started: pid %d, log %s", spec.name, self.process.pid, log_path)

    def stop(self) -> None:
        process_groups.kill_group(self.process.pid)
        self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


class ForkServers:
    """The sweep's fork servers on this machine, one per ServerSpec, each started when a config first needs it;
    `preloads`: what the sweep's configs need beyond PRELOAD (`preloads_for`)."""

    def __init__(self, log_dir: str, preloads: tuple = ()):
        self.log_dir = log_dir
        self.preloads = tuple(preloads)
        self.started = 0  # servers started, restarts included
        self._servers: dict = {}
        self._lock = threading.Lock()

    def server(self, spec: ServerSpec, replacing: Optional[ServerClient] = None) -> ForkServer:
        """The running server for `spec`, started now if there is none, or if it is `replacing` (which died)."""
        with self._lock:
            server = self._servers.get(spec)
            lost = server is not None and replacing is not None and server.path == replacing.path
            if server is None or lost:  # another thread may have replaced it already
                if server is not None:
                    server.stop()
                # an XLA server's children never compile CPU code with Inductor: no probe of the CPU there
                preloads = tuple(p for p in self.preloads if spec.kind == "torch" or p != CPU_VEC_ISA_PROBE)
                server = self._servers[spec] = ForkServer(
                    spec, os.path.join(self.log_dir, f"fork-server-{spec.name}.log"), preloads)
                self.started += 1
            return server

    def prepare(self, spec: ServerSpec) -> None:
        """Start the server `spec` names now, if it is not running (it does not wait for its imports)."""
        self.server(spec)

    def close(self) -> None:
        with self._lock:
            for server in self._servers.values():
                server.stop()
            self._servers.clear()
