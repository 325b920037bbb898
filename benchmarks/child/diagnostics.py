"""Diagnostics: profiles, per-operator times, XLA metrics and IR dumps, dynamo counters, saved outputs,
random inputs and matmul precision (upstream PyTorch/XLA's flags, working).

Every file goes to a deterministic path, <output-dir>/<model>/<kind>-<config>[-<repeat>].<ext>
(benchmarks.paths), and is listed in record["artifacts"] (kind -> path relative to the output
directory; a per-repeat kind maps to a list with one path per timed repeat, in order). Dict-valued
results go to record["diagnostics"]; record["metrics"] only gets per-repeat numbers.

The parent uses only `add_arguments`, `validate_options` and `update_child_env` (no torch import); the child
drives a `Diagnostics` object from run_config.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import glob
import json
import logging
import os
import shutil
import socket
import threading
import time
from typing import Any, Callable, Optional

from benchmarks.common import output_paths
from benchmarks.common.cli_support import UsageError, positive_int

log = logging.getLogger("benchmarks.child.diagnostics")

MATMUL_PRECISIONS = ("default", "high", "highest")
IR_FORMATS = ("text", "hlo", "stablehlo")
# Seconds to let the XLA profiler session start before the first timed repeat (it starts within ms).
XLA_TRACE_START_DELAY = 0.2
# How long trace() keeps retrying to reach the profiler server.
XLA_TRACE_TIMEOUT_S = 60


def add_arguments(parser) -> None:
    """Flags of this feature (an argument group); all are forwarded to children."""
    g = parser.add_argument_group(
        "diagnostics (files go to <output-dir>/<model>/<kind>-<config>[-<repeat>].<ext>, listed in the "
        "record's artifacts)")
    g.add_argument("--dump-pytorch-profiles", action="store_true",
                   help="torch.profiler per timed repeat: a Chrome trace (trace-*.json) and an operator table "
                   "(pytorch-profile-*.txt)")
    g.add_argument("--profile-cuda-cpu", action="store_true",
                   help="per-repeat metrics total_cpu_time_s and per_iter_cpu_time_s (and the cuda pair where "
                   "CUDA is profiled) from torch.profiler")
    g.add_argument("--profile-cuda-cpu-individual-ops", action="store_true",
                   help="per-operator times and call counts in the record's diagnostics (aten_ops; on XLA "
                   "configs xla_unlowered_ops: the operators that fell back to the CPU)")
    g.add_argument("--dump-pytorch-xla-metrics", action="store_true",
                   help="torch_xla's metrics report per timed repeat (pytorch-xla-metrics-*.txt; XLA configs)")
    g.add_argument("--dump-hlo", action="store_true",
                   help="XLA_FLAGS --xla_dump_to=<output-dir>/<model>/hlo-<config>/ (XLA configs)")
    g.add_argument("--save-ir-format", choices=IR_FORMATS, default=None,
                   help="save the lazy-tensor IR of every graph (XLA_SAVE_TENSORS_FMT/FILE) to "
                   "dump-<config>.<format>.<ordinal> (XLA configs)")
    g.add_argument("--profile-xla", action="store_true",
                   help="capture an XLA profiler (xplane) trace of the timed repeats into xla-profile-<config>/; "
                   "the profiler server gets a free port per child (XLA configs)")
    g.add_argument("--profile-xla-duration-ms", type=positive_int, default=5000, metavar="MS",
                   help="length of that capture (default 5000)")
    g.add_argument("--collect-dynamo-counters", action="store_true",
                   help="torch._dynamo's counters into the record's diagnostics (dynamo configs)")
    g.add_argument("--dump-dynamo-counters", action="store_true",
                   help="torch._dynamo's counters after each repeat to dynamo-counters-<config>.json (dynamo configs)")
    g.add_argument("--filter-by-single-graph", action="store_true",
                   help="compile with fullgraph=True: a graph break makes the config an error record")
    g.add_argument("--randomize-input", action="store_true",
                   help="fresh random values for every floating-point input tensor (any float dtype, bf16 and "
                   "fp16 included) for every timed iteration, made outside the timed region; integer inputs kept")
    g.add_argument("--save-output", action="store_true",
                   help="save the CPU copy of the last output of each timed repeat (output-*.pt; load with "
                   "torch.load(..., weights_only=True))")
    g.add_argument("--collect-full-output", action="store_true",
                   help="train steps return the model output and the gradients beside the loss (slower)")
    g.add_argument("--matmul-precision", choices=MATMUL_PRECISIONS, default=None,
                   help="float32 matmul precision for torch (default->medium, high, highest) and torch_xla "
                   "(default, high, highest); unset: the libraries' own defaults")
    g.add_argument("--disable-tf32", action="store_true",
                   help="no TF32: float32 matmuls (and cuDNN convolutions) at full precision (highest)")


def validate_options(options) -> None:
    """Flag combinations that contradict each other: a UsageError (one line, exit 2)."""
    precision = options.diagnostics.matmul_precision
    if options.diagnostics.disable_tf32 and precision not in (None, "highest"):
        raise UsageError(f"--disable-tf32 asks for full float32 precision, --matmul-precision={precision} "
                         "for less; pass one of them")


# ---------------------------------------------------------------- parent side: the child's environment


def _path(options, model_config: dict, experiment, kind: str, ext: str = "", repeat: Optional[int] = None) -> str:
    return os.path.abspath(output_paths.artifact_path(options.output_dirname, model_config, experiment, kind, ext, repeat))


def hlo_dir(options, model_config, experiment) -> str:
    return _path(options, model_config, experiment, "hlo")


def ir_file(options, model_config, experiment) -> str:
    return _path(options, model_config, experiment, "dump", options.diagnostics.save_ir_format)


def update_child_env(env: dict, experiment, options, model_config: dict) -> None:
    """Environment variables that torch_xla reads at start-up (XLA configs only; idempotent, because
    child_environment rebuilds XLA_FLAGS from the experiment for XLA configs)."""
    if not experiment.xla:
        return
    if options.diagnostics.dump_hlo:
        flag = f"--xla_dump_to={hlo_dir(options, model_config, experiment)}"
        if flag not in env.get("XLA_FLAGS", "").split():
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flag).strip()
    if options.diagnostics.save_ir_format:
        env["XLA_SAVE_TENSORS_FMT"] = options.diagnostics.save_ir_format
        env["XLA_SAVE_TENSORS_FILE"] = ir_file(options, model_config, experiment)


def ir_files(path: str) -> list:
    """torch_xla appends the device ordinal to XLA_SAVE_TENSORS_FILE (dump-x.hlo -> dump-x.hlo.0)."""
    return sorted(p for p in glob.glob(glob.escape(path) + "*")
                  if p == path or p[len(path):].lstrip(".").isdigit())


def env_artifacts(options, model_config: dict, experiment) -> dict:
    """The files torch_xla wrote because of the environment (kind -> relative path), found on disk; the
    parent uses it too, for a child that died without a record."""
    found = {}
    if not experiment.xla:
        return found
    out = os.path.abspath(options.output_dirname)
    if options.diagnostics.dump_hlo:
        directory = hlo_dir(options, model_config, experiment)
        if os.path.isdir(directory) and os.listdir(directory):
            found["hlo"] = output_paths.relative(directory, out)
    if options.diagnostics.save_ir_format:
        files = ir_files(ir_file(options, model_config, experiment))
        if files:  # one device: one file, <name>.0
            found["dump"] = output_paths.relative(files[0], out)
    return found


# ---------------------------------------------------------------- child side


class DiagnosticsError(RuntimeError):
    """A requested diagnostic could not be produced (the record becomes an error record)."""


class GraphBreak(RuntimeError):
    """A dynamo graph break under --filter-by-single-graph."""


def free_port() -> int:
    """A TCP port free right now (the kernel picks it), so parallel children never share one."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def to_cpu_plain(tree):
    """A CPU copy of an output made of plain containers only, so torch.load(weights_only=True) reads it."""
    import torch

    if isinstance(tree, torch.Tensor):
        return tree.detach().cpu()
    if isinstance(tree, dict):
        return {key: to_cpu_plain(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):  # named tuples become plain tuples
        items = [to_cpu_plain(item) for item in tree]
        return items if isinstance(tree, list) else tuple(items)
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    if hasattr(tree, "to_tuple") and hasattr(tree, "keys"):  # Hugging Face ModelOutput
        return {key: to_cpu_plain(tree[key]) for key in tree.keys()}
    if hasattr(tree, "__dict__"):
        return {key: to_cpu_plain(value) for key, value in vars(tree).items()}
    return repr(tree)


def randomized(tree, generator):
    """A copy of `tree` whose floating-point tensors hold fresh standard-normal values (same shape, dtype,
    device); other leaves are kept. Drawn on the CPU in float32 (float64 stays float64), then cast, so every
    float dtype works and eager and XLA configs get the same values."""
    import torch

    if isinstance(tree, torch.Tensor):
        if not tree.is_floating_point():
            return tree
        draw_dtype = torch.float64 if tree.dtype == torch.float64 else torch.float32
        values = torch.randn(tuple(tree.shape), generator=generator, dtype=draw_dtype)
        return values.to(dtype=tree.dtype).to(tree.device).requires_grad_(tree.requires_grad)
    if isinstance(tree, (list, tuple)):
        items = [randomized(item, generator) for item in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    if isinstance(tree, dict):
        return type(tree)((key, randomized(value, generator)) for key, value in tree.items())
    return tree


class RandomInputs:
    """Hands each iteration its inputs: the example inputs until `refill`, then one fresh random set per
    iteration (made by `refill`, before the timed run starts)."""

    def __init__(self, args: tuple, kwargs: dict, seed: int):
        import torch

        self.template = (args, kwargs)
        self.generator = torch.Generator().manual_seed(seed)
        self.sets = [self.template]
        self.next = 0

    def refill(self, count: int) -> None:
        self.sets = [(randomized(self.template[0], self.generator), randomized(self.template[1], self.generator))
                     for _ in range(count)]
        self.next = 0

    def __call__(self) -> tuple:
        inputs = self.sets[self.next % len(self.sets)]
        self.next += 1
        return inputs


def _ops_table(events, keep: Callable[[str], bool], with_cuda: bool) -> dict:
    """op name -> figures of one profiled repeat (seconds, call count)."""
    table = {}
    for event in events:
        if not keep(event.key):
            continue
        row = {
            "self_cpu_time_s": event.self_cpu_time_total / 1e6,
            "total_cpu_time_s": event.cpu_time_total / 1e6,
            "num_of_calls": event.count,
        }
        if with_cuda:
            row["self_cuda_time_s"] = event.self_device_time_total / 1e6
            row["total_cuda_time_s"] = event.device_time_total / 1e6
        table[event.key] = row
    return table


def per_repeat_tables(tables: list) -> dict:
    """[op -> figures] per repeat -> op -> figure -> one value per repeat (0 where the op did not run)."""
    merged = {}
    for op in sorted({op for table in tables for op in table}):
        figures = list(next(t[op] for t in tables if op in t))
        merged[op] = {figure: [table.get(op, {}).get(figure, 0) for table in tables] for figure in figures}
    return merged


def counters_snapshot() -> dict:
    from torch._dynamo.utils import counters

    return {category: dict(values) for category, values in counters.items() if values}


class Diagnostics:
    """The child's side of every diagnostics flag, for one config. `experiment` is the config as requested
    (the parent names paths from it, before the model picks its batch size)."""

    def __init__(self, options, model_config: dict, experiment, record: dict):
        self.options = options
        self.model_config = model_config
        self.experiment = experiment
        self.record = record
        self.metrics = collections.defaultdict(list)
        self.inputs: Optional[RandomInputs] = None
        self.iterations = options.iterations_per_run
        self.cuda = False
        self._xla_server = None
        self._xla_port = None
        self._xla_thread = None
        self._xla_error: list = []
        self._counters: list = []
        self._op_tables: dict = {}  # diagnostics key -> one op table per repeat
        opt = lambda name, default=False: getattr(options.diagnostics, name)  # noqa: E731
        xla, dynamo = bool(experiment.xla), experiment.dynamo is not None
        self.profile = opt("dump_pytorch_profiles") or opt("profile_cuda_cpu") or opt("profile_cuda_cpu_individual_ops")
        self.xla_metrics_report = opt("dump_pytorch_xla_metrics") and xla
        self.xla_profile = opt("profile_xla") and xla
        self.dynamo_counters = dynamo  # the graph metrics are always recorded for dynamo configs
        self.fullgraph = opt("filter_by_single_graph") and dynamo
        not_applied = {}
        for flag, applies, why in (
            ("--dump-pytorch-xla-metrics", xla, "not an XLA config"),
            ("--dump-hlo", xla, "not an XLA config"),
            ("--save-ir-format", xla, "not an XLA config"),
            ("--profile-xla", xla, "not an XLA config"),
            ("--collect-dynamo-counters", dynamo, "not a dynamo config"),
            ("--dump-dynamo-counters", dynamo, "not a dynamo config"),
            ("--filter-by-single-graph", dynamo, "not a dynamo config (nothing is compiled)"),
            ("--collect-full-output", experiment.test == "train", "eval steps return their whole output anyway"),
        ):
            dest = flag[2:].replace("-", "_")
            if opt(dest, None) and not applies:
                not_applied[flag] = why
        if not_applied:
            record["diagnostics"]["not_applied"] = not_applied
            for flag, why in not_applied.items():
                log.info("%s not applied: %s", flag, why)

    # -- files

    def path(self, kind: str, ext: str = "", repeat: Optional[int] = None) -> str:
        path = _path(self.options, self.model_config, self.experiment, kind, ext, repeat)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def _relative(self, path: str) -> str:
        return output_paths.relative(path, os.path.abspath(self.options.output_dirname))

    def add_artifact(self, kind: str, path: str, repeat: Optional[int] = None) -> None:
        if repeat is None:
            self.record["artifacts"][kind] = self._relative(path)
        else:
            self.record["artifacts"].setdefault(kind, []).append(self._relative(path))

    # -- phases

    def setup(self) -> None:
        """Before the model is built: stale files of an earlier run go, precision is set, servers start."""
        from benchmarks.child import backends

        if self.experiment.xla and self.options.diagnostics.dump_hlo:
            shutil.rmtree(hlo_dir(self.options, self.model_config, self.experiment), ignore_errors=True)
        if self.experiment.xla and self.options.diagnostics.save_ir_format:
            for stale in ir_files(ir_file(self.options, self.model_config, self.experiment)):
                os.remove(stale)  # torch_xla appends to it
        self.cuda = self.experiment.accelerator == "cuda" and not self.experiment.xla
        self.record["diagnostics"]["matmul_precision"] = backends.set_matmul_precision(
            self.experiment, self.options.diagnostics.matmul_precision,
            self.options.diagnostics.disable_tf32)
        if self.dynamo_counters:
            from torch._dynamo.utils import counters

            counters.clear()
        if self.xla_profile:
            self._start_xla_server()

    def make_inputs(self, args: tuple, kwargs: dict) -> Optional[RandomInputs]:
        """The input source for make_step: random inputs with --randomize-input, else None (the examples)."""
        if self.options.diagnostics.randomize_input:
            from benchmarks.child.backends import SEED

            self.inputs = RandomInputs(args, kwargs, SEED)
        return self.inputs

    def guard(self, step: Callable) -> Callable:
        """With --filter-by-single-graph, turn dynamo's refusal of a graph break into a clear GraphBreak."""
        if not self.fullgraph:
            return step
        from torch._dynamo.exc import Unsupported

        @functools.wraps(step)  # keeps the step's attributes (its optimizer, for --verify)
        def guarded():
            try:
                return step()
            except Unsupported as exc:
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise GraphBreak(f"graph break under --filter-by-single-graph (fullgraph=True): {reason}") from exc

        return guarded

    @property
    def around_repeat(self) -> Optional[Callable]:
        """measure()'s hook around each timed run, or None when no diagnostic needs one."""
        if self.inputs or self.profile or self.xla_metrics_report or self.xla_profile or self.dynamo_counters:
            return self._around_repeat
        return None

    @property
    def after_repeat(self) -> Optional[Callable]:
        return self._save_output if self.options.diagnostics.save_output else None

    @contextlib.contextmanager
    def _around_repeat(self, index: int):
        if self.inputs is not None:
            self.inputs.refill(self.iterations)
        if self.xla_profile and index == 0:
            self._start_xla_capture()
        if not self.profile:
            yield
        else:
            import torch.profiler as tp

            activities = [tp.ProfilerActivity.CPU] + ([tp.ProfilerActivity.CUDA] if self.cuda else [])
            with tp.profile(activities=activities) as prof:
                yield
            self._profiled(index, prof)
        if self.xla_metrics_report:
            import torch_xla.debug.metrics as met

            path = self.path("pytorch-xla-metrics", "txt", index)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(met.metrics_report())
            self.add_artifact("pytorch-xla-metrics", path, index)
        if self.dynamo_counters:
            snapshot = counters_snapshot()
            self._counters.append(snapshot)
            self.metrics["dynamo_graph_count"].append(snapshot.get("stats", {}).get("unique_graphs", 0))
            self.metrics["dynamo_graph_break_count"].append(sum(snapshot.get("graph_break", {}).values()))

    def _profiled(self, index: int, prof) -> None:
        events = prof.key_averages()
        opts = self.options.diagnostics
        if opts.dump_pytorch_profiles:
            trace = self.path("trace", "json", index)
            prof.export_chrome_trace(trace)
            self.add_artifact("trace", trace, index)
            table = self.path("pytorch-profile", "txt", index)
            sort_by = "self_cuda_time_total" if self.cuda else "self_cpu_time_total"
            with open(table, "w", encoding="utf-8") as handle:
                handle.write(events.table(sort_by=sort_by, row_limit=-1) + "\n")
            self.add_artifact("pytorch-profile", table, index)
        if opts.profile_cuda_cpu:
            cpu = sum(event.self_cpu_time_total for event in events) / 1e6
            self.metrics["total_cpu_time_s"].append(cpu)
            self.metrics["per_iter_cpu_time_s"].append(cpu / self.iterations)
            if self.cuda:  # self device times: each kernel counted once
                cuda = sum(event.self_device_time_total for event in events) / 1e6
                self.metrics["total_cuda_time_s"].append(cuda)
                self.metrics["per_iter_cuda_time_s"].append(cuda / self.iterations)
        if opts.profile_cuda_cpu_individual_ops:
            if self.experiment.xla:
                import torch_xla.debug.metrics as met

                fallback = set(met.executed_fallback_ops())
                key, keep = "xla_unlowered_ops", fallback.__contains__
            else:
                key, keep = "aten_ops", lambda name: name.startswith("aten::")
            self._op_tables.setdefault(key, []).append(_ops_table(events, keep, self.cuda))

    def _save_output(self, index: int, output: Any) -> None:
        import torch

        path = self.path("output", "pt", index)
        torch.save(to_cpu_plain(output), path)
        self.add_artifact("output", path, index)

    # -- XLA profiler

    def _start_xla_server(self) -> None:
        import torch_xla.debug.profiler as xp

        problem = None
        for _ in range(3):  # another process may take the port between the probe and the bind
            port = free_port()
            try:
                self._xla_server = xp.start_server(port)
                self._xla_port = port
                self.record["diagnostics"]["xla_profile"] = {"port": port,
                                                             "duration_ms": self.options.diagnostics.profile_xla_duration_ms}
                return
            except RuntimeError as exc:
                problem = exc
        raise DiagnosticsError(f"--profile-xla: cannot start the XLA profiler server: {problem}")

    def _start_xla_capture(self) -> None:
        import torch_xla.debug.profiler as xp

        logdir = self.path("xla-profile")
        shutil.rmtree(logdir, ignore_errors=True)

        def capture():
            try:
                xp.trace(f"localhost:{self._xla_port}", logdir, duration_ms=self.options.diagnostics.profile_xla_duration_ms,
                         timeout_s=XLA_TRACE_TIMEOUT_S)
            except Exception as exc:  # reported by finish()
                self._xla_error.append(exc)

        self._xla_thread = threading.Thread(target=capture, name="xla-profile", daemon=True)
        self._xla_thread.start()
        time.sleep(XLA_TRACE_START_DELAY)

    def _finish_xla_capture(self) -> None:
        if self._xla_thread is None:
            return
        limit = self.options.diagnostics.profile_xla_duration_ms / 1e3 + XLA_TRACE_TIMEOUT_S + 30
        self._xla_thread.join(timeout=limit)
        logdir = self.path("xla-profile")
        files = sorted(glob.glob(os.path.join(glob.escape(logdir), "**", "*.xplane.pb"), recursive=True))
        if self._xla_thread.is_alive():
            raise DiagnosticsError(f"--profile-xla: the XLA profiler capture did not end within {limit:.0f} s")
        if self._xla_error:
            raise DiagnosticsError(f"--profile-xla: the XLA profiler capture failed: {self._xla_error[0]}")
        if not files:
            raise DiagnosticsError(f"--profile-xla: the XLA profiler wrote no .xplane.pb file under {logdir}")
        self.add_artifact("xla-profile", logdir)
        self.record["diagnostics"]["xla_profile"]["files"] = [self._relative(f) for f in files]

    # -- end

    def finish(self, metrics: dict) -> None:
        """After the timed runs succeeded: per-repeat metrics join the record's, summaries are written."""
        if self.inputs is not None:
            self.inputs.sets = [self.inputs.template]  # later callers (--verify) get the example inputs
        for name, values in self.metrics.items():
            metrics[name] = values
        for key, tables in self._op_tables.items():
            self.record["diagnostics"][key] = per_repeat_tables(tables)
        if self._counters and self.options.diagnostics.collect_dynamo_counters:
            self.record["diagnostics"]["dynamo_counters"] = self._counters[-1]
        if self._counters and self.options.diagnostics.dump_dynamo_counters:
            path = self.path("dynamo-counters", "json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump({"per_repeat": self._counters}, handle, indent=1, ensure_ascii=False)
            self.add_artifact("dynamo-counters", path)
        self._finish_xla_capture()

    def close(self) -> None:
        """Always, success or not: list the files torch_xla wrote from the environment; stop the server."""
        try:
            self._list_env_artifacts()
        except OSError as exc:  # never turns a record into a crash
            log.warning("could not list the XLA dump files: %s", exc)
        wants_counters = self.options.diagnostics.collect_dynamo_counters
        if self.dynamo_counters and wants_counters and "dynamo_counters" not in self.record["diagnostics"]:
            try:  # a failed config (a graph break, say): the counters say why
                self.record["diagnostics"]["dynamo_counters"] = counters_snapshot()
            except Exception as exc:  # torch may not even have been imported
                log.warning("could not read the dynamo counters: %s", exc)
        self._xla_server = None  # dropping the object shuts the server down

    def _list_env_artifacts(self) -> None:
        self.record["artifacts"].update(env_artifacts(self.options, self.model_config, self.experiment))
