"""The child's diagnostics for one config: which of the flags apply, and when each kind runs (profilers.py,
xla_dumps.py, inputs_outputs.py); the flags are declared with the others (config/run_options.py).

Every file goes to a deterministic path, <output-dir>/<model>/<kind>-<config>[-<repeat>].<ext>
(plumbing/safe_paths.py), and is listed in record["artifacts"] (kind -> path relative to the output
directory; a per-repeat kind maps to a list with one path per timed repeat, in order). Dict-valued
results go to record["diagnostics"]; record["metrics"] only gets per-repeat numbers.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from typing import Callable, Optional

from benchmarks.child import inputs_outputs, profilers, xla_dumps
from benchmarks.plumbing import safe_paths, xla_dump_env
from benchmarks.results.record import Samples

log = logging.getLogger("benchmarks.child.diagnostics")


class GraphBreak(RuntimeError):
    """A dynamo graph break under --filter-by-single-graph."""


class ArtifactFiles:
    """Where one config's diagnostics files go, and how its record lists them."""

    def __init__(self, options, model_config: dict, experiment, record: dict):
        self.options = options
        self.model_config = model_config
        self.experiment = experiment  # as requested: the parent names paths from it too
        self.record = record

    def path(self, kind: str, ext: str = "", repeat: Optional[int] = None) -> str:
        path = safe_paths.artifact_file(self.options.output_dirname, self.model_config, self.experiment, kind, ext,
                                          repeat)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def relative(self, path: str) -> str:
        return safe_paths.relative(path, os.path.abspath(self.options.output_dirname))

    def add_artifact(self, kind: str, path: str, repeat: Optional[int] = None) -> None:
        if repeat is None:
            self.record["artifacts"][kind] = self.relative(path)
        else:
            self.record["artifacts"].setdefault(kind, []).append(self.relative(path))


# Flags that only some configs can honour: (flag, the kind of config it applies to, why not elsewhere).
_CONDITIONS = (
    ("--dump-pytorch-xla-metrics", "xla", "not an XLA config"),
    ("--dump-hlo", "xla", "not an XLA config"),
    ("--save-ir-format", "xla", "not an XLA config"),
    ("--profile-xla", "xla", "not an XLA config"),
    ("--collect-dynamo-counters", "dynamo", "not a dynamo config"),
    ("--dump-dynamo-counters", "dynamo", "not a dynamo config"),
    ("--filter-by-single-graph", "dynamo", "not a dynamo config (nothing is compiled)"),
    ("--collect-full-output", "train", "eval steps return their whole output anyway"),
    ("--randomize-input", "static", "--dynamic varies the batch from the example inputs"),
)


class Diagnostics:
    """The child's side of every diagnostics flag, for one config. `experiment` is the config as requested
    (the parent names paths from it, before the model picks its batch size)."""

    def __init__(self, options, model_config: dict, experiment, record: dict):
        self.options = options
        self.opts = options.diagnostics
        self.model_config = model_config
        self.experiment = experiment
        self.record = record
        self.files = ArtifactFiles(options, model_config, experiment, record)
        self.metrics = Samples()  # each name checked (results/record.py)
        self.inputs: Optional[inputs_outputs.RandomInputs] = None
        xla, dynamo = bool(experiment.xla), experiment.dynamo is not None
        self.cuda = experiment.accelerator == "cuda" and not xla
        self.profile = self.opts.dump_pytorch_profiles or self.opts.profile_cuda_cpu or \
            self.opts.profile_cuda_cpu_individual_ops
        self.iterations = options.iterations_per_run or 1  # the calls per timed run, once known (set_iterations)
        self.profiler = profilers.TorchProfiler(self.opts, experiment, self.iterations, self.cuda,
                                                self.files, self.metrics)
        self.xla_metrics_report = self.opts.dump_pytorch_xla_metrics and xla
        self.xla_trace = xla_dumps.XlaTrace(self.opts.profile_xla_duration_ms, self.files, record["diagnostics"]) \
            if self.opts.profile_xla and xla else None
        # the graph metrics are always recorded for dynamo configs
        self.dynamo_counters = profilers.DynamoCounters(self.opts, self.files, self.metrics) if dynamo else None
        self.fullgraph = self.opts.filter_by_single_graph and dynamo
        applies = {"xla": xla, "dynamo": dynamo, "train": experiment.test == "train",
                   "static": experiment.dynamic == "static"}
        not_applied = {flag: why for flag, condition, why in _CONDITIONS
                       if getattr(self.opts, flag[2:].replace("-", "_")) and not applies[condition]}
        if not_applied:
            record["diagnostics"]["not_applied"] = not_applied
            for flag, why in not_applied.items():
                log.info("%s not applied: %s", flag, why)

    # -- phases

    def setup(self) -> None:
        """Before the model is built: stale files of an earlier run go, servers start (the matmul precision is its
        axis's hook's: features/matmul_precision/child.py)."""
        xla_dumps.remove_stale_dumps(self.options, self.model_config, self.experiment)
        if self.dynamo_counters:
            self.dynamo_counters.clear()
        if self.xla_trace:
            self.xla_trace.start_server()

    def make_inputs(self, args: tuple, kwargs: dict) -> Optional[inputs_outputs.RandomInputs]:
        """The input source for make_step: random inputs with --randomize-input, else None (the examples)."""
        if self.opts.randomize_input and self.experiment.dynamic == "static":
            from benchmarks.child.backends import SEED

            self.inputs = inputs_outputs.RandomInputs(args, kwargs, SEED)
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

    def set_iterations(self, iterations: int) -> None:
        """The calls per timed run, as the warm-up found them (given, or calibrated): one input set per call, and
        the profiled runs' figures per call."""
        self.iterations = self.profiler.iterations = iterations

    @property
    def around_repeat(self) -> Optional[Callable]:
        """measure()'s hook around each timed run, or None when no diagnostic needs one. Never a profiler: they
        run in repeats of their own (profiled_repeat)."""
        if self.inputs or self.xla_metrics_report or self.xla_trace or self.dynamo_counters:
            return self._around_repeat
        return None

    @property
    def profiled_repeat(self) -> Optional[Callable]:
        """measure()'s profilers' context for the profiled repeats it runs after the timed ones (torch.profiler:
        --dump-pytorch-profiles, --profile-cuda-cpu, --profile-cuda-cpu-individual-ops), or None without them."""
        return self.profiler.around if self.profile else None

    @property
    def after_repeat(self) -> Optional[Callable]:
        return functools.partial(inputs_outputs.save_output, self.files) if self.opts.save_output else None

    @contextlib.contextmanager
    def _around_repeat(self, index: int):
        if self.inputs is not None:
            self.inputs.refill(self.iterations)
        if self.xla_trace and index == 0:
            self.xla_trace.start_capture()
        yield
        if self.xla_metrics_report:
            xla_dumps.write_metrics_report(self.files, index)
        if self.dynamo_counters:
            self.dynamo_counters.after_repeat()

    # -- end

    def finish(self, metrics: dict) -> None:
        """After the timed runs succeeded: per-repeat metrics join the record's, summaries are written."""
        if self.inputs is not None:
            self.inputs.sets = [self.inputs.template]  # later callers (--verify) get the example inputs
        for name, values in self.metrics.items():
            metrics[name] = values
        if self.profile:  # what the record's times are: the timed repeats ran with no profiler
            self.record["diagnostics"]["profiled_repeats"] = {"count": len(metrics.get("profiled_total_time", ())),
                                                              "timed_repeats_profiled": False}
        self.profiler.finish(self.record["diagnostics"])
        if self.dynamo_counters:
            self.dynamo_counters.finish(self.record["diagnostics"])
        if self.xla_trace:
            self.xla_trace.finish()

    def close(self) -> None:
        """Always, success or not: list the files torch_xla wrote from the environment; stop the server."""
        try:
            self.record["artifacts"].update(xla_dump_env.env_artifacts(self.options, self.model_config,
                                                                       self.experiment))
        except OSError as exc:  # never turns a record into a crash
            log.warning("could not list the XLA dump files: %s", exc)
        diagnostics = self.record["diagnostics"]
        if self.dynamo_counters and self.opts.collect_dynamo_counters and "dynamo_counters" not in diagnostics:
            try:  # a failed config (a graph break, say): the counters say why
                diagnostics["dynamo_counters"] = profilers.counters_snapshot()
            except Exception as exc:  # torch may not even have been imported
                log.warning("could not read the dynamo counters: %s", exc)
        if self.xla_trace:
            self.xla_trace.close()
