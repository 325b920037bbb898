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
    per second of run while `throttle` is set; `unsupported` names functions that raise NotSupported."""

    NVML_CLOCK_SM, NVML_TEMPERATURE_GPU, NVML_PROCESSOR_CLK_SAMPLES = 1, 0, 6
    NVML_PERF_POLICY_POWER, NVML_PERF_POLICY_THERMAL = 0, 1
    nvmlClocksEventReasonGpuIdle, nvmlClocksEventReasonSwPowerCap = 0x1, 0x4
    nvmlClocksEventReasonHwSlowdown, nvmlClocksEventReasonSwThermalSlowdown = 0x8, 0x20

    def __init__(self, power=300.0, clock=1755, unsupported=()):
        self.power, self.clock, self.unsupported = power, clock, set(unsupported)
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
        self.energy_mj = getattr(self, "energy_mj", 0.0) + self._tick() * self.power * 1e3
        return int(self.energy_mj // (self.power * 80)) * int(self.power * 80)

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


def timed_runs(telemetry, repeat=3, throttle_in=()):
    """`repeat` timed runs of a tiny CPU step through measured_loop.measure, with the telemetry's readings; the
    GPU is held back by its power cap during the runs whose index is in `throttle_in`."""
    experiment = ExperimentConfig("cpu", None, None, "eval")
    bm = BenchmarkModel(module=torch.nn.Linear(4, 4), example_inputs=(torch.randn(2, 4),), batch_size=2)
    step = measured_loop.make_step(bm, experiment, bm.module, bm.example_inputs, {})

    @contextlib.contextmanager
    def around_repeat(index):
        telemetry.nvml.throttle = index in throttle_in
        time.sleep(0.01)
        yield
        time.sleep(0.01)

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
    assert telemetry.summary() == {"name": "NVIDIA H100 80GB HBM3", "uuid": "58f3c3a4-0000", "max_sm_clock_mhz": 1980,
                                   "source": "nvml", "timed_runs": 3, "throttled_runs": 0, "throttle_reasons": [],
                                   "unsupported": []}
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
    nvml = FakeNvml(unsupported={"power", "violations", "samples", "temperature"})
    telemetry = gpu_telemetry.GpuTelemetry.open(nvml, index=0)
    metrics = timed_runs(telemetry, repeat=2)
    assert metrics["gpu_sm_clock_mhz"] == [1755.0] * 2  # no samples: the clock read after the run
    for name in ("gpu_power_watts", "gpu_temperature_c", "gpu_throttled_seconds"):
        assert name not in metrics
    assert telemetry.summary()["unsupported"] == ["power", "power cap", "thermal limit", "temperature"]


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
