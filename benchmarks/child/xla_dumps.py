"""The child's XLA diagnostics: torch_xla's metrics report per repeat, the XLA profiler's server and
its capture (--profile-xla), and the dumps torch_xla writes from its environment (--dump-hlo,
--save-ir-format: their variables are config/process_env.py's, their paths plumbing/safe_paths.py's). torch_xla inside the functions."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import threading
import time

from benchmarks.plumbing import safe_paths, xla_dump_env

# Seconds to let the XLA profiler session start before the first timed repeat (it starts within ms).
XLA_TRACE_START_DELAY = 0.2
# How long trace() keeps retrying to reach the profiler server.
XLA_TRACE_TIMEOUT_S = 60


class DiagnosticsError(RuntimeError):
    """A requested diagnostic could not be produced (the record becomes an error record)."""


def remove_stale_dumps(options, model_config: dict, experiment) -> None:
    """Before the model is built: the environment's dumps of an earlier run of this config go."""
    if experiment.xla and options.diagnostics.dump_hlo:
        shutil.rmtree(safe_paths.hlo_dir(options.output_dirname, model_config, experiment), ignore_errors=True)
    if experiment.xla and options.diagnostics.save_ir_format:
        for stale in xla_dump_env.ir_files(safe_paths.ir_file(options.output_dirname, model_config, experiment,
                                                                options.diagnostics.save_ir_format)):
            os.remove(stale)  # torch_xla appends to it


def write_metrics_report(files, index: int) -> None:
    """--dump-pytorch-xla-metrics: torch_xla's metrics report of one timed repeat."""
    import torch_xla.debug.metrics as met

    path = files.path("pytorch-xla-metrics", "txt", index)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(met.metrics_report())
    files.add_artifact("pytorch-xla-metrics", path, index)


def free_port() -> int:
    """A TCP port free right now (the kernel picks it), so parallel children never share one."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


class XlaTrace:
    """--profile-xla: the profiler server (started before the model is built), a capture of the timed
    repeats (started before the first), its files checked at the end."""

    def __init__(self, duration_ms: int, files, diagnostics: dict):
        self.duration_ms = duration_ms
        self.files = files
        self.diagnostics = diagnostics  # the record's
        self._server = None
        self._port = None
        self._thread = None
        self._error: list = []

    def start_server(self) -> None:
        import torch_xla.debug.profiler as xp

        problem = None
        for _ in range(3):  # another process may take the port between the probe and the bind
            port = free_port()
            try:
                self._server = xp.start_server(port)
                self._port = port
                self.diagnostics["xla_profile"] = {"port": port, "duration_ms": self.duration_ms}
                return
            except RuntimeError as exc:
                problem = exc
        raise DiagnosticsError(f"--profile-xla: cannot start the XLA profiler server: {problem}")

    def start_capture(self) -> None:
        import torch_xla.debug.profiler as xp

        logdir = self.files.path("xla-profile")
        shutil.rmtree(logdir, ignore_errors=True)

        def capture():
            try:
                xp.trace(f"localhost:{self._port}", logdir, duration_ms=self.duration_ms,
                         timeout_s=XLA_TRACE_TIMEOUT_S)
            except Exception as exc:  # reported by finish()
                self._error.append(exc)

        self._thread = threading.Thread(target=capture, name="xla-profile", daemon=True)
        self._thread.start()
        time.sleep(XLA_TRACE_START_DELAY)

    def finish(self) -> None:
        if self._thread is None:
            return
        limit = self.duration_ms / 1e3 + XLA_TRACE_TIMEOUT_S + 30
        self._thread.join(timeout=limit)
        logdir = self.files.path("xla-profile")
        found = sorted(glob.glob(os.path.join(glob.escape(logdir), "**", "*.xplane.pb"), recursive=True))
        if self._thread.is_alive():
            raise DiagnosticsError(f"--profile-xla: the XLA profiler capture did not end within {limit:.0f} s")
        if self._error:
            raise DiagnosticsError(f"--profile-xla: the XLA profiler capture failed: {self._error[0]}")
        if not found:
            raise DiagnosticsError(f"--profile-xla: the XLA profiler wrote no .xplane.pb file under {logdir}")
        self.files.add_artifact("xla-profile", logdir)
        self.diagnostics["xla_profile"]["files"] = [self.files.relative(f) for f in found]

    def close(self) -> None:
        self._server = None  # dropping the object shuts the server down
