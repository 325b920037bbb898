"""The iteration step (eval or train) and the measured loop: warm-up, then timed runs (docs/measurement.md).
Child only: imports torch."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import resource
import time
from typing import Any, Callable, Optional

import torch

from benchmarks.child import backends, device_memory, feature_methods, timing_block
from benchmarks.results.record import Samples


def reduce_to_scalar(output) -> torch.Tensor:
    """A generic training loss: the sum of the means of every floating-point tensor in the output."""
    if isinstance(output, torch.Tensor):
        return output.float().mean() if output.is_floating_point() else output.new_zeros((), dtype=torch.float32)
    if isinstance(output, dict):
        parts = list(output.values())
    elif isinstance(output, (list, tuple)):
        parts = list(output)
    elif hasattr(output, "to_tuple"):  # Hugging Face ModelOutput
        parts = list(output.to_tuple())
    elif hasattr(output, "__dict__"):
        parts = list(vars(output).values())
    else:
        raise TypeError(f"cannot derive a training loss from a {type(output).__name__} output")
    losses = [reduce_to_scalar(part) for part in parts if isinstance(part, (torch.Tensor, dict, list, tuple))]
    if not losses:
        raise TypeError("the model output holds no tensor to derive a training loss from")
    return torch.stack([loss.reshape(()) for loss in losses]).sum()


def default_optimizer(parameters):
    return torch.optim.SGD(parameters, lr=0.01)


def harness_optimizer(module, experiment):
    """The dynamo harness's optimizer: Adam(lr=0.01, capturable=True, foreach=True) on CUDA, none elsewhere (its
    CPU runs only zero the gradients: the parameters stay as built). Its per-model SGD lists are not carried."""
    if experiment.accelerator != "cuda" or experiment.xla:
        return None
    return torch.optim.Adam(module.parameters(), lr=0.01, capturable=True, foreach=True)


def harness_generic_loss(output):
    """The harness's loss for a suite without its own (TorchBench): torch's reduce_to_scalar_loss, called from a
    function of its own as the harness calls it from its compute_loss method. Dynamo won't trace the reduction, so
    the step breaks at this call and this frame breaks again: two graph breaks, as the dashboard counts them
    (TorchBench dcgan's training: 5, 4 distinct; a suite's own loss function, timm's, is that frame already)."""
    from torch._dynamo.testing import reduce_to_scalar_loss

    return reduce_to_scalar_loss(output)


def harness_train_step(bm, experiment, module, args: tuple, kwargs: dict, fullgraph: bool = False,
                       inputs: Optional[Callable[[], tuple]] = None, full_output: bool = False) -> Callable:
    """--train-step=harness: the dynamo harness's training step, compiled whole (eager: the same function
    uncompiled). Inside it: the inputs cloned, the gradients zeroed (dynamo-disabled, a graph break as in the
    harness), forward and the suite's loss (BenchmarkModel.harness_loss, else torch's reduce_to_scalar_loss) under
    autocast, backward, the optimizer's step (harness_optimizer: none on the CPU). No grad scaler: the harness's is
    a no-op. Same returns as make_step's train step."""
    from torch._dynamo.utils import clone_inputs

    module.train()
    loss_fn = bm.harness_loss or harness_generic_loss
    step_context = feature_methods.provided("step_context")  # the forward's autocast, found once
    optimizer = harness_optimizer(module, experiment)

    @torch._disable_dynamo(recursive=True)
    def zero_grad():
        (optimizer or module).zero_grad(True)

    def harness_step(a, k):
        # torch's clone_inputs, called once as the harness calls it (one graph break, its reason alike)
        cloned = clone_inputs([*a, *k.values()])
        a, k = tuple(cloned[:len(a)]), dict(zip(k, cloned[len(a):]))
        zero_grad()
        with step_context(experiment):
            output = module(*a, **k)
            loss = loss_fn(output)
        loss.backward()
        if optimizer is not None:
            optimizer.step()
        return (loss, output) if full_output else loss

    compiled = backends.compile_fn(harness_step, experiment, fullgraph)

    def train_step():
        a, k = inputs() if inputs is not None else (args, kwargs)
        if not full_output:
            return compiled(a, k)
        loss, output = compiled(a, k)
        return {"loss": loss.detach(), "output": output, "grads": gradients(module)}

    train_step.optimizer = optimizer  # --verify and --golden put its state back before a check
    train_step.grad_scaler = None
    return train_step


def make_step(bm, experiment, module, args: tuple, kwargs: dict, fullgraph: bool = False,
              inputs: Optional[Callable[[], tuple]] = None, full_output: bool = False,
              exported: Optional[Callable] = None) -> Callable:
    """A zero-argument callable that runs one iteration of the config: eval forward (make_eval_step), or a train
    step: the harness's (harness_train_step) or ours (make_train_step: forward + loss under the backend; backward and
    optimizer step after it). Returns the output (eval) or the loss (train; with `full_output` a dict of loss,
    output and gradients by parameter name).
    `inputs`, if given, returns each iteration's (args, kwargs) instead of the fixed ones (--randomize-input,
    --dynamic). `exported`, if given, is run instead of the compiled module (eval only: child/exporting.py)."""
    if experiment.test == "eval":
        return make_eval_step(bm, experiment, module, args, kwargs, fullgraph, inputs, exported)
    if experiment.harness_train_step:
        return harness_train_step(bm, experiment, module, args, kwargs, fullgraph, inputs, full_output)
    return make_train_step(bm, experiment, module, args, kwargs, fullgraph, inputs, full_output)


def make_eval_step(bm, experiment, module, args: tuple, kwargs: dict, fullgraph: bool = False,
                   inputs: Optional[Callable[[], tuple]] = None, exported: Optional[Callable] = None) -> Callable:
    """make_step's eval iteration: the forward under autocast, compiled (or the exported program), called without
    gradients unless the model needs them (BenchmarkModel.eval_needs_grad). Its `block_context` enters those
    contexts once around a timed block of calls (timed_run), so that no call in the block enters them again: the grad
    mode, and eager's autocast (a compiled forward's autocast is traced into its graph: nothing is entered when it
    runs). Called outside a block, each call enters them itself."""
    module.eval()
    step_context = feature_methods.provided("step_context")  # the forward's autocast, found once

    def forward(*a, **k):
        with step_context(experiment):
            return module(*a, **k)

    compiled = exported or backends.compile_fn(forward, experiment, fullgraph)
    grad_mode = torch.enable_grad if bm.eval_needs_grad else torch.no_grad
    eager = exported is None and experiment.dynamo is None
    in_block = module if eager else compiled  # what a call inside a block runs: its contexts are the block's
    block = {"active": False}

    def eval_step():
        a, k = inputs() if inputs is not None else (args, kwargs)
        if block["active"]:
            return in_block(*a, **k)
        with grad_mode():
            return compiled(*a, **k)

    @contextlib.contextmanager
    def block_context():
        with grad_mode(), step_context(experiment) if eager else contextlib.nullcontext():
            block["active"] = True
            try:
                yield
            finally:
                block["active"] = False

    eval_step.block_context = block_context
    return eval_step


def make_train_step(bm, experiment, module, args: tuple, kwargs: dict, fullgraph: bool = False,
                    inputs: Optional[Callable[[], tuple]] = None, full_output: bool = False) -> Callable:
    """make_step's train iteration, ours: forward + loss (BenchmarkModel.loss_fn, else reduce_to_scalar) compiled
    under autocast; backward, the optimizer (optimizer_fn, else SGD) and float16's loss scaler after it, uncompiled.
    The step itself stays one flat function: each call added to it would be timed with it."""
    module.train()
    loss_fn = bm.loss_fn or reduce_to_scalar
    step_context = feature_methods.provided("step_context")  # the forward's autocast, found once

    def forward_loss(*a, **k):
        with step_context(experiment):
            output = module(*a, **k)
            return (loss_fn(output), output) if full_output else loss_fn(output)

    compiled = backends.compile_fn(forward_loss, experiment, fullgraph)
    optimizer = (bm.optimizer_fn or default_optimizer)(module.parameters())
    scaler = feature_methods.provided("grad_scaler")(experiment)  # float16 autocast: the loss scaled, the step unscaled

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        a, k = inputs() if inputs is not None else (args, kwargs)
        loss = compiled(*a, **k)
        if full_output:
            loss, output = loss
        (scaler.scale(loss) if scaler else loss).backward()
        if scaler:
            scaler.unscale_(optimizer)  # the gradients the step (and --collect-full-output) sees are true ones
        if full_output:
            grads = gradients(module)
        if scaler:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        if full_output:
            return {"loss": loss.detach(), "output": output, "grads": grads}
        return loss

    train_step.optimizer = optimizer  # --verify puts its state back before comparing a step
    train_step.grad_scaler = scaler
    return train_step


def gradients(module) -> dict:
    """Every parameter's gradient by name, those with none left out (a train step's `full_output`)."""
    return {name: p.grad for name, p in module.named_parameters() if p.grad is not None}


def minor_faults() -> int:
    """Minor page faults of this process so far (every thread): a page first touched, or touched again after the
    allocator gave it back to the system (mmap/munmap, a trimmed heap)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timed_run(step: Callable, experiment, iterations: int, hooks=()) -> tuple:
    """One run of `iterations` back-to-back calls, timed as one block (one sample): the step's block context, if it
    has one (make_eval_step: its grad mode, eager's autocast), entered once around the block and outside the clock;
    the backend's wait at the block's ends (CUDA, XLA); on XLA each call's graph cut and launched after it (a call is
    one graph). Returns (total seconds, seconds spent in the Python calls (XLA's trace time; elsewhere the total),
    last output)."""
    context = getattr(step, "block_context", None)
    with context() if context is not None else contextlib.nullcontext():
        backends.sync(experiment)
        backends.wait(experiment)
        if experiment.xla or hooks:
            return traced_block(step, experiment, iterations, hooks)
        start = time.perf_counter()
        for _ in range(iterations - 1):
            step()  # its output released before the next call, as a plain loop's: only the last one is kept
        output = step() if iterations else None
        backends.wait(experiment)
        total = time.perf_counter() - start
    return total, total, output


def traced_block(step: Callable, experiment, iterations: int, hooks=()) -> tuple:
    """timed_run's block where each call is followed by work of its own (XLA's graph cut, `hooks`): the Python
    calls' time (the trace time for lazy tensors) clocked apart as well."""
    trace = 0.0
    output = None
    start = time.perf_counter()
    for _ in range(iterations):
        call = time.perf_counter()
        output = step()
        trace += time.perf_counter() - call
        backends.sync(experiment)
        for hook in hooks:
            hook()
    backends.wait(experiment)
    return time.perf_counter() - start, trace, output


def measure(step: Callable, experiment, repeat: int, iterations: Optional[int], warmup: int,
            on_phase: Optional[Callable[[str], None]] = None, around_repeat=None, timed=None,
            after_repeat=None, memory=None, eager: Optional[Callable] = None, gpu=None,
            profiled_repeat=None, on_block: Optional[Callable] = None) -> dict:
    """Warm-up runs (metrics.warmup_time; the first compiles), then `repeat` timed runs, then, with profilers,
    `repeat` profiled runs; a full garbage collection before them. The steps are MeasuredLoop's methods, in this
    order. Every run is one block of back-to-back calls (timed_run): `iterations` calls, or, with None, as many as
    the first warm-up run calibrates (child/timing_block.py: its first call compiles, the probes follow it, then
    its other calls); `on_block(block, eager_block)`, if given, hears the block sizes once the warm-up ends, before
    any timed run (eager_block: None without `eager`).

    `eager`, if given (--speedup=paired: eager's step on the same module and inputs), is warmed up first
    (metrics.eager_warmup_time, phase `reference`: a failure there is eager's), then timed just before each timed
    run of the backend, as the dynamo harness alternates them (metrics.eager_total_time, eager_per_iter_time).

    `around_repeat(index)`, if given, returns a context manager wrapping each timed run (what a timed run needs
    around it: fresh random inputs, XLA's metrics report, dynamo's counters; never a profiler).
    `profiled_repeat(index)`, if given, returns the profilers' context manager (torch.profiler): each wraps a run
    of its own after every timed run, so no profiler is active while the config is timed (the dynamo harness's
    fix, pytorch#181043: profiling inside the timed iterations read mobilenet_v2's speedup 1.87x, not 2.19x);
    each profiled run's own time is metrics.profiled_total_time, profiled_per_iter_time.
    `after_repeat(index, last_output)`, if given, is called after each timed run, outside it (--save-output).
    `timed`, if given, replaces timed_run (same contract) for the timed runs (--pure-wall-time).
    `memory`, if given (a device_memory.PeakMemory), gives each timed run's peak: metrics.peak_memory_bytes.
    Each timed run also gives the process's resident set after it (metrics.process_rss_bytes).
    Each timed run's minor page faults (getrusage, the whole process) per iteration: metrics.minor_faults_per_iter.
    `gpu`, if given (a gpu_telemetry.GpuTelemetry), gives each timed run's GPU clock, power, temperature,
    throttled seconds and energy (joules, mean watts, joules per iteration) (metrics.gpu_*), read before and after
    the run.
    """
    loop = MeasuredLoop(step, experiment, iterations or 1, timed or timed_run, on_phase or no_phase, around_repeat,
                        after_repeat, memory, eager, gpu, profiled_repeat)
    loop.block = loop.eager_block = first_block(iterations, timed, warmup)
    gc.collect()  # as the dynamo harness does before its warm-up: what building the model left is not collected later
    if eager is not None:
        loop.warm_up_eager(warmup)
    loop.warm_up(warmup)
    if on_block is not None:
        on_block(loop.block, loop.eager_block if eager is not None else None)
    for index in range(repeat):
        loop.timed_repeat(index)
    if profiled_repeat is not None:
        for index in range(repeat):
            loop.profiled_repeat(index)
    return dict(loop.metrics)


def first_block(iterations: Optional[int], timed: Optional[Callable], warmup: int) -> Optional[timing_block.Block]:
    """The block before any warm-up: given by hand, or one call where nothing can calibrate one (--pure-wall-time
    times each call on the device's clock; no warm-up run to calibrate on), else None: the first warm-up finds it."""
    if iterations is not None:
        return timing_block.given(iterations)
    if timed is not None:
        return timing_block.one_call("--pure-wall-time times each call by itself")
    if warmup == 0:
        return timing_block.one_call("--warmup=0: no warm-up run to calibrate on")
    return None


def no_phase(phase: str) -> None:
    """measure's on_phase when nobody listens (a caller with no parent to tell: a test)."""


@dataclasses.dataclass
class MeasuredLoop:
    """measure's state: what it runs and with what, and the metrics each run appends to (name -> one value per
    run). Each method is one step of the loop; measure calls them in order."""

    step: Callable
    experiment: Any
    iterations: int
    timed: Callable
    on_phase: Callable[[str], None]
    around_repeat: Optional[Callable] = None
    after_repeat: Optional[Callable] = None
    memory: Any = None
    eager: Optional[Callable] = None
    gpu: Any = None
    profiled: Optional[Callable] = None
    metrics: dict = dataclasses.field(default_factory=Samples)  # each name checked (results/record.py)
    block: Optional[timing_block.Block] = None  # the config's calls per run; None until its first warm-up finds it
    eager_block: Optional[timing_block.Block] = None  # eager's (--speedup=paired), found on eager's own warm-up

    def add(self, figures: dict) -> None:
        """Append each figure to its metric, in the order given (the record keeps the metrics' first order)."""
        for name, value in figures.items():
            self.metrics[name].append(value)

    def warm_up_eager(self, warmup: int) -> None:
        """Eager's warm-up, before the config's, in phase `reference`: a failure here is eager's, not the config's.
        Its first run calibrates eager's own block, unless the config's is given."""
        self.on_phase("reference")
        for index in range(warmup):
            if index == 0 and self.eager_block is None:
                seconds, self.eager_block = self.calibrating_run(self.eager)
            else:
                calls = self.eager_block.iterations
                seconds = timed_run(self.eager, self.experiment, calls)[0]
                self.eager_block = timing_block.grown(self.eager_block, calls, seconds)
            self.add({"eager_warmup_time": seconds})

    def warm_up(self, warmup: int) -> None:
        """The config's warm-up, always by timed_run: the first run compiles (phase `compile`; it calibrates the
        block when none is given), the next ones are phase `run`, as the timed runs (marked again after the last: no
        warm-up at all still ends in `run`)."""
        self.on_phase("compile")
        for index in range(warmup):
            if index == 0 and self.block is None:
                seconds, self.block = self.calibrating_run(self.step, lambda: self.on_phase("run"))
            else:
                calls = self.block.iterations
                seconds = timed_run(self.step, self.experiment, calls)[0]
                self.block = timing_block.grown(self.block, calls, seconds)  # warmer calls: a longer block
            self.add({"warmup_time": seconds})
            if index == 0:
                self.on_phase("run")
        self.on_phase("run")
        self.iterations = self.block.iterations

    def calibrating_run(self, step: Callable, after_first: Callable[[], None] = lambda: None) -> tuple:
        """A first warm-up run whose block is found as it runs: its first call (it compiles) timed alone, then the
        probe blocks (timing_block.calibrate), then the block's other calls (which may grow the block: they are
        warmer). (seconds of the run's own calls: the first and the others, as a block of that size would have
        taken; the block)."""
        first = timed_run(step, self.experiment, 1)[0]
        after_first()
        block = timing_block.calibrate(lambda calls: timed_run(step, self.experiment, calls)[0],
                                       timing_block.target_seconds(self.experiment))
        rest = timed_run(step, self.experiment, block.iterations - 1)[0] if block.iterations > 1 else 0.0
        return first + rest, timing_block.grown(block, block.iterations - 1, rest)

    def timed_repeat(self, index: int) -> None:
        """One timed run: eager's half of the pair first, then the config's between its telemetry's start and end;
        after_repeat sees its output, which is released before the run's figures read the process's memory."""
        if self.eager is not None:
            self.eager_half()
        backends.reset_xla_metrics(self.experiment)
        self.start_telemetry()
        total, trace, faults, output = self.config_run(index)
        self.end_telemetry()
        if self.after_repeat is not None:
            self.after_repeat(index, output)
        del output
        self.add_run_figures(total, trace, faults)

    def profiled_repeat(self, index: int) -> None:
        """After the timed runs: one run of the config inside the profilers' context, for their traces, tables
        and figures only; its time is recorded apart (metrics.profiled_*: it includes the profiler's overhead)
        and its output dropped."""
        with self.profiled(index):
            total = self.timed(self.step, self.experiment, self.iterations)[0]
        self.add({"profiled_total_time": total, "profiled_per_iter_time": total / self.iterations})

    def eager_half(self) -> None:
        """Eager's timed run just before the config's, as the dynamo harness alternates them; its output is
        dropped before the config's run."""
        iterations = self.eager_block.iterations
        eager_total = self.timed(self.eager, self.experiment, iterations)[0]
        self.add({"eager_total_time": eager_total, "eager_per_iter_time": eager_total / iterations})

    def start_telemetry(self) -> None:
        """The peak memory's, then the GPU's readings start (they end in the reverse order)."""
        if self.memory is not None:
            self.memory.start_run()
        if self.gpu is not None:
            self.gpu.start_run()

    def config_run(self, index: int) -> tuple:
        """The config's timed run inside around_repeat's context, if any (no profiler: they have runs of their
        own), its minor page faults counted around the run alone: (total seconds, Python-call seconds, faults,
        last output)."""
        around = self.around_repeat(index) if self.around_repeat is not None else contextlib.nullcontext()
        with around:
            faults = minor_faults()
            total, trace, output = self.timed(self.step, self.experiment, self.iterations)
            faults = minor_faults() - faults
        return total, trace, faults, output

    def end_telemetry(self) -> None:
        """The GPU's figures (metrics.gpu_*), then the run's peak memory (metrics.peak_memory_bytes)."""
        if self.gpu is not None:
            self.add(self.gpu.end_run(iterations=self.iterations))
        if self.memory is not None:
            self.add({"peak_memory_bytes": self.memory.end_run()})

    def add_run_figures(self, total: float, trace: float, faults: int) -> None:
        """The run's times and faults per iteration; on XLA its trace time and XLA's counters; then the process's
        memory, read once the run's output is gone."""
        iterations = self.iterations
        self.add({"total_time": total, "per_iter_time": total / iterations,
                  "minor_faults_per_iter": faults / iterations})
        if self.experiment.xla:
            self.add({"trace_total_time": trace, "trace_per_iter_time": trace / iterations})
            self.add(backends.xla_metrics(self.experiment))
        # the whole process's resident set after the run (no baseline): the dynamo harness's CPU memory figure
        self.add({"process_rss_bytes": device_memory.process_rss()})
        # the lifetime peak: memory's resets of the peak resident set also reset getrusage's figure
        self.add({"peak_rss_bytes": self.memory.lifetime_peak_rss() if self.memory is not None
                  else device_memory.process_peak_rss()})
