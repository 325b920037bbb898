"""One config in one process: load the model, prepare the backend, warm up, time, hand back one record.

Launched by the parent with --record-fd: the record (and phase markers before it, so the parent knows
where a crash or hang happened) go to that pipe as JSON lines, never mixed with the model's output.
Run by hand (no --record-fd), the record is appended to the results file through the same writer.
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import logging
import os
import signal
import threading
import time
from typing import Optional

from benchmarks.child import config_hooks, cpu_vec_isa, device_memory, diagnostics, gpu_telemetry, precise_timing, \
    torch_internals
from benchmarks.config import experiment_config, rerun_command
from benchmarks.config.process_env import PARENT_PID_VARIABLE, STACKS_SIGNAL, child_environment
from benchmarks.config.run_options import RunOptions
from benchmarks.features.allocator import child as allocator_child
from benchmarks.features.compile_options import child as compile_options_child
from benchmarks.features.cpu_profile import child as cpu_profile_child
from benchmarks.features.cuda_profile import child as cuda_profile_child
from benchmarks.plumbing import disk_writes, machine_facts, output_paths, torch_support, value_limits
from benchmarks.plumbing.cli_support import EXIT_USAGE, UsageError
from benchmarks.plumbing.cpu_affinity import pin_self
from benchmarks.results import accuracy_status, page_faults, record_check, records
from benchmarks.results.records import RecordStatus, VerificationCode
from benchmarks.suites import ModelSkipped, load_suite, suite_names

log = logging.getLogger("benchmarks.child.single_config")


class Channel:
    """The child's end of the hand-back: phase markers, then the record."""

    def __init__(self, fd):
        self.phase = "setup"
        self._stream = None
        if fd is not None:
            os.set_inheritable(fd, False)  # not passed on to the model's own subprocesses
            self._stream = os.fdopen(fd, "w", encoding="utf-8")

    def set_phase(self, phase: str) -> None:
        if phase == self.phase:
            return
        self.phase = phase
        log.debug("phase %s", phase)
        self._send({"phase": phase})

    def _send(self, message: dict) -> None:
        if self._stream is None:
            return
        try:
            self._stream.write(json.dumps(message, ensure_ascii=False) + "\n")
            self._stream.flush()
        except (BrokenPipeError, OSError):
            self._stream = None  # the parent is gone; the watchdog ends this process

    def send_write_failed(self, refused: dict) -> None:
        """The disk refused a write (disk_writes.describe_failure): the parent stops the sweep, blaming nothing."""
        self._send({"write_failed": refused})

    def send_record(self, record: dict) -> bool:
        if self._stream is None:
            return False
        self._send({"record": record})
        self._stream.close()
        self._stream = None
        return True


def die_with_parent() -> None:
    """If the parent dies (even by SIGKILL), take this child's whole process group down too."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    # The launcher names itself: a parent that died before this line (PDEATHSIG set too late, getppid()
    # already the reaper's) is caught at once instead of never.
    named = os.environ.get(PARENT_PID_VARIABLE, "")
    parent = int(named) if named.isdigit() else os.getppid()
    if os.getppid() != parent:
        os.killpg(os.getpgrp(), signal.SIGKILL)

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def classify(exc: BaseException) -> str:
    import torch

    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)):
        return RecordStatus.OOM
    return RecordStatus.ERROR


# What a CUDA error says when the process's context is lost: every later CUDA call fails too
CONTEXT_LOST = ("device-side assert triggered", "illegal memory access", "unspecified launch failure",
                "misaligned address", "illegal instruction")


def device_lost(exc: BaseException) -> bool:
    return any(words in str(exc) for words in CONTEXT_LOST)


def lost_context_error(experiment) -> Optional[BaseException]:
    """The error a lost CUDA context keeps giving, when a CUDA config's failure may have hidden it, else None. A
    kernel's illegal access is reported by the next call that checks, as that call's own failure (on an H100 with
    torch 2.11: cublasCreate's CUBLAS_STATUS_INTERNAL_ERROR); a synchronize then gives the cause."""
    if experiment.accelerator != "cuda" or experiment.xla:
        return None
    import torch

    if not torch.cuda.is_initialized():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - whatever it raises is the context's state
        return exc if device_lost(exc) else None
    return None


def failure_cause(exc: BaseException, lost: Optional[BaseException]) -> tuple:
    """(type name, message) for the record: the lost context's error first where it hid behind `exc`."""
    if lost is None or device_lost(exc):
        return type(exc).__name__, str(exc)
    return type(lost).__name__, f"{lost} (it surfaced as {type(exc).__name__}: {exc})"


def resolve_accelerator_model(experiment) -> str:
    if experiment.accelerator_model:
        return experiment.accelerator_model
    cuda_names = ()
    if experiment.accelerator == "cuda":
        import torch

        cuda_names = tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    return machine_facts.accelerator_model(experiment.accelerator, cuda_names)


def build_model(suite, model_config: dict, experiment, parsed_flags):
    """The suite's model for `experiment` on its plain accelerator, built under fixed seeds, cast to the
    experiment's precision, quantized with its TorchAO recipe if it has one."""
    from benchmarks.child import backends
    from benchmarks.features.precision import child as precision_child

    backends.seed_everything(experiment)
    device = backends.base_device(experiment)
    try:
        bm = suite.build(model_config, experiment, device, parsed_flags)
    except NotImplementedError as exc:
        raise ModelSkipped(str(exc) or f"{model_config['model_name']} does not implement {experiment.test}")
    precision_child.apply_cast(bm, experiment)  # bf16/fp16; before the recipe, which quantizes the cast weights
    if experiment.quantization:  # before the backend sees it; --verify's eager reference is quantized alike
        from benchmarks.features.quantization import child as quantization_child

        quantization_child.apply(bm, experiment.quantization, device)
    return bm


class ConfigRun:
    """One config's run in the child, a method per phase: `setup`, `load`, `compile`, `measure` (warm-up and timed
    runs, then their figures), `check`, and `settle` (the record's last keys), whatever happened before it. What
    only some configs do (--save-golden, --golden, --verify, --speedup=paired, --dynamic, export) joins the phases
    as hooks (child/config_hooks.py), as diagnostics join the timed runs. The parent is told where the run is before
    anything there can fail (channel.set_phase: setup, load, compile; measure's compile and run; the checks' reference
    and verify): a failure record, or a crash, names the phase it died in."""

    def __init__(self, options: RunOptions, model_config: dict, experiment, channel: Channel):
        self.options, self.model_config, self.channel = options, model_config, channel
        self.experiment = experiment  # as it is resolved: the record's `experiment` is written from it once (settle)
        self.record = records.config_record(model_config, experiment, options, machine_facts.collect())
        self.cache = compile_options_child.CompileCache(experiment)  # before torch is imported: Inductor reads it once
        self.hooks: list = []  # registered at the end of setup (config_hooks.for_config)
        self.suite = self.diag = self.memory = self.gpu = None
        self.bm = self.module = self.args = self.kwargs = self.step = None  # from load and compile on
        self.exported = None  # export: what the steps call instead of the module (config_hooks.Export)
        self.eager_step = None  # --speedup=paired: eager's step, timed beside the config's (features/speedup/child.py)

    def setup(self) -> bool:
        """The experiment as it will run (accelerator model, precision, training step), diagnostics, CUDA graphs, the
        hooks, the memory baseline; False when the config can't run here (its record says why)."""
        self.channel.set_phase("setup")
        from benchmarks.child import backends, measured_loop  # noqa: F401  (torch is imported in this phase)

        self.experiment = self.experiment.with_(accelerator_model=resolve_accelerator_model(self.experiment))
        problem = precise_timing.pure_wall_time_problem(self.experiment, self.options.timing)
        if problem:  # the parent drops such configs; reached anyway (by hand): a clear error, no traceback
            records.mark_failed(self.record, RecordStatus.ERROR, "PureWallTimeUnsupported", problem, "setup")
            return False
        model_config = self.model_config
        suite = self.suite = load_suite(model_config["suite_name"])
        if self.options.record_fd is None:  # by hand: resolved as the plan resolves a sweep's child's, given it so
            self.experiment, precision_reason = suite.resolve(model_config, self.experiment)
            if precision_reason:  # a sweep's parent adds it to its child's record (runner/result_records.py)
                self.record["precision_reason"] = precision_reason
        self.diag = diagnostics.Diagnostics(self.options, model_config, self.experiment, self.record)
        self.diag.setup()  # paths from the config as requested
        self.record.update(cuda_profile_child.apply(model_config, self.experiment))  # CUDA graphs, before anything compiles
        isa = cpu_vec_isa.probe_for_config(self.experiment, self.cache.machine_dir)  # the machine's: not compile_time
        if isa:
            self.record["diagnostics"]["cpu_vec_isa"] = isa
        if not self.options.diagnostics.no_roofline:  # the machine's ceilings (cached, else measured now: before any
            from benchmarks.child import ceilings  # model exists, never timed); it imports torch: only once setup runs

            self.record["environment"]["ceilings"] = ceilings.for_config(self.experiment)
        self.hooks = config_hooks.for_config(self.options, self.experiment)
        for hook in self.hooks:  # a golden entry saved (phase reference) before any model of the config is built
            hook.setup(self)
        self.memory = device_memory.PeakMemory(self.experiment)
        self.gpu = gpu_telemetry.for_config(self.experiment)  # CUDA configs: NVML's view of each timed run
        self.memory.mark_baseline()  # what the process holds before any model exists (the CPU rule's zero)
        return True

    def new_model(self, experiment):
        """The suite's model for `experiment`, as built (a golden entry is saved from it)."""
        return build_model(self.suite, self.model_config, experiment, self.options.parsed_flags)

    def build(self, experiment):
        """The suite's model for `experiment` as the hooks give it (the config's, --verify's eager ones)."""
        bm = self.new_model(experiment)
        for hook in self.hooks:
            bm = hook.built(bm)
        return bm

    def load(self) -> None:
        """The config's model, its batch size (the experiment's from here on), module and inputs on the device."""
        from benchmarks.child import backends

        self.channel.set_phase("load")
        bm = self.bm = self.build(self.experiment)
        if bm.generation is not None:  # --verify judges a generate run by its logits and tokens
            from benchmarks.child.accuracy import generation_verify

            self.hooks = generation_verify.replace_verify(self.hooks)
        self.experiment = self.experiment.with_(batch_size=bm.batch_size)
        if bm.info:
            self.record["model_info"] = bm.info
        device = backends.target_device(self.experiment)
        self.module = backends.module_on(bm, device)
        if callable(getattr(bm.loss_fn, "to", None)):  # a loss module holding targets moves with the model
            bm.loss_fn.to(device)
        self.args = backends.move(tuple(bm.example_inputs), device)
        self.kwargs = backends.move(dict(bm.example_kwargs), device)

    def compile(self) -> None:
        """The config's step; with a warm compile cache, the untimed cold compile that filled it first."""
        from benchmarks.child import backends

        self.channel.set_phase("compile")
        backends.seed_everything(self.experiment)
        for hook in self.hooks:
            hook.compile(self)
        self.step, fill_seconds = self.cache.warm_up(self.new_step, self.new_step())
        if fill_seconds is not None:  # the untimed cold compile that filled the warm cache
            self.record["compile_cache_fill_seconds"] = fill_seconds

    def new_step(self):
        """A step of the config, its inputs from diagnostics (--randomize-input) and the hooks (--dynamic); for a model
        run by generate, one generate call (child/generation.py)."""
        from benchmarks.child import measured_loop

        if self.bm.generation is not None:
            from benchmarks.child import generation

            return generation.GenerateStep(self.bm, self.experiment, self.module, self.kwargs)

        inputs = self.diag.make_inputs(self.args, self.kwargs)
        for hook in self.hooks:
            inputs = hook.step_inputs(self, inputs)
        return self.diag.guard(measured_loop.make_step(
            self.bm, self.experiment, self.module, self.args, self.kwargs, fullgraph=self.diag.fullgraph, inputs=inputs,
            full_output=self.options.diagnostics.collect_full_output, exported=self.exported))

    def example_step(self):
        """The config's step made again, on the example inputs (--verify's own check step, --deterministic's runs)."""
        from benchmarks.child import measured_loop

        return measured_loop.make_step(self.bm, self.experiment, self.module, self.args, self.kwargs,
                                       fullgraph=self.diag.fullgraph, exported=self.exported)

    def measure(self) -> None:
        """Warm-up and timed runs (measured_loop.measure: its phases compile, then run), then their figures."""
        from benchmarks.child import measured_loop

        if self.bm.generation is not None:
            return self.measure_generation()
        for hook in self.hooks:
            hook.before_timing(self)
        options = self.options
        self.record["metrics"] = measured_loop.measure(
            self.step, self.experiment, options.repeat, options.iterations_per_run, options.warmup,
            on_phase=self.channel.set_phase,
            timed=precise_timing.pure_wall_time_run if options.timing.pure_wall_time else None,
            around_repeat=self.diag.around_repeat, after_repeat=self.diag.after_repeat, memory=self.memory,
            eager=self.eager_step, gpu=self.gpu, profiled_repeat=self.diag.profiled_repeat, on_block=self.block_chosen)
        for hook in self.hooks:
            hook.after_timing(self)
        self.record_timings()

    def block_chosen(self, block, eager_block) -> None:
        """The calls per timed run, once the warm-up has found them (before the timed runs): the record's
        iterations_per_run (upstream's meaning: each run's iterations) and `timing_block` (how they were chosen);
        the diagnostics that divide by them or fill one input set per call are told."""
        self.record["iterations_per_run"] = block.iterations
        self.record["timing_block"] = block.to_record()
        if eager_block is not None:
            self.record["timing_block"]["eager"] = eager_block.to_record()
        self.diag.set_iterations(block.iterations)

    def measure_generation(self) -> None:
        """measure() for a model run by generate (child/generation.py): each timed run one generate call, its time to
        first token, decode figures and whole generate time; the record's `generation` says how it ran."""
        from benchmarks.child import generation

        for hook in self.hooks:
            hook.before_timing(self)
        self.record["iterations_per_run"] = 1
        self.record["metrics"], token_seconds = generation.measure(
            self.step, self.bm, self.experiment, self.options.repeat, self.options.warmup, self.channel.set_phase,
            self.memory, self.gpu)
        # the raw per-token times, nested (a metric's values are a list of numbers): one list per timed call
        self.record["generation"] = {**generation.facts(self.bm, self.experiment), "token_seconds": [
            [round(t, 9) for t in call] for call in token_seconds]}
        for hook in self.hooks:
            hook.after_timing(self)
        self.record_timings()

    def record_timings(self) -> None:
        """What the timed runs showed beside their times: memory, GPU telemetry, diagnostics, dynamo's statistics,
        CUDA graphs, throughput; and the warnings about how they were measured."""
        record, metrics, experiment = self.record, self.record["metrics"], self.experiment
        record["memory_kind"] = self.memory.kind
        if self.gpu is not None:
            record["gpu_telemetry"] = self.gpu.summary()
            add_warning(record, self.gpu.warning(metrics))
            self.gpu.close()
        add_warning(record, page_faults.heavy_faults_warning(metrics.get("minor_faults_per_iter"),
                                                             metrics.get("per_iter_time")))
        self.diag.finish(metrics)
        if experiment.dynamo:
            record["dynamo_stats"] = compile_options_child.dynamo_stats()
        if record.get("cudagraphs"):
            record["cudagraph_skips"] = cuda_profile_child.cudagraph_skips()
            if record["cudagraph_skips"]:
                add_warning(record, f"cudagraphs: Inductor ran {record['cudagraph_skips']} graph(s) without CUDA "
                                    "graphs (its log says why): their launches are timed one by one")
        profile = cuda_profile_child.describe(experiment, record)
        if profile is not None:
            record["environment"]["cuda_profile"] = profile
        if self.bm.info.get("flops"):  # FLOPs of one iteration (microbench): throughput per repeat
            metrics["tflops"] = precise_timing.tflops(self.bm.info["flops"], metrics["per_iter_time"])

    def count_work(self) -> None:
        """The record's `roofline`: the config's work counted by one eager iteration after the timed runs (never
        inside them), set against the machine's ceilings (child/work_count.py, docs/roofline.md)."""
        from benchmarks.child import work_count

        if self.options.diagnostics.no_roofline:
            return
        try:
            self.record["roofline"] = work_count.roofline(self)
        except Exception as exc:  # noqa: BLE001 - a count that fails costs the roofline, never the config's record
            log.warning("roofline not counted", exc_info=True)
            self.record["roofline"] = {"why_not": f"counting failed ({type(exc).__name__}: {str(exc)[:200]})"}

    def check(self) -> None:
        """After timing, which they never hide: the hooks' checks (their failures are statuses, not the config's).
        First a generate run's decode bandwidth, from the roofline counted after its timed runs."""
        self.add_decode_bandwidth()
        for hook in self.hooks:
            hook.check(self)

    def add_decode_bandwidth(self) -> None:
        """A generate run's decode bytes/s and its fraction of the bandwidth ceiling (results/decode_bandwidth.py),
        each run's, among its metrics: only where the record's roofline and ceilings give them."""
        from benchmarks.results import decode_bandwidth

        if self.bm is not None and self.bm.generation is not None:
            self.record["metrics"].update(decode_bandwidth.figures(self.record))

    def skipped(self, exc: ModelSkipped) -> None:
        log.info("skipped: %s", exc)
        records.mark_failed(self.record, RecordStatus.SKIP, "ModelSkipped", str(exc), self.channel.phase,
                            verification_code=VerificationCode.VERIFIER_SKIPPED)

    def failed(self, exc: Exception) -> None:
        """The config's failure, in the phase it happened in, and what the hooks can still do for its record."""
        log.exception("failed in phase %s", self.channel.phase)
        lost = None if device_lost(exc) else lost_context_error(self.experiment)
        kind, message = failure_cause(exc, lost)
        records.mark_failed(self.record, classify(exc), kind, message, self.channel.phase)
        if device_lost(lost or exc):  # nothing more can run on the device in this process: no eager reference
            add_warning(self.record, f"the process's CUDA context is lost ({self.record['error']['message']}): "
                                     "nothing more ran on the device")
            return
        for hook in self.hooks:
            hook.after_failure(self)

    def release_model(self) -> None:
        """Let the config's model, steps and inputs go (before eager's models are built after a failure)."""
        self.bm = self.module = self.step = self.args = self.kwargs = self.exported = self.eager_step = None

    def settle(self) -> dict:
        """The record's last keys: the experiment as it ran, the hooks' (--verify's judgement, the golden status), the
        accuracy, what this torch lacks; the diagnostics and the compile cache closed."""
        record = self.record
        record["experiment"] = self.experiment.to_dict()
        verdict = config_hooks.deciding([hook.finish(record) for hook in self.hooks])
        # the checks' judgement (--verify's, --deterministic's, ...), or not_checked, or the failure's
        if accuracy_status.settle(record, verdict.status if verdict else None) == getattr(verdict, "status", None) \
                and (verdict.message or verdict.reason):
            record.update(accuracy_message=verdict.message, accuracy_reason=verdict.reason)
        if self.diag is not None:
            self.diag.close()
        self.cache.close()
        absent = torch_internals.absent()  # features whose private torch API this torch moved: which, and why
        if absent:
            record["absent"] = absent
        return record


def run_config(options: RunOptions, model_config: dict, experiment, channel: Channel) -> dict:
    """Everything the child does for one config; always returns a record (it raises only when the disk is full)."""
    run = ConfigRun(options, model_config, experiment, channel)
    try:
        if run.setup():
            run.load()
            run.compile()
            run.measure()
            run.count_work()
            run.check()
    except ModelSkipped as exc:
        run.skipped(exc)
    except Exception as exc:  # any failure of the model or backend becomes a record
        if disk_writes.disk_full(exc):  # not the model's failure but the disk's: main says so, no record
            raise
        run.failed(exc)
    return run.settle()


def add_warning(record: dict, line) -> None:
    """A one-line warning about how the config was measured: the record's `warnings` and the child's log."""
    if line:
        log.warning("%s", line)
        record.setdefault("warnings", []).append(line)


def parse_single_config(options: RunOptions) -> tuple:
    """(model_config dict, ExperimentConfig) from --model-config and --experiment-config, or UsageError."""
    if (options.model_config is None) != (options.experiment_config is None):
        raise UsageError("--model-config and --experiment-config go together")
    try:  # held to the record's limits: a value no record could keep is refused here, not once it is written
        model = value_limits.checked_json(options.model_config)
    except ValueError as exc:
        raise UsageError(f"--model-config {exc}")
    try:
        experiment_data = value_limits.checked_json(options.experiment_config)
    except ValueError as exc:
        raise UsageError(f"--experiment-config {exc}")
    if not isinstance(model, dict) or not model.get("model_name"):
        raise UsageError('--model-config must be a JSON object with "model_name" (and "suite_name")')
    suite = model.setdefault("suite_name", options.suite_name)
    if suite not in suite_names():
        raise UsageError(f"--model-config names suite {suite!r}; known suites: {', '.join(suite_names())}")
    try:
        experiment = experiment_config.ExperimentConfig.from_dict(experiment_data)
    except experiment_config.ConfigError as exc:
        raise UsageError(f"--experiment-config: {exc}")
    return model, experiment


def environment_by_hand(options: RunOptions, model_config: dict, experiment) -> dict:
    """A config by hand: the environment a sweep's parent would compose for it (process_env.child_environment),
    after the checks that parent makes; this process restarted under it when its allocator policy needs a fresh
    start (it acts only from a process's start). UsageError when the config can't run by hand."""
    problem = (torch_support.environment_problem()  # the sweep's parent checked it for its children
               or compile_options_child.warm_start_problem(experiment))  # two processes, which a sweep starts
    if problem:
        raise UsageError(problem)
    wanted = child_environment(experiment, options, dict(os.environ), model_config)
    allocator_child.restart_under_policy(wanted)
    return wanted


def main(options: RunOptions) -> int:
    """One config in this process, from the flags (UsageError: bad --model-config/--experiment-config)."""
    model_config, experiment = parse_single_config(options)
    launched_by_parent = options.record_fd is not None
    # The config's environment: a sweep's child started in the one its parent composed for it (runner/sweep.py's
    # make_job); a config by hand composes the same for itself.
    wanted = dict(os.environ) if launched_by_parent else environment_by_hand(options, model_config, experiment)
    cpu_affinity = pin_self(options.noise)  # before any thread starts (--cpu-affinity; also by hand)
    numa = cpu_profile_child.bind_memory(experiment)  # --cpu-profile=dashboard: numactl's --membind, before the model
    if launched_by_parent:
        die_with_parent()
        faulthandler.register(STACKS_SIGNAL, all_threads=True)  # a timeout's last word, into its log (launcher)
    else:  # a hand-run config takes the environment the parent would compose (before torch is imported)
        for key, value in wanted.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
    channel = Channel(options.record_fd)
    try:
        record = run_config(options, model_config, experiment, channel)
    except Exception as exc:
        if not disk_writes.disk_full(exc):
            raise
        refused = disk_writes.describe_failure(exc, None)  # a write of its log has no path here: the parent's
        if launched_by_parent:
            channel.send_write_failed(refused)
            return EXIT_USAGE
        raise disk_writes.from_description({**refused, "path": refused["path"] or "this process's output"}) from None
    describe_environment(record, experiment, wanted, cpu_affinity, numa)
    if launched_by_parent:
        channel.send_record(record)
        return 0
    return append_by_hand(options, model_config, experiment, record)


def describe_environment(record: dict, experiment, wanted: dict, cpu_affinity, numa) -> None:
    """The record's environment as this process ran: its cores, its allocator and CPU profile against `wanted`
    (the environment the config composes), a warning for each that is not in force."""
    record["environment"]["cpu_affinity"] = cpu_affinity
    record["environment"]["allocator"] = allocator_child.describe(experiment.allocator, wanted)
    if not record["environment"]["allocator"]["applied"]:
        add_warning(record, f"allocator: the policy {experiment.allocator} is not in force: "
                            f"{record['environment']['allocator']['problem']}")
    profile = cpu_profile_child.describe(experiment, wanted, numa, record["environment"]["allocator"])
    if profile is not None:
        record["environment"]["cpu_profile"] = profile
        if profile["missing"]:
            add_warning(record, f"cpu profile {profile['name']}: not as the dashboard runs: "
                                + "; ".join(profile["missing"]))


def append_by_hand(options: RunOptions, model_config: dict, experiment, record: dict) -> int:
    """A config by hand: its record (with the command that reruns it) appended to the results file, one line
    said; the exit status (1: it failed, or its accuracy check did)."""
    record["rerun"] = rerun_command.rerun_text(options, model_config, experiment)  # a sweep's parent writes its own
    path = output_paths.under(options.output_dirname, options.output_basename)
    with records.ResultsWriter(path) as writer:
        writer.append(record_check.written(record, log))  # the writer's check, as a sweep's parent does
    metrics = record["metrics"]
    if record["status"] == RecordStatus.OK:
        per_iter = sorted(metrics["per_iter_time"])[len(metrics["per_iter_time"]) // 2]
        verdict = record["accuracy"]
        if accuracy_status.failed(verdict):  # ran, but its check failed: the sweep's rule (runner/progress.not_passing)
            log.error("%s: median %.3f ms per iteration; record appended to %s", verdict, per_iter * 1e3, path)
            return 1
        log.info("ok: median %.3f ms per iteration; record appended to %s", per_iter * 1e3, path)
        return 0
    log.error("%s in phase %s: %s; record appended to %s", record["status"], record["error"]["phase"],
              record["error"]["message"], path)
    return 0 if record["status"] == RecordStatus.SKIP else 1
