"""GPU telemetry over the timed runs (child/gpu_telemetry.py): per run SM clock, power, temperature and seconds
held back by a limit; the record's summary and the throttling warning; readings a GPU doesn't give left out and
named; no NVML, no pynvml, no device: absent with the reason.

This machine has no NVIDIA driver, so the readings come from `FakeNvml`, a GPU that behaves as NVML's functions
say (counters that grow with time, the driver's clock samples); the real NVML runs in the GPU tier
(tests/end_to_end/test_gpu.py, `make test-gpu`). The absent paths run the real pynvml here."""

import contextlib
import time
import types

import torch

from benchmarks.child import gpu_telemetry, measured_loop
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.suites import BenchmarkModel


class NVMLError(Exception):
    pass


class FakeNvml:
    """pynvml's names for one GPU: `power` watts drawn while running; `capped` seconds of power-cap violation
    per second of run while `throttle` is set; `unsupported` names functions that raise NotSupported.
    Its total-energy counter (millijoules) grows at `power` watts and is read in whole steps of `energy_step`
    seconds' worth, as a driver keeps it (a run shorter than a step reads no change, or one whole step), unless
    `energy_readings` scripts what each read returns; `power_limit` watts is its enforced limit (None: not given)."""

    NVML_CLOCK_SM, NVML_TEMPERATURE_GPU, NVML_PROCESSOR_CLK_SAMPLES = 1, 0, 6
    NVML_PERF_POLICY_POWER, NVML_PERF_POLICY_THERMAL = 0, 1
    nvmlClocksEventReasonGpuIdle, nvmlClocksEventReasonSwPowerCap = 0x1, 0x4
    nvmlClocksEventReasonHwSlowdown, nvmlClocksEventReasonSwThermalSlowdown = 0x8, 0x20

    def __init__(self, power=300.0, clock=1755, unsupported=(), energy_step=0.05, energy_readings=None,
                 power_limit=700.0):
        self.power, self.clock, self.unsupported = power, clock, set(unsupported)
        self.energy_step, self.energy_readings, self.power_limit = energy_step, energy_readings, power_limit
        self.energy_mj = 0.0
        self.throttle = False
        self.started = time.monotonic()
        self.violation_ns = {0: 0, 1: 0}
        self.inits = 0
        self.handles = []

    def _check(self, name):
        if name in self.unsupported:
            raise NVMLError("Not Supported")

    def _tick(self):  # the counters as the driver keeps them, up to now
        now = time.monotonic()
        elapsed, self.started = now - self.started, now
        if self.throttle:
            self.violation_ns[0] += int(elapsed * 1e9)
        self.energy_mj += elapsed * self.power * 1e3
        return elapsed

    def nvmlInit(self):
        self.inits += 1

    def nvmlShutdown(self):
        self.inits -= 1

    def nvmlDeviceGetHandleByUUID(self, uuid):
        self.handles.append(uuid)
        return "handle"

    def nvmlDeviceGetHandleByIndex(self, index):
        self.handles.append(index)
        return "handle"

    def nvmlDeviceGetName(self, handle):
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMaxClockInfo(self, handle, kind):
        return 1980

    def nvmlDeviceGetClockInfo(self, handle, kind):
        return self.clock

    def nvmlDeviceGetTemperature(self, handle, kind):
        self._check("temperature")
        return 61

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        # as an H100's driver keeps it: in steps tens of milliseconds apart (a short run reads 0, or a whole step)
        self._check("energy")
        self._tick()
        if self.energy_readings is not None:
            return self.energy_readings.pop(0)
        step_mj = round(self.power * self.energy_step * 1e3)
        return int(self.energy_mj // step_mj) * step_mj

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):  # milliwatts
        if self.power_limit is None:
            raise NVMLError("Not Supported")
        return int(self.power_limit * 1e3)

    def nvmlDeviceGetPowerUsage(self, handle):  # milliwatts, the driver's own recent average
        self._check("power")
        return int(self.power * 1e3)

    def nvmlDeviceGetViolationStatus(self, handle, policy):
        self._check("violations")
        self._tick()
        return types.SimpleNamespace(referenceTime=0, violationTime=self.violation_ns[policy])

    def nvmlDeviceGetSamples(self, handle, kind, since_us):
        self._check("samples")
        now_us = int(time.time() * 1e6)
        samples = [types.SimpleNamespace(timeStamp=stamp, sampleValue=types.SimpleNamespace(uiVal=self.clock))
                   for stamp in (since_us - 1000, since_us + 10, now_us)]  # one before the run: not its own
        return 1, samples

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return self.nvmlClocksEventReasonSwPowerCap if self.throttle else self.nvmlClocksEventReasonGpuIdle


def timed_runs(telemetry, repeat=3, throttle_in=(), pause=0.01):
    """`repeat` timed runs of a tiny CPU step (2 iterations) through measured_loop.measure, with the telemetry's
    readings, each `pause` seconds before and after the step; the GPU is held back by its power cap during the runs
    whose index is in `throttle_in`."""
    experiment = ExperimentConfig("cpu", None, None, "eval")
    bm = BenchmarkModel(module=torch.nn.Linear(4, 4), example_inputs=(torch.randn(2, 4),), batch_size=2)
    step = measured_loop.make_step(bm, experiment, bm.module, bm.example_inputs, {})

    @contextlib.contextmanager
    def around_repeat(index):
        telemetry.nvml.throttle = index in throttle_in
        time.sleep(pause)
        yield
        time.sleep(pause)

    return measured_loop.measure(step, experiment, repeat, 2, 1, around_repeat=around_repeat, gpu=telemetry)


def test_each_timed_run_has_the_gpus_clock_power_temperature_and_time_held_back():
    nvml = FakeNvml(power=300.0, clock=1755)
    telemetry = gpu_telemetry.GpuTelemetry.open(nvml, uuid="58f3c3a4-0000")
    assert nvml.handles == ["GPU-58f3c3a4-0000"]  # torch's UUID, as NVML spells it
    metrics = timed_runs(telemetry)
    for name in gpu_telemetry.METRICS:
        assert len(metrics[name]) == 3, name
    assert metrics["gpu_sm_clock_mhz"] == [1755.0] * 3  # the driver's samples of the run (not the one before it)
    assert all(200 < watts < 400 for watts in metrics["gpu_power_watts"]), metrics["gpu_power_watts"]
    assert metrics["gpu_temperature_c"] == [61.0] * 3 and metrics["gpu_throttled_seconds"] == [0.0] * 3
    summary = telemetry.summary()
    summary.pop("energy", None)  # runs of ~20 ms against the counter's 50 ms steps: the energy tests below
    assert summary == {"name": "NVIDIA H100 80GB HBM3", "uuid": "58f3c3a4-0000", "max_sm_clock_mhz": 1980,
                       "power_limit_watts": 700.0, "source": "nvml", "timed_runs": 3, "throttled_runs": 0,
                       "throttle_reasons": [], "unsupported": []}
    assert telemetry.warning(metrics) is None
    telemetry.close()
    assert nvml.inits == 0


def test_a_run_held_back_by_the_power_cap_is_counted_and_warned_of():
    nvml = FakeNvml(clock=1410)
    telemetry = gpu_telemetry.GpuTelemetry.open(nvml, uuid="GPU-1")
    metrics = timed_runs(telemetry, throttle_in={1})
    held = metrics["gpu_throttled_seconds"]
    assert held[0] == 0.0 and held[1] > 0.0  # the second run, and (from its end) a little of the third
    summary = telemetry.summary()
    assert summary["throttled_runs"] >= 1 and summary["throttle_reasons"] == ["power cap"]
    warning = telemetry.warning(metrics)
    assert warning.startswith("gpu: throttled (power cap) in ") and "of 3 timed runs" in warning
    assert "SM clock 1410-1410 MHz of 1980" in warning


def test_readings_a_gpu_does_not_give_are_left_out_and_named():
    nvml = FakeNvml(unsupported={"power", "energy", "violations", "samples", "temperature"}, power_limit=None)
    telemetry = gpu_telemetry.GpuTelemetry.open(nvml, index=0)
    metrics = timed_runs(telemetry, repeat=2)
    assert metrics["gpu_sm_clock_mhz"] == [1755.0] * 2  # no samples: the clock read after the run
    for name in ("gpu_power_watts", "gpu_temperature_c", "gpu_throttled_seconds") + gpu_telemetry.ENERGY_METRICS:
        assert name not in metrics
    summary = telemetry.summary()
    assert summary["unsupported"] == ["power", "energy", "power cap", "thermal limit", "temperature"]
    assert "energy" not in summary and "power_limit_watts" not in summary  # unsupported: named, not "no figure"


def test_no_nvml_or_no_device_is_absent_with_the_reason():
    # This machine's real pynvml: installed, but no NVIDIA driver library to load.
    real = gpu_telemetry.GpuTelemetry.open()
    assert real.summary()["absent"].startswith("NVML could not start (")
    assert real.end_run() == {} and real.warning({}) is None
    assert gpu_telemetry.for_config(ExperimentConfig("cpu", None, None, "eval")) is None  # only CUDA configs

    class Unknown(FakeNvml):
        def nvmlDeviceGetHandleByUUID(self, uuid):
            raise NVMLError("Not Found")

    nvml = Unknown()
    lost = gpu_telemetry.GpuTelemetry.open(nvml, uuid="GPU-2")
    assert lost.summary() == {"absent": "NVML does not know the config's GPU (Not Found)"} and nvml.inits == 0
    assert gpu_telemetry.GpuTelemetry.open(FakeNvml()).summary() == {
        "absent": "which GPU this config ran on is not known to NVML"}


def test_a_long_run_has_its_energy_from_the_counter_watts_times_seconds_within_one_step():
    # runs of ~0.4 s (8 of the counter's 50 ms steps of 15 J at 300 W): each within one step of 300 W x its window
    nvml = FakeNvml(power=300.0, energy_step=0.05)
    telemetry = gpu_telemetry.GpuTelemetry.open(nvml, uuid="GPU-1")
    metrics = timed_runs(telemetry, repeat=2, pause=0.2)
    joules, watts = metrics["gpu_energy_joules"], metrics["gpu_mean_watts"]
    assert len(joules) == len(watts) == 2
    for run, energy in enumerate(joules):
        assert energy % 15.0 == 0.0  # whole steps of the counter, as read
        window = energy / watts[run]  # the seconds between the two readings
        assert 0.4 <= window < 0.4 + metrics["total_time"][run] + 0.5, window
        assert abs(energy - 300.0 * window) <= 15.0  # one step at most
        assert abs(watts[run] - 300.0) <= 15.0 / window
        assert metrics["gpu_energy_joules_per_iteration"][run] == energy / 2  # 2 iterations a run
    assert "gpu_energy_joules_per_token" not in metrics  # a generate call's only
    assert "energy" not in telemetry.summary()  # every run has its figure


def test_a_run_shorter_than_the_counters_step_has_no_energy_figure_and_the_summary_says_how_many():
    # a counter that steps once a thousand seconds: no run moves it; no 0 J, no watts
    telemetry = gpu_telemetry.GpuTelemetry.open(FakeNvml(energy_step=1000.0), uuid="GPU-1")
    metrics = timed_runs(telemetry, repeat=3)
    for name in gpu_telemetry.ENERGY_METRICS:
        assert name not in metrics, name
    assert metrics["gpu_power_watts"] == [300.0] * 3  # the other readings go on
    assert telemetry.summary()["energy"] == ("energy: the counter did not move in 3 of 3 timed runs (each run "
                                             "shorter than its resolution): no figure for those")

    # scripted readings (mJ; the first is the check that it is supported): still, one step of 15 J, still
    nvml = FakeNvml(energy_readings=[0, 0, 0, 0, 15000, 15000, 15000], power_limit=None)
    telemetry = gpu_telemetry.GpuTelemetry.open(nvml, uuid="GPU-1")
    metrics = timed_runs(telemetry, repeat=3)
    assert metrics["gpu_energy_joules"] == [15.0] and metrics["gpu_energy_joules_per_iteration"] == [7.5]
    assert metrics["gpu_mean_watts"][0] > 15.0 / 1.0  # 15 J over a ~20 ms window
    assert telemetry.summary()["energy"] == ("energy: the counter did not move in 2 of 3 timed runs (each run "
                                             "shorter than its resolution): no figure for those")


def test_a_step_inside_a_run_shorter_than_it_is_no_figure_beyond_the_cards_power_limit():
    # 1,000 J inside a ~20 ms run is 50 kW: above the card's 700 W limit, so the counter's step, not the draw
    nvml = FakeNvml(energy_readings=[0, 0, 1_000_000, 1_000_000, 1_000_000, 1_000_000, 1_003_000])
    telemetry = gpu_telemetry.GpuTelemetry.open(nvml, uuid="GPU-1")
    metrics = timed_runs(telemetry, repeat=3, pause=0.05)
    assert metrics["gpu_energy_joules"] == [3.0]  # the third run: 3 J over ~0.1 s, under the limit
    assert metrics["gpu_mean_watts"][0] < 700.0
    assert telemetry.summary()["energy"] == (
        "energy: the counter did not move in 1 of 3 timed runs (each run shorter than its resolution); in 1 of 3 "
        "timed runs it moved by more than the card's 700 W limit allows (one step inside a run shorter than it): "
        "no figure for those")


def test_a_generate_call_has_its_energy_per_new_token():
    from benchmarks.child import generation
    from benchmarks.suites import Generation

    def step(clock):  # a generate call of 4 new tokens, 0.1 s each
        for _ in range(4):
            time.sleep(0.1)
            clock(None, None)
        return "tokens"

    bm = BenchmarkModel(module=None, example_inputs=(), batch_size=1,
                        generation=Generation(new_tokens=4, pad_token_id=0, prompt_tokens=3))
    telemetry = gpu_telemetry.GpuTelemetry.open(FakeNvml(power=300.0, energy_step=0.05), uuid="GPU-1")
    metrics, _ = generation.measure(step, bm, ExperimentConfig("cpu", None, None, "eval"), 2, 1, gpu=telemetry)
    joules, per_token = metrics["gpu_energy_joules"], metrics["gpu_energy_joules_per_token"]
    assert len(joules) == 2 and per_token == [energy / 4 for energy in joules]
    for energy, total in zip(joules, metrics["generate_time"]):
        assert abs(energy - 300.0 * total) <= 15.0 + 300.0 * 0.05  # one step, and the readings around the call
    assert "gpu_energy_joules_per_iteration" not in metrics
    assert telemetry.summary()["timed_runs"] == 2
