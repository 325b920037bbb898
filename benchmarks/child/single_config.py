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

from benchmarks.child import allocator, compile_settings, cpu_profile, cuda_setup, device_memory, diagnostics, \
    golden, gpu_telemetry, precise_timing, torch_internals, verify
from benchmarks.common import accuracy_status, experiment_config, machine_facts, output_paths, page_faults, \
    disk_writes, paired_speedup, records, torch_support
from benchmarks.common.records import RecordStatus, VerificationCode
from benchmarks.common.cli_support import EXIT_USAGE, UsageError
from benchmarks.common.process_env import PARENT_PID_VARIABLE, STACKS_SIGNAL, child_environment
from benchmarks.common.cpu_affinity import pin_self
from benchmarks.common.run_options import RunOptions
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


def resolve_accelerator_model(experiment) -> str:
    if experiment.accelerator_model:
        return experiment.accelerator_model
    cuda_names = ()
    if experiment.accelerator == "cuda":
        import torch

        cuda_names = tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    return machine_facts.accelerator_model(experiment.accelerator, cuda_names)


def build_model(suite, model_config: dict, experiment, suite_flags):
    """The suite's model for `experiment` on its plain accelerator, built under fixed seeds, cast to the
    experiment's precision, quantized with its TorchAO recipe if it has one."""
    from benchmarks.child import backends, precision

    backends.seed_everything(experiment)
    device = backends.base_device(experiment)
    try:
        bm = suite.build(model_config, experiment, device, suite_flags)
    except NotImplementedError as exc:
        raise ModelSkipped(str(exc) or f"{model_config['model_name']} does not implement {experiment.test}")
    precision.apply_cast(bm, experiment)  # bf16/fp16; before the recipe, which quantizes the cast weights
    if experiment.quantization:  # before the backend sees it; --verify's eager reference is quantized alike
        from benchmarks.child import quantize

        quantize.apply(bm, experiment.quantization, device)
    return bm


def run_config(options: RunOptions, model_config: dict, experiment, channel: Channel) -> dict:
    """Everything the child does for one config; always returns a record (never raises)."""
    record = records.config_record(model_config, experiment, options, machine_facts.collect())
    verifier = None
    checker = None
    diag = None
    cache = compile_settings.CompileCache(experiment)  # before torch is imported: Inductor reads it once
    try:
        channel.set_phase("setup")
        from benchmarks.child import backends, measured_loop

        accelerator_model = resolve_accelerator_model(experiment)
        experiment = experiment.with_(accelerator_model=accelerator_model)
        record["experiment"] = experiment.to_dict()
        problem = precise_timing.pure_wall_time_problem(experiment, options.timing)
        if problem:  # the parent drops such configs; reached anyway (by hand): a clear error, no traceback
            records.mark_failed(record, RecordStatus.ERROR, "PureWallTimeUnsupported", problem, "setup")
            accuracy_status.settle(record)
            return record
        suite = load_suite(model_config["suite_name"])
        # The precision and training step that run (the plan resolved them, and the parent adds the precision's
        # reason; a config by hand may leave them to the suite, and then the child says why).
        precision_reason = suite.precision_reason(model_config, experiment)
        if precision_reason:
            record["precision_reason"] = precision_reason
        experiment = experiment.with_(precision=suite.precision_for(model_config, experiment),
                                      train_step=suite.train_step_for(model_config, experiment))
        record["experiment"] = experiment.to_dict()
        diag = diagnostics.Diagnostics(options, model_config, experiment, record)  # paths from the requested config
        diag.setup()
        record.update(cuda_setup.apply(model_config, experiment))  # CUDA graphs, before anything compiles
        if options.golden.save_dir:  # the eager result stored first, from its own model (freed after)
            channel.set_phase("reference")  # eager runs: a crash here is eager's (accuracy_status.derive)
            record["golden"] = golden.save(options.golden.save_dir, model_config, experiment,
                                           lambda exp: build_model(suite, model_config, exp, options.suite_flags))
        if options.golden.check_dir:  # every model built below starts from the entry's weights and inputs
            checker = golden.GoldenCheck(options.golden.check_dir, model_config, experiment, options.golden.atol,
                                         options.golden.rtol)

        def build(exp):
            bm = build_model(suite, model_config, exp, options.suite_flags)
            return checker.apply(bm) if checker else bm

        memory = device_memory.PeakMemory(experiment)
        gpu = gpu_telemetry.for_config(experiment)  # CUDA configs: NVML's view of each timed run
        memory.mark_baseline()  # what the process holds before any model exists (the CPU rule's zero)
        if options.verify.enabled:  # its eager references run after timing: nothing of them is in our figures
            verifier = verify.Verifier(options.verify, build, channel.set_phase, suite=model_config["suite_name"],
                                       model=model_config["model_name"])

        channel.set_phase("load")
        bm = build(experiment)
        experiment = experiment.with_(batch_size=bm.batch_size)
        record["experiment"] = experiment.to_dict()
        if bm.info:
            record["model_info"] = bm.info
        device = backends.target_device(experiment)
        module = backends.module_on(bm, device)
        if callable(getattr(bm.loss_fn, "to", None)):  # a loss module holding targets moves with the model
            bm.loss_fn.to(device)
        args = backends.move(tuple(bm.example_inputs), device)
        kwargs = backends.move(dict(bm.example_kwargs), device)

        channel.set_phase("compile")
        backends.seed_everything(experiment)
        exported = None
        if experiment.dynamo in experiment_config.EXPORT_BACKENDS:
            from benchmarks.child import exporting

            exported = exporting.prepare(experiment, module, args, kwargs, diag.files, record)
        sources = []  # each step's input source (None: the examples); the last is the timed step's

        def new_step():
            inputs = diag.make_inputs(args, kwargs)
            if experiment.dynamic != experiment_config.DEFAULT_DYNAMIC:
                from benchmarks.child import dynamic_shapes

                inputs = dynamic_shapes.VaryingBatch(args, kwargs, bm.batch_size, experiment.dynamic == "batch")
            sources.append(inputs)
            return diag.guard(measured_loop.make_step(bm, experiment, module, args, kwargs, fullgraph=diag.fullgraph,
                                                      inputs=inputs, full_output=options.diagnostics.collect_full_output,
                                                      exported=exported))

        step, fill_seconds = cache.warm_up(new_step, new_step())
        if fill_seconds is not None:  # the untimed cold compile that filled the warm cache
            record["compile_cache_fill_seconds"] = fill_seconds
        varying = sources[-1] if experiment.dynamic != experiment_config.DEFAULT_DYNAMIC else None
        if verifier:
            verifier.before_timing(experiment, module, step)
            memory.leave_out(verifier.kept_bytes())  # its references and copies are not the config's memory
        if checker:
            checker.before_timing(experiment, step)
        eager_step = None
        if experiment.speedup == paired_speedup.PAIRED:  # eager on the same module and inputs, the example ones
            eager_step = measured_loop.make_step(bm, experiment.with_(dynamo=None), module, args, kwargs)
        record["metrics"] = measured_loop.measure(
            step, experiment, options.repeat, options.iterations_per_run, options.warmup, on_phase=channel.set_phase,
            timed=precise_timing.pure_wall_time_run if options.timing.pure_wall_time else None,
            around_repeat=diag.around_repeat, after_repeat=diag.after_repeat, memory=memory, eager=eager_step,
            gpu=gpu,
        )
        if eager_step is not None:
            record["paired_speedup"] = paired_speedup.summarize(record["metrics"]["eager_per_iter_time"],
                                                                record["metrics"]["per_iter_time"])
        record["memory_kind"] = memory.kind
        if gpu is not None:
            record["gpu_telemetry"] = gpu.summary()
            add_warning(record, gpu.warning(record["metrics"]))
            gpu.close()
        add_warning(record, page_faults.heavy_faults_warning(record["metrics"].get("minor_faults_per_iter"),
                                                             record["metrics"].get("per_iter_time")))
        diag.finish(record["metrics"])
        if experiment.dynamo:
            record["dynamo_stats"] = compile_settings.dynamo_stats()
        if record.get("cudagraphs"):
            record["cudagraph_skips"] = cuda_setup.cudagraph_skips()
            if record["cudagraph_skips"]:
                add_warning(record, f"cudagraphs: Inductor ran {record['cudagraph_skips']} graph(s) without CUDA "
                                    "graphs (its log says why): their launches are timed one by one")
        profile = cuda_setup.describe(experiment, record)
        if profile is not None:
            record["environment"]["cuda_profile"] = profile
        if varying is not None:
            record["dynamic_shapes"] = varying.summary()
            varying.stop()  # --verify checks at the example batch
        if bm.info.get("flops"):  # FLOPs of one iteration (microbench): throughput per repeat
            record["metrics"]["tflops"] = precise_timing.tflops(bm.info["flops"], record["metrics"]["per_iter_time"])
        if verifier:  # after timing, which it never hides: its failures are verification codes
            verifier.compute_reference(experiment)
            verifier.check(experiment, module, step, fresh_step=lambda: measured_loop.make_step(
                bm, experiment, module, args, kwargs, fullgraph=diag.fullgraph))
        if checker:  # likewise: its failures are the record's golden status
            channel.set_phase("verify")
            checker.check(experiment, module, step)
    except ModelSkipped as exc:
        log.info("skipped: %s", exc)
        records.mark_failed(record, RecordStatus.SKIP, "ModelSkipped", str(exc), channel.phase,
                            verification_code=VerificationCode.VERIFIER_SKIPPED)
    except Exception as exc:  # any failure of the model or backend becomes a record
        if disk_writes.disk_full(exc):  # not the model's failure but the disk's: main says so, no record
            raise
        log.exception("failed in phase %s", channel.phase)
        records.mark_failed(record, classify(exc), type(exc).__name__, str(exc), channel.phase)
        if device_lost(exc):  # nothing more can run on the device in this process: no eager reference
            add_warning(record, f"the process's CUDA context is lost ({record['error']['message']}): "
                                "nothing more ran on the device")
        elif verifier is not None and not verifier.referenced:
            # eager's own failure or disagreement still comes first in the accuracy status (the harness runs
            # eager first); the config's model is let go before eager's are built
            bm = module = step = args = kwargs = exported = sources = None  # noqa: F841
            verifier.compute_reference(experiment)
    judged = verifier.finish(record) if verifier is not None else None
    if checker is not None:
        checker.finish(record)
    accuracy_status.settle(record, judged)  # the verifier's judgement, or not_checked, or the failure's
    if diag is not None:
        diag.close()
    cache.close()
    absent = torch_internals.absent()  # features whose private torch API this torch moved: which, and why
    if absent:
        record["absent"] = absent
    return record


def add_warning(record: dict, line) -> None:
    """A one-line warning about how the config was measured: the record's `warnings` and the child's log."""
    if line:
        log.warning("%s", line)
        record.setdefault("warnings", []).append(line)


def parse_single_config(options: RunOptions) -> tuple:
    """(model_config dict, ExperimentConfig) from --model-config and --experiment-config, or UsageError."""
    if (options.model_config is None) != (options.experiment_config is None):
        raise UsageError("--model-config and --experiment-config go together")
    try:
        model = json.loads(options.model_config)
    except ValueError as exc:
        raise UsageError(f"--model-config is not valid JSON: {exc}")
    try:
        experiment_data = json.loads(options.experiment_config)
    except ValueError as exc:
        raise UsageError(f"--experiment-config is not valid JSON: {exc}")
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


def main(options: RunOptions) -> int:
    """One config in this process, from the flags (UsageError: bad --model-config/--experiment-config)."""
    model_config, experiment = parse_single_config(options)
    launched_by_parent = options.record_fd is not None
    wanted = child_environment(experiment, options, dict(os.environ), model_config)
    if not launched_by_parent:  # a config by hand: its allocator policy acts only from a process's start
        problem = torch_support.environment_problem()  # the sweep's parent checked it for its children
        if problem:
            raise UsageError(problem)
        allocator.restart_under_policy(wanted)
    cpu_affinity = pin_self(options.noise)  # before any thread starts (--cpu-affinity; also by hand)
    numa = cpu_profile.bind_memory(experiment)  # --cpu-profile=dashboard: numactl's --membind, before the model
    if launched_by_parent:
        die_with_parent()
        faulthandler.register(STACKS_SIGNAL, all_threads=True)  # a timeout's last word, into its log (launcher)
    # A hand-run config gets the same environment the parent would compose (before torch is imported).
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
    record["environment"]["cpu_affinity"] = cpu_affinity
    record["environment"]["allocator"] = allocator.describe(experiment.allocator, wanted)
    if not record["environment"]["allocator"]["applied"]:
        add_warning(record, f"allocator: the policy {experiment.allocator} is not in force: "
                            f"{record['environment']['allocator']['problem']}")
    profile = cpu_profile.describe(experiment, wanted, numa, record["environment"]["allocator"])
    if profile is not None:
        record["environment"]["cpu_profile"] = profile
        if profile["missing"]:
            add_warning(record, f"cpu profile {profile['name']}: not as the dashboard runs: "
                                + "; ".join(profile["missing"]))
    if launched_by_parent:
        channel.send_record(record)
        return 0
    path = output_paths.under(options.output_dirname, options.output_basename)
    with records.ResultsWriter(path) as writer:
        writer.append(record)
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
