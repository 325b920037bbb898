"""A config's timed phase and what follows it (child/config_run.py's ConfigRun calls these with itself): the
warm-up and timed runs (a forward's through measured_loop, a generate call's through generation), the figures
recorded beside their times, the roofline's work count and a generate run's decode bandwidth."""

from __future__ import annotations

import functools
import logging

from benchmarks.child import feature_methods, precise_timing
from benchmarks.results import page_faults

log = logging.getLogger("benchmarks.child.timed_phase")


def measure(run) -> None:
    """Warm-up and timed runs (measured_loop.measure: its phases compile, then run), then their figures."""
    from benchmarks.child import measured_loop

    if run.bm.generation is not None:
        return measure_generation(run)
    for hook in run.hooks:
        hook.before_timing(run)
    options = run.options
    run.record["metrics"] = measured_loop.measure(
        run.step, run.experiment, options.repeat, options.iterations_per_run, options.warmup,
        on_phase=run.channel.set_phase,
        timed=precise_timing.pure_wall_time_run if options.timing.pure_wall_time else None,
        around_repeat=run.diag.around_repeat, after_repeat=run.diag.after_repeat, memory=run.memory,
        eager=run.eager_step, gpu=run.gpu, profiled_repeat=run.diag.profiled_repeat, on_block=functools.partial(block_chosen, run))
    for hook in run.hooks:
        hook.after_timing(run)
    record_timings(run)


def block_chosen(run, block, eager_block) -> None:
    """The calls per timed run, once the warm-up has found them (before the timed runs): the record's
    iterations_per_run (upstream's meaning: each run's iterations) and `timing_block` (how they were chosen);
    the diagnostics that divide by them or fill one input set per call are told."""
    run.record["iterations_per_run"] = block.iterations
    run.record["timing_block"] = block.to_record()
    if eager_block is not None:
        run.record["timing_block"]["eager"] = eager_block.to_record()
    run.diag.set_iterations(block.iterations)


def measure_generation(run) -> None:
    """measure() for a model run by generate (child/generation.py): each timed run one generate call, its time to
    first token, decode figures and whole generate time; the record's `generation` says how it ran."""
    from benchmarks.child import generation

    for hook in run.hooks:
        hook.before_timing(run)
    run.record["iterations_per_run"] = 1
    run.record["metrics"], token_seconds = generation.measure(
        run.step, run.bm, run.experiment, run.options.repeat, run.options.warmup, run.channel.set_phase,
        run.memory, run.gpu)
    # the raw per-token times, nested (a metric's values are a list of numbers): one list per timed call
    run.record["generation"] = {**generation.facts(run.bm, run.experiment), "token_seconds": [
        [round(t, 9) for t in call] for call in token_seconds]}
    for hook in run.hooks:
        hook.after_timing(run)
    record_timings(run)


def record_timings(run) -> None:
    """What the timed runs showed beside their times: memory, GPU telemetry, diagnostics, dynamo's statistics,
    CUDA graphs, throughput; and the warnings about how they were measured."""
    record, metrics, experiment = run.record, run.record["metrics"], run.experiment
    record["memory_kind"] = run.memory.kind
    if run.gpu is not None:
        record["gpu_telemetry"] = run.gpu.summary()
        add_warning(record, run.gpu.warning(metrics))
        run.gpu.close()
    add_warning(record, page_faults.heavy_faults_warning(metrics.get("minor_faults_per_iter"),
                                                         metrics.get("per_iter_time")))
    run.diag.finish(metrics)
    if experiment.dynamo:
        record["dynamo_stats"] = feature_methods.provided("dynamo_stats")()
    if record.get("cudagraphs"):
        record["cudagraph_skips"] = feature_methods.provided("cudagraph_skips")()
        if record["cudagraph_skips"]:
            add_warning(record, f"cudagraphs: Inductor ran {record['cudagraph_skips']} graph(s) without CUDA "
                                "graphs (its log says why): their launches are timed one by one")
    profile = feature_methods.provided("cuda_profile_facts")(experiment, record)
    if profile is not None:
        record["environment"]["cuda_profile"] = profile
    if run.bm.info.get("flops"):  # FLOPs of one iteration (microbench): throughput per repeat
        metrics["tflops"] = precise_timing.tflops(run.bm.info["flops"], metrics["per_iter_time"])


def count_work(run) -> None:
    """The record's `roofline`: the config's work counted by one eager iteration after the timed runs (never
    inside them), set against the machine's ceilings (child/work_count.py, docs/roofline.md)."""
    from benchmarks.child import work_count

    if run.options.diagnostics.no_roofline:
        return
    try:
        run.record["roofline"] = work_count.roofline(run)
    except Exception as exc:  # noqa: BLE001 - a count that fails costs the roofline, never the config's record
        log.warning("roofline not counted", exc_info=True)
        run.record["roofline"] = {"why_not": f"counting failed ({type(exc).__name__}: {str(exc)[:200]})"}


def add_decode_bandwidth(run) -> None:
    """A generate run's decode bytes/s and its fraction of the bandwidth ceiling (results/decode_bandwidth.py),
    each run's, among its metrics: only where the record's roofline and ceilings give them."""
    from benchmarks.results import decode_bandwidth

    if run.bm is not None and run.bm.generation is not None:
        run.record["metrics"].update(decode_bandwidth.figures(run.record))


def add_warning(record: dict, line) -> None:
    """A one-line warning about how the config was measured: the record's `warnings` and the child's log."""
    if line:
        log.warning("%s", line)
        record.setdefault("warnings", []).append(line)
