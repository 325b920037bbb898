"""The measured loop's order of operations (child/measured_loop.measure): a full garbage collection, eager's
warm-up, the config's warm-up with its phase markers, then per timed run eager's half of the pair, the telemetry
started, around_repeat's context around the config's timed run, the telemetry ended in reverse order, after_repeat,
and the run's figures with its output already released; then the profiled runs, each inside the profilers' context,
after every timed run (no profiler is active while the config is timed). A real eager step of a tiny module on the CPU; the
telemetry and the callbacks are the real objects, each call written down in a trail as it happens."""

import contextlib
import gc
import weakref

import pytest
import torch

from benchmarks.child import device_memory, gpu_telemetry, measured_loop
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.suites import BenchmarkModel


class Trailed:
    """start_run and end_run written in the trail (`<what> start`, `<what> end`), then done as the real class does."""

    what = ""

    def start_run(self):
        self.trail.append(f"{self.what} start")
        super().start_run()

    def end_run(self, **counts):  # the GPU's: the run's iterations, which divide its energy
        self.trail.append(f"{self.what} end")
        return super().end_run(**counts)


class TrailedMemory(Trailed, device_memory.PeakMemory):
    what = "memory"

    def __init__(self, experiment, trail):
        super().__init__(experiment)
        self.trail = trail


class TrailedGpu(Trailed, gpu_telemetry.GpuTelemetry):
    what = "gpu"

    def __init__(self, trail):
        super().__init__(absent="no GPU on this machine")
        self.trail = trail


@pytest.fixture
def trail(monkeypatch):
    """The trail, with every full collection written in it (automatic ones off while the loop runs), and the
    resident-set reading after each timed run saying whether that run's output was still alive."""
    trail, outputs = [], []

    def collecting(phase, info):
        if phase == "start" and info["generation"] == 2:
            trail.append("gc")

    real_rss = device_memory.process_rss

    def process_rss():
        trail.append("rss, output alive" if any(ref() is not None for ref in outputs) else "rss")
        return real_rss()

    monkeypatch.setattr(device_memory, "process_rss", process_rss)
    gc.callbacks.append(collecting)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield trail, outputs
    finally:
        gc.callbacks.remove(collecting)
        if was_enabled:
            gc.enable()


def traced_steps(trail):
    experiment = ExperimentConfig("cpu", None, None, "eval")
    bm = BenchmarkModel(module=torch.nn.Linear(4, 4), example_inputs=(torch.randn(2, 4),), batch_size=2)
    step = measured_loop.make_step(bm, experiment, bm.module, bm.example_inputs, {})

    def config_step():
        trail.append("step")
        return step()

    def eager_step():
        trail.append("eager")
        return step()

    return experiment, config_step, eager_step


def test_the_loop_runs_its_steps_in_the_harness_order_and_releases_each_output_before_reading_memory(trail):
    trail, outputs = trail
    experiment, config_step, eager_step = traced_steps(trail)

    def timed(step, experiment, iterations):
        trail.append("timed " + ("config" if step is config_step else "eager"))
        return measured_loop.timed_run(step, experiment, iterations)

    @contextlib.contextmanager
    def around_repeat(index):
        trail.append(f"around {index} enter")
        yield
        trail.append(f"around {index} exit")

    def after_repeat(index, output):
        outputs.append(weakref.ref(output))
        trail.append(f"after {index}")

    @contextlib.contextmanager
    def profiled_repeat(index):
        trail.append(f"profiled {index} enter")
        yield
        trail.append(f"profiled {index} exit")

    metrics = measured_loop.measure(
        config_step, experiment, repeat=2, iterations=2, warmup=2, on_phase=lambda p: trail.append(f"phase {p}"),
        around_repeat=around_repeat, timed=timed, after_repeat=after_repeat, memory=TrailedMemory(experiment, trail),
        eager=eager_step, gpu=TrailedGpu(trail), profiled_repeat=profiled_repeat)

    warm_up = (["gc", "phase reference"] + ["eager"] * 4 + ["phase compile"] + ["step"] * 2 + ["phase run"]
               + ["step"] * 2 + ["phase run"])
    timed_runs = [event for index in range(2) for event in (
        ["timed eager", "eager", "eager", "memory start", "gpu start", f"around {index} enter", "timed config",
         "step", "step", f"around {index} exit", "gpu end", "memory end", f"after {index}", "rss"])]
    # The profiled runs: after every timed one, each its own run of the config (no eager, telemetry or callbacks).
    profiled_runs = [event for index in range(2) for event in (
        [f"profiled {index} enter", "timed config", "step", "step", f"profiled {index} exit"])]
    assert trail == warm_up + timed_runs + profiled_runs
    assert list(metrics) == ["eager_warmup_time", "warmup_time", "eager_total_time", "eager_per_iter_time",
                             "peak_memory_bytes", "total_time", "per_iter_time", "minor_faults_per_iter",
                             "process_rss_bytes", "peak_rss_bytes", "profiled_total_time", "profiled_per_iter_time"]
    assert all(len(metrics[name]) == 2 for name in metrics)
    assert metrics["per_iter_time"] == [total / 2 for total in metrics["total_time"]]
    assert metrics["profiled_per_iter_time"] == [total / 2 for total in metrics["profiled_total_time"]]
    assert metrics["eager_per_iter_time"] == [total / 2 for total in metrics["eager_total_time"]]
    assert type(metrics) is dict


def test_without_eager_telemetry_or_callbacks_the_loop_warms_up_and_times_the_config_alone(trail):
    trail, _ = trail
    experiment, config_step, _ = traced_steps(trail)

    metrics = measured_loop.measure(config_step, experiment, repeat=3, iterations=1, warmup=0,
                                    on_phase=lambda p: trail.append(f"phase {p}"))

    assert trail == ["gc", "phase compile", "phase run"] + ["step", "rss"] * 3
    assert list(metrics) == ["total_time", "per_iter_time", "minor_faults_per_iter", "process_rss_bytes",
                             "peak_rss_bytes"]
    assert all(len(values) == 3 for values in metrics.values())
    assert metrics["peak_rss_bytes"] == sorted(metrics["peak_rss_bytes"])  # the lifetime peak never falls
