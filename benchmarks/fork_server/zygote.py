"""The fork server's own process (the zygote): it imports torch (and torch_xla) once, then forks one child per
config on request; each forked child becomes what a launched child is (benchmarks/fork_server/__init__.py).

Started by the parent (`fork_server/client.py`) as `python -m benchmarks.fork_server.zygote`, with a listening Unix
socket (in a directory only this user can open) and the environment its configs share. It starts no thread
pool, initialises no device and creates no PJRT client: those are made in each child, after the fork.
A request is one JSON line (the child's flags, the variables to set after the fork, its cores) and two file
descriptors (its output, its record pipe); the answer is `{"pid"}` at once and `{"returncode"}` when it ends.
No shell and no pickle: the child runs the project's own entry point, named when the server was started.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import dataclasses
import gc
import importlib
import io
import json
import os
import runpy
import select
import signal
import socket
import sys
import threading
from typing import Optional

from benchmarks.config.process_env import PARENT_PID_VARIABLE
from benchmarks.fork_server import protocol
from benchmarks.plumbing import environment_variables

MAX_REQUEST_BYTES = 1 << 22
REQUEST_SECONDS = 10.0  # a connection that sends no whole request within this is dropped
# torch asks NVML, not the CUDA runtime, whether CUDA is available while this is "1": the runtime's answer
# (cudaGetDeviceCount) marks every later fork of this process bad for CUDA (benchmarks/fork_server/__init__.py).
NVML_BASED_CUDA_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
# NVIDIA's driver libraries: NVML's, then the driver's own. With neither, no process here can use a GPU.
NVIDIA_DRIVER_LIBRARIES = ("libnvidia-ml.so.1", "libcuda.so.1")
PROBE_TRIES = 3


@dataclasses.dataclass
class ForkedJob:
    """What a just-forked child runs: its request and the descriptors that came with it."""

    request: dict
    output_fd: int
    record_fd: int


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks.fork_server.zygote", description=__doc__.splitlines()[0])
    p.add_argument("--listen-fd", type=int, required=True, help="the listening Unix socket, inherited")
    p.add_argument("--parent-pid", type=int, required=True, help="the runner: this server dies with it")
    p.add_argument("--socket-path", help="the socket's file (in a directory made for it alone), removed if the "
                   "runner dies; its address may be another name for it (fork_server/client.unix_address)")
    p.add_argument("--entry", action="append", required=True,
                   help="the child's entry point: a script path, or -m and a module (repeat for each word)")
    p.add_argument("--log", help="where the parent sends this server's output (on the command line, which forked "
                   "children share, so that a sweep's processes are found by its output directory)")
    p.add_argument("--preload", action="append", default=[],
                   help="a module to import before serving, or module:function to call once imported (repeatable)")
    return p.parse_args(argv)


def receive(conn: socket.socket):
    """(request dict, [fds]) of one connection; ValueError when it is not a whole request."""
    conn.settimeout(REQUEST_SECONDS)
    data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST_BYTES, 2)
    while data and not data.endswith(b"\n") and len(data) < MAX_REQUEST_BYTES:
        more = conn.recv(MAX_REQUEST_BYTES)
        if not more:
            break
        data += more
    if len(fds) != 2 or not data.endswith(b"\n"):
        for fd in fds:
            os.close(fd)
        raise ValueError("not a whole request")
    return json.loads(data), fds


def answer(conn: socket.socket, message: dict) -> None:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:  # the parent stopped listening (it killed the child, or it is gone)
        pass


def serve(listener: socket.socket, parent_pid: int, socket_path: Optional[str] = None,
          cuda_trouble: Optional[str] = None) -> ForkedJob:
    """Fork a child per request until the parent goes; returns only in a forked child, with its job. A request
    for a CUDA config is refused, with `cuda_trouble` (why this process's forks can't use CUDA), when it is set:
    the requester spawns that config instead."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select through wake_w
    children: dict = {}  # pid -> the connection its exit status goes to (None: its requester hung up)
    while True:
        # No watchdog thread (a forked child would inherit a lock it can't release) and no parent-death signal
        # (it fires when the parent's thread that started this server ends): the loop looks once a second.
        if os.getppid() != parent_pid:
            remove_socket(listener, socket_path)  # the parent died without stopping this server: its files go with it
            os._exit(0)  # the children die with this process (their parent-death signal)
        asking = {conn: pid for pid, conn in children.items() if conn is not None}
        ready, _, _ = select.select([listener, wake_r, *asking], [], [], 1.0)
        if wake_r in ready:
            os.read(wake_r, 4096)
        reap(children)
        for conn in set(ready) & set(asking):
            abandoned(children, asking[conn], conn)
        if listener not in ready:
            continue
        conn, _ = listener.accept()
        try:
            request, (output_fd, record_fd) = receive(conn)
        except (OSError, ValueError):
            conn.close()
            continue
        if cuda_trouble and request.get(protocol.CUDA):
            os.close(output_fd)
            os.close(record_fd)
            answer(conn, {protocol.REFUSED: cuda_trouble})
            conn.close()
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for item in [listener, conn, *children.values()]:
                if item is not None:
                    item.close()
            os.close(wake_r)
            os.close(wake_w)
            return ForkedJob(request, output_fd, record_fd)
        os.close(output_fd)
        os.close(record_fd)
        answer(conn, {protocol.PID: pid})
        children[pid] = conn


def remove_socket(listener: socket.socket, path: Optional[str] = None) -> None:
    try:
        path = path or listener.getsockname()
        os.unlink(path)
        os.rmdir(os.path.dirname(path))  # made for this socket alone (fork_server/client.py)
    except (OSError, TypeError):
        pass


def abandoned(children: dict, pid: int, conn: socket.socket) -> None:
    """A requester says nothing after its request: a readable connection means it hung up (it was killed, e.g. a
    cancelled Ray task). Its child is nobody's now: its process group is killed (a spawned child would have died
    with its launcher), and it is reaped without an answer."""
    if children.get(pid) is not conn:  # reaped already: its answer went out
        return
    try:
        conn.setblocking(False)
        if conn.recv(4096):
            conn.setblocking(True)
            return  # not a hang-up (no requester sends more: read and ignored)
    except BlockingIOError:
        conn.setblocking(True)
        return
    except OSError:  # reset by a requester that died: a hang-up too
        pass
    for kill in (os.killpg, os.kill):  # its group; itself too, should it not have made its group yet
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    conn.close()
    children[pid] = None


def reap(children: dict) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is not None:
            answer(conn, {protocol.RETURNCODE: os.waitstatus_to_exitcode(status)})
            conn.close()


def become_child(job: ForkedJob) -> None:
    """Turn this fresh fork into a launched child: own session, output to its log, stdin from /dev/null, the
    config's variables, its cores, the threads those imply. Nothing of another config is here: each child
    is forked from the server, which never runs a config."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(job.output_fd, 1)
    os.dup2(job.output_fd, 2)
    os.close(job.output_fd)
    environment_variables.apply(job.request.get(protocol.ENV, {}))
    os.environ[PARENT_PID_VARIABLE] = str(os.getppid())  # this child dies with the server that forked it
    cores = job.request.get(protocol.CORES)
    if cores:
        os.sched_setaffinity(0, cores)
    apply_runtime_settings(threads_changed=bool(cores) or any(
        name in job.request.get(protocol.ENV, {}) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")))


def apply_runtime_settings(threads_changed: bool) -> None:
    """What the server's imports read from the environment and the cores once, set again for this child as a
    fresh interpreter would have read them: OpenMP read its thread count when torch was loaded, and
    torch_xla's import loaded Inductor's config (its compile threads)."""
    import torch

    if threads_changed:
        asked = os.environ.get("OMP_NUM_THREADS") or os.environ.get("MKL_NUM_THREADS") or ""
        torch.set_num_threads(int(asked) if asked.isdigit() and int(asked) > 0 else len(os.sched_getaffinity(0)))
    inductor = sys.modules.get("torch._inductor.config")
    if inductor is not None:
        from benchmarks.child import torch_internals  # a torch that moved it: the record's `absent` says so

        with torch_internals.reading(torch_internals.COMPILE_THREADS, "torch._inductor.config.decide_compile_threads"):
            inductor.compile_threads = inductor.decide_compile_threads()


@contextlib.contextmanager
def cuda_asked_without_its_runtime():
    """While the preloads import: whatever asks torch whether CUDA is available (Inductor's import does) gets
    NVML's answer, which leaves this process's forks usable for CUDA. Where NVIDIA's driver libraries are absent
    (no process here can use a GPU), torch would fall back to the runtime's call, so no device is visible
    meanwhile: the answer, none, is the same. Both variables are put back before any child is forked, so a
    forked child's environment is its spawned twin's; what the imports cached holds the true answer."""
    changes = {NVML_BASED_CUDA_CHECK: "1"}
    if not any(loadable(name) for name in NVIDIA_DRIVER_LIBRARIES):
        changes["CUDA_VISIBLE_DEVICES"] = ""
    with environment_variables.changed(changes):
        yield


def loadable(library: str) -> bool:
    try:
        ctypes.CDLL(library)
    except OSError:
        return False
    return True


def cuda_fork_trouble() -> Optional[str]:
    """Why this process's forks can't use CUDA, or None when they can: a probe child forked now reports
    whether torch marked it a bad fork (torch does once the CUDA runtime was asked anything before the fork;
    such a child raises "Cannot re-initialize CUDA in forked subprocess" at its first CUDA call)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.backends.cuda.is_built():
        return None  # a torch without CUDA marks no fork
    in_bad_fork = getattr(torch._C, "_cuda_isInBadFork", None)
    if in_bad_fork is None:
        return (f"this torch ({torch.__version__}) has no torch._C._cuda_isInBadFork, so the fork server can't "
                "tell whether its forks may use CUDA")
    for _ in range(PROBE_TRIES):  # a probe killed from outside (a soak test's signal) is asked again
        pid = os.fork()
        if pid == 0:
            os._exit(1 if in_bad_fork() else 0)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code >= 0:
            break
    if code == 0:
        return None
    if code < 0:
        return (f"the fork server's check of its forks was killed (signal {-code}), so it can't tell whether they "
                "may use CUDA")
    return ("the fork server's imports asked the CUDA runtime for its devices, which makes torch refuse CUDA in "
            "every process it forks")


def run_entry(entry: list, args: list) -> None:
    """The project's entry point with these flags, as `python <entry> <args>` runs it (raises SystemExit)."""
    if entry[0] == "-m":
        sys.argv = [entry[1]] + args
        runpy.run_module(entry[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = [entry[0]] + args
        runpy.run_path(entry[0], run_name="__main__")


def main(argv=None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops this server
    listener = socket.socket(fileno=args.listen_fd)
    with cuda_asked_without_its_runtime():
        for name in args.preload:
            try:
                module, _, function = name.partition(":")  # "module:function": called once imported
                imported = importlib.import_module(module)
                if function:
                    getattr(imported, function)()
            except Exception as exc:  # not the server's to fail: each child that needs it imports it and says why
                print(f"zygote: preload {name} failed ({type(exc).__name__}: {exc}); the configs that need it import "
                      "it themselves", file=sys.stderr, flush=True)
    cuda_trouble = cuda_fork_trouble()
    if cuda_trouble:
        print(f"fork server: {cuda_trouble}; CUDA configs are spawned", file=sys.stderr, flush=True)
    # The preloaded objects are never collected: a child's collections then skip them instead of writing to
    # (and so copying) every page that holds one.
    gc.freeze()
    job = serve(listener, args.parent_pid, args.socket_path, cuda_trouble)
    # From here on: a forked child, at the top of the stack.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    become_child(job)
    try:
        run_entry(args.entry, list(job.request[protocol.ARGS]) + [f"--record-fd={job.record_fd}"])
    except SystemExit as end:
        exit_now(exit_code(end))
    except Exception:  # as an interpreter ends on an uncaught exception: its traceback, status 1
        sys.excepthook(*sys.exc_info())
        exit_now(1)
    exit_now(0)
    return 0


def exit_code(end: SystemExit) -> int:
    """The status an interpreter gives this SystemExit (a message is printed and is status 1)."""
    if end.code is None or isinstance(end.code, int):
        return end.code or 0
    print(end.code, file=sys.stderr)
    return 1


def exit_now(code: int) -> None:
    """End a forked child as the interpreter would, without tearing its modules down: that teardown writes to
    nearly every page the child shares with the server (about 40k page faults and most of a forked config's
    CPU time, docs/architecture.md "Launch"). What a normal exit does for the program is kept: its threads are
    waited for, its atexit functions run, and every file it left open is flushed."""
    threading._shutdown()  # what the interpreter does first: thread pools told to stop, other threads joined
    atexit._run_exitfuncs()
    for item in gc.get_objects():  # only the child's own objects: the server's are frozen
        try:  # isinstance itself raises on a weak proxy whose object is gone (Inductor leaves such)
            if isinstance(item, io.IOBase):
                item.flush()
        except (OSError, ValueError, ReferenceError):  # closed, not writable, or a dead weak proxy
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
