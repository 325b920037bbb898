"""The iteration step (eval or train) and the measured loop: warm-up, then timed runs (docs/architecture.md, "Measurement").
Child only: imports torch."""

from __future__ import annotations

import collections
import gc
import resource
import time
from typing import Callable, Optional

import torch

from benchmarks.child import backends, device_memory, precision_cast


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
    optimizer = harness_optimizer(module, experiment)

    @torch._disable_dynamo(recursive=True)
    def zero_grad():
        (optimizer or module).zero_grad(True)

    def harness_step(a, k):
        # torch's clone_inputs, called once as the harness calls it (one graph break, its reason alike)
        cloned = clone_inputs([*a, *k.values()])
        a, k = tuple(cloned[:len(a)]), dict(zip(k, cloned[len(a):]))
        zero_grad()
        with precision_cast.autocast(experiment):
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
        grads = {name: p.grad for name, p in module.named_parameters() if p.grad is not None}
        return {"loss": loss.detach(), "output": output, "grads": grads}

    train_step.optimizer = optimizer  # --verify and --golden put its state back before a check
    train_step.grad_scaler = None
    return train_step


def make_step(bm, experiment, module, args: tuple, kwargs: dict, fullgraph: bool = False,
              inputs: Optional[Callable[[], tuple]] = None, full_output: bool = False,
              exported: Optional[Callable] = None) -> Callable:
    """A zero-argument callable that runs one iteration of the config: eval forward, or a train step: the
    harness's (harness_train_step) or ours (forward + loss under the backend; backward and optimizer step after
    it). Returns the output (eval) or the loss (train; with `full_output` a dict of loss, output and gradients
    by parameter name).
    `inputs`, if given, returns each iteration's (args, kwargs) instead of the fixed ones (--randomize-input,
    --dynamic). `exported`, if given, is run instead of the compiled module (eval only: child/exporting.py)."""
    if experiment.test == "eval":
        module.eval()

        def forward(*a, **k):
            with precision_cast.autocast(experiment):
                return module(*a, **k)

        compiled = exported or backends.compile_fn(forward, experiment, fullgraph)
        grad_mode = torch.enable_grad if bm.eval_needs_grad else torch.no_grad

        def eval_step():
            a, k = inputs() if inputs is not None else (args, kwargs)
            with grad_mode():
                return compiled(*a, **k)

        return eval_step

    if experiment.harness_train_step:
        return harness_train_step(bm, experiment, module, args, kwargs, fullgraph, inputs, full_output)
    module.train()
    loss_fn = bm.loss_fn or reduce_to_scalar

    def forward_loss(*a, **k):
        with precision_cast.autocast(experiment):
            output = module(*a, **k)
            return (loss_fn(output), output) if full_output else loss_fn(output)

    compiled = backends.compile_fn(forward_loss, experiment, fullgraph)
    optimizer = (bm.optimizer_fn or default_optimizer)(module.parameters())
    scaler = precision_cast.grad_scaler(experiment)  # float16 autocast: the loss scaled, the step unscaled

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
            grads = {name: p.grad for name, p in module.named_parameters() if p.grad is not None}
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


def minor_faults() -> int:
    """Minor page faults of this process so far (every thread): a page first touched, or touched again after the
    allocator gave it back to the system (mmap/munmap, a trimmed heap)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timed_run(step: Callable, experiment, iterations: int, hooks=()) -> tuple:
    """One run of `iterations` iterations, closed by the backend's sync. Returns
    (total seconds, seconds spent in the Python calls (the trace time for lazy tensors), last output)."""
    backends.sync(experiment)
    backends.wait(experiment)
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


def measure(step: Callable, experiment, repeat: int, iterations: int, warmup: int,
            on_phase: Optional[Callable[[str], None]] = None, around_repeat=None, timed=None,
            after_repeat=None, memory=None, eager: Optional[Callable] = None, gpu=None) -> dict:
    """Warm-up runs (metrics.warmup_time; the first compiles), then `repeat` timed runs; a full garbage collection
    before them.

    `eager`, if given (--speedup=paired: eager's step on the same module and inputs), is warmed up first
    (metrics.eager_warmup_time, phase `reference`: a failure there is eager's), then timed just before each timed
    run of the backend, as the dynamo harness alternates them (metrics.eager_total_time, eager_per_iter_time).

    `around_repeat(index)`, if given, returns a context manager wrapping each timed run (profilers).
    `after_repeat(index, last_output)`, if given, is called after each timed run, outside it (--save-output).
    `timed`, if given, replaces timed_run (same contract) for the timed runs (--pure-wall-time).
    `memory`, if given (a device_memory.PeakMemory), gives each timed run's peak: metrics.peak_memory_bytes.
    Each timed run also gives the process's resident set after it (metrics.process_rss_bytes).
    Each timed run's minor page faults (getrusage, the whole process) per iteration: metrics.minor_faults_per_iter.
    `gpu`, if given (a gpu_telemetry.GpuTelemetry), gives each timed run's GPU clock, power, temperature and
    throttled seconds (metrics.gpu_*), read before and after the run.
    """
    timed = timed or timed_run
    on_phase = on_phase or (lambda phase: None)
    metrics = collections.defaultdict(list)
    gc.collect()  # as the dynamo harness does before its warm-up: what building the model left is not collected later
    if eager is not None:
        on_phase("reference")
        for _ in range(warmup):
            metrics["eager_warmup_time"].append(timed_run(eager, experiment, iterations)[0])
    on_phase("compile")
    for index in range(warmup):
        total, _, _ = timed_run(step, experiment, iterations)
        metrics["warmup_time"].append(total)
        if index == 0:
            on_phase("run")
    on_phase("run")
    for index in range(repeat):
        if eager is not None:  # the pair's first half; its output is dropped before the backend's run
            eager_total = timed(eager, experiment, iterations)[0]
            metrics["eager_total_time"].append(eager_total)
            metrics["eager_per_iter_time"].append(eager_total / iterations)
        backends.reset_xla_metrics(experiment)
        if memory is not None:
            memory.start_run()
        if gpu is not None:
            gpu.start_run()
        if around_repeat is None:
            faults = minor_faults()
            total, trace, output = timed(step, experiment, iterations)
            faults = minor_faults() - faults
        else:
            with around_repeat(index):
                faults = minor_faults()
                total, trace, output = timed(step, experiment, iterations)
                faults = minor_faults() - faults
        if gpu is not None:
            for name, value in gpu.end_run().items():
                metrics[name].append(value)
        if memory is not None:
            metrics["peak_memory_bytes"].append(memory.end_run())
        if after_repeat is not None:
            after_repeat(index, output)
        del output
        metrics["total_time"].append(total)
        metrics["per_iter_time"].append(total / iterations)
        metrics["minor_faults_per_iter"].append(faults / iterations)
        if experiment.xla:
            metrics["trace_total_time"].append(trace)
            metrics["trace_per_iter_time"].append(trace / iterations)
            for name, value in backends.xla_metrics(experiment).items():
                metrics[name].append(value)
        # the whole process's resident set after the run (no baseline): the dynamo harness's CPU memory figure
        metrics["process_rss_bytes"].append(device_memory.process_rss())
        # the lifetime peak: memory's resets of the peak resident set also reset getrusage's figure
        metrics["peak_rss_bytes"].append(memory.lifetime_peak_rss() if memory is not None
                                         else device_memory.process_peak_rss())
    return dict(metrics)
