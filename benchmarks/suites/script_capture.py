"""Run a user's script as `__main__` and catch the first call of every top-level torch.nn.Module (child only).

A module call is top-level when no other module's forward is running (in this thread). At its first such
call a module gets its name: the variable that holds it in the calling code (the script's, or a helper's it
calls), else its class name; a second module of the same name gets `_2`, `_3`, ... in call order, so names
are stable as long as the script calls its models in the same order.

Two uses: discovery (`python -m benchmarks.suites.script_capture SPEC_JSON`, started by
suites/script_discovery.py) lets the script run to its end so that every model it calls is found, writing
what it found so far after each new model (a crash or a kill keeps them); the benchmark's build
(`capture`) stops the script at the first call of the one model it wants, with that call's exact inputs
(docs/runner.md, "Scripts").
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import sys
import threading
import time
import tokenize
import types
from typing import Callable, Optional

from benchmarks.plumbing import disk_writes


class ScriptFailed(Exception):
    """The script crashed, exited or ended without calling the model wanted."""


class _Stop(BaseException):
    """Raised through the script to stop it at the wanted call (BaseException: `except Exception` in the script
    does not swallow it)."""


@dataclasses.dataclass
class Call:
    name: str
    module: object
    args: tuple
    kwargs: dict


def describe_inputs(args: tuple, kwargs: dict) -> str:
    """'(2x3 float32, x=4 int64)': the shapes of the tensors of a call, for listings."""
    def one(value):
        shape = getattr(value, "shape", None)
        if shape is None:
            return type(value).__name__
        return "x".join(map(str, shape)) + " " + str(getattr(value, "dtype", "")).replace("torch.", "")

    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def name_in_frames(module, frame) -> Optional[str]:
    """The variable holding `module` in the nearest calling frame outside torch and this file."""
    skip = (os.path.dirname(os.path.abspath(__import__("torch").__file__)), os.path.abspath(__file__))
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(skip):
            for scope in (frame.f_locals, frame.f_globals):
                for name, value in list(scope.items()):
                    if value is module and not name.startswith("_") and name != "self":
                        return name
        frame = frame.f_back
    return None


class Interceptor:
    """Patches torch.nn.Module.__call__ while active; `on_first_call(Call)` sees each top-level module once."""

    def __init__(self, on_first_call: Callable[[Call], None]):
        self.on_first_call = on_first_call
        self.seen: list = []  # the modules already named (kept alive, so that an id is never reused)
        self.names: list = []
        self.local = threading.local()

    def unique(self, name: str) -> str:
        candidate, number = name, 1
        while candidate in self.names:
            number += 1
            candidate = f"{name}_{number}"
        return candidate

    @contextlib.contextmanager
    def active(self):
        import torch

        original = torch.nn.Module.__call__
        interceptor = self

        def call(module, *args, **kwargs):
            depth = getattr(interceptor.local, "depth", 0)
            if depth == 0 and not any(module is m for m in interceptor.seen):
                interceptor.seen.append(module)
                name = interceptor.unique(name_in_frames(module, sys._getframe(1)) or type(module).__name__)
                interceptor.names.append(name)
                interceptor.on_first_call(Call(name, module, args, kwargs))
            interceptor.local.depth = depth + 1
            try:
                return original(module, *args, **kwargs)
            finally:
                interceptor.local.depth = depth

        torch.nn.Module.__call__ = call
        try:
            yield self
        finally:
            torch.nn.Module.__call__ = original


@contextlib.contextmanager
def script_environment(path: str, script_args: Optional[str]):
    """sys.argv and sys.path[0] as `python SCRIPT ARGS` would have them; restored afterwards."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [path] + shlex.split(script_args or "")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


@contextlib.contextmanager
def main_module(path: str):
    """A fresh module that is sys.modules["__main__"] while the script runs. Afterwards it stays importable under
    a name of its own, which its globals' __name__ then says: dynamo finds a function's module by that name,
    and "__main__" is the child's own again."""
    module = types.ModuleType("__main__")
    module.__file__ = os.path.abspath(path)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        yield module
    finally:
        sys.modules["__main__"] = saved
        name = "ptbench_script_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(path))
        name += f"_{sum(1 for key in sys.modules if key.startswith(name))}"
        module.__dict__["__name__"] = name
        sys.modules[name] = module


def run_script(path: str, script_args: Optional[str]) -> None:
    """Run the script as __main__; its SystemExit(0) or None is an ordinary end, any other exit a ScriptFailed."""
    with tokenize.open(path) as handle:
        code = compile(handle.read(), path, "exec")
    with script_environment(path, script_args), main_module(path) as module:
        try:
            exec(code, module.__dict__)
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise ScriptFailed(f"{os.path.basename(path)} exited with status {exc.code}") from None


def detached(value):
    """A captured input, out of the script's autograd graph and inference mode (a train step can use it)."""
    from benchmarks.suites.tensor_trees import map_tensors

    return map_tensors(value, lambda tensor: tensor.detach().clone())


def capture(path: str, script_args: Optional[str], wanted: str) -> Call:
    """Run the script until its model named `wanted` is first called; that module and the call's inputs.
    ScriptFailed if the script crashes or ends first."""
    found = {}

    def on_first_call(call: Call):
        if call.name == wanted:
            found["call"] = call
            raise _Stop()

    interceptor = Interceptor(on_first_call)
    script = os.path.basename(path)
    try:
        with interceptor.active():
            run_script(path, script_args)
    except _Stop:
        call = found["call"]
        return Call(call.name, call.module, detached(call.args), detached(call.kwargs))
    except ScriptFailed:
        raise
    except Exception as exc:
        raise ScriptFailed(f"{script} raised {type(exc).__name__}: {exc} before calling {wanted}") from exc
    called = ", ".join(interceptor.names) or "none"
    raise ScriptFailed(f"{script} ended without calling a model named {wanted} (models it called: {called})")


# ---------------------------------------------------------------- the discovery child


def write_json(path: str, data: dict) -> None:
    """Atomically (the parent may read it at any moment)."""
    disk_writes.write_json(path, data)


def discover(spec: dict) -> dict:
    """Run the script to its end; the models it called, in order (written to spec["result"] as they come)."""
    import torch  # noqa: F401  (imported before the clock starts: the script's time is its own)

    state = {"status": "running", "models": [], "message": None, "started": time.time()}
    write_json(spec["result"], state)

    def on_first_call(call: Call):
        state["models"].append({"name": call.name, "class": type(call.module).__qualname__,
                                "inputs": describe_inputs(call.args, call.kwargs)})
        write_json(spec["result"], state)

    try:
        with Interceptor(on_first_call).active():
            run_script(spec["script"], spec.get("script_args"))
        state["status"] = "finished"
    except ScriptFailed as exc:
        state.update(status="crashed", message=str(exc))
    except BaseException as exc:  # anything the script raises (KeyboardInterrupt included) ends discovery
        state.update(status="crashed", message=f"{os.path.basename(spec['script'])} raised "
                                               f"{type(exc).__name__}: {exc}")
    state["seconds"] = time.time() - state.pop("started")
    write_json(spec["result"], state)
    return state


def main(argv) -> None:
    if len(argv) != 1:
        print("usage: python -m benchmarks.suites.script_capture SPEC_JSON", file=sys.stderr)
        os._exit(2)
    discover(json.loads(argv[0]))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # the script's own threads or atexit hooks must not keep discovery alive


if __name__ == "__main__":
    main(sys.argv[1:])
