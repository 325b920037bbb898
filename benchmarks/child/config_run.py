"""One config's run in the child, a phase at a time (ConfigRun), and the model as the suite builds it for the
config (build_model). child/single_config.py starts it and hands its record back; the timed phase's work is in
child/timed_phase.py, a failure's status and cause in child/config_failures.py."""

from __future__ import annotations

import logging

from benchmarks.child import config_failures, config_hooks, cpu_vec_isa, device_memory, diagnostics, feature_methods, \
    gpu_telemetry, precise_timing, timed_phase, torch_internals
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing import disk_writes, machine_facts
from benchmarks.results import accuracy_status, records
from benchmarks.results.records import RecordStatus, VerificationCode
from benchmarks.suites import ModelSkipped, load_suite

log = logging.getLogger("benchmarks.child.config_run")


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

    backends.seed_everything(experiment)
    device = backends.base_device(experiment)
    try:
        bm = suite.build(model_config, experiment, device, parsed_flags)
    except NotImplementedError as exc:
        raise ModelSkipped(str(exc) or f"{model_config['model_name']} does not implement {experiment.test}")
    feature_methods.provided("model_cast")(bm, experiment)  # bf16/fp16; before the recipe, which quantizes the cast
    feature_methods.provided("model_transform")(bm, experiment, device)  # weights; before the backend sees it
    return bm


class ConfigRun:
    """One config's run in the child, a method per phase: `setup`, `load`, `compile`, `measure` (warm-up and timed
    runs, then their figures), `check`, and `settle` (the record's last keys), whatever happened before it. What
    only some configs do (--save-golden, --golden, --verify, --speedup=paired, --dynamic, export) joins the phases
    as hooks (child/config_hooks.py), as diagnostics join the timed runs. The parent is told where the run is before
    anything there can fail (channel.set_phase: setup, load, compile; measure's compile and run; the checks' reference
    and verify): a failure record, or a crash, names the phase it died in."""

    def __init__(self, options: RunOptions, model_config: dict, experiment, channel):
        self.options, self.model_config, self.channel = options, model_config, channel
        self.experiment = experiment  # as it is resolved: the record's `experiment` is written from it once (settle)
        self.record = records.config_record(model_config, experiment, options, machine_facts.collect())
        # before torch is imported: Inductor reads its cache variables once
        self.cache = feature_methods.provided("compile_cache")(experiment)
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
        # CUDA graphs, before anything compiles
        self.record.update(feature_methods.provided("before_build")(model_config, self.experiment))
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
        from benchmarks.suites import tensor_trees

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
        self.args = tensor_trees.move(tuple(bm.example_inputs), device)
        self.kwargs = tensor_trees.move(dict(bm.example_kwargs), device)

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
        """Warm-up and timed runs, then their figures (timed_phase.measure)."""
        timed_phase.measure(self)

    def count_work(self) -> None:
        """The record's `roofline`, counted after the timed runs (timed_phase.count_work)."""
        timed_phase.count_work(self)

    def check(self) -> None:
        """After timing, which they never hide: the hooks' checks (their failures are statuses, not the config's).
        First a generate run's decode bandwidth, from the roofline counted after its timed runs."""
        timed_phase.add_decode_bandwidth(self)
        for hook in self.hooks:
            hook.check(self)

    def skipped(self, exc: ModelSkipped) -> None:
        log.info("skipped: %s", exc)
        records.mark_failed(self.record, RecordStatus.SKIP, "ModelSkipped", str(exc), self.channel.phase,
                            verification_code=VerificationCode.VERIFIER_SKIPPED)

    def failed(self, exc: Exception) -> None:
        """The config's failure, in the phase it happened in, and what the hooks can still do for its record."""
        log.exception("failed in phase %s", self.channel.phase)
        lost = None if config_failures.device_lost(exc) else config_failures.lost_context_error(self.experiment)
        kind, message = config_failures.failure_cause(exc, lost)
        records.mark_failed(self.record, config_failures.classify(exc), kind, message, self.channel.phase)
        if config_failures.device_lost(lost or exc):  # nothing more can run on the device in this process: no eager reference
            timed_phase.add_warning(self.record, f"the process's CUDA context is lost ({self.record['error']['message']}): "
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


def run_config(options: RunOptions, model_config: dict, experiment, channel) -> dict:
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
