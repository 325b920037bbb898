"""The GPU's state over each timed run of a CUDA config, from NVML (docs/runner.md, "GPU telemetry").

Per timed run (metrics, one value a run): the SM clock (the mean of the driver's own clock samples taken during
the run; the clock after it where the driver kept none), the power the driver reports after the run (its own
average over its recent window: the energy counter moves in steps tens of milliseconds apart, so over a 3 ms run
of resnet18 on an H100 it read 0 W in 27 of 30 runs and 3,600 to 6,700 W in the others), the temperature after
the run, and the seconds the GPU was held below its clocks by its power or thermal limits (NVML's violation
counters). The record's `gpu_telemetry` names the device, its top SM clock and the limits that held it back; a
warning says when a timed run throttled.

No thread runs beside the timed loop: the driver samples and counts by itself, and this module reads before and
after each run. A launch-bound loop (the GPU waiting on the CPU) would lose GIL time to a sampling thread.
Every reading may be unsupported on a given GPU or driver: it is then left out and named, never an error.

Energy (Volta and later): NVML's total-energy counter (millijoules since the driver loaded) is read at the start
and end of each timed run, each reading with a perf_counter time: the run's joules are the counter's difference,
its mean watts that over the window's seconds, and per iteration (or per new token of a generate call) the joules
over the run's count. The counter moves in steps tens of milliseconds apart, so a run's figure is within one step
of the truth; a run over which it did not move (the window shorter than its resolution) gets no figure, never
0 J, and the record's `gpu_telemetry` says in how many runs, as it does for a run whose mean would exceed the
card's enforced power limit (a step that landed inside a window shorter than it: 3,600 W on a 700 W card).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Callable, Optional

# Metric names (one value per timed run)
SM_CLOCK, POWER, TEMPERATURE, THROTTLED = ("gpu_sm_clock_mhz", "gpu_power_watts", "gpu_temperature_c",
                                          "gpu_throttled_seconds")
METRICS = (SM_CLOCK, POWER, TEMPERATURE, THROTTLED)
# From the total-energy counter, per timed run where it moved: joules, mean watts, joules per iteration (a
# measured_loop run) or per new token (a generate call: per step of the batch, as decode_tokens_per_second counts)
ENERGY, MEAN_WATTS, ENERGY_PER_ITERATION, ENERGY_PER_TOKEN = (
    "gpu_energy_joules", "gpu_mean_watts", "gpu_energy_joules_per_iteration", "gpu_energy_joules_per_token")
ENERGY_METRICS = (ENERGY, MEAN_WATTS, ENERGY_PER_ITERATION, ENERGY_PER_TOKEN)
# NVML's violation counters that mean "held below its clocks", by the words the warning uses
LIMIT_POLICIES = {"power cap": "NVML_PERF_POLICY_POWER", "thermal limit": "NVML_PERF_POLICY_THERMAL"}
# The instantaneous reasons that mean throttling (not idle, application clocks, display or sync boost)
THROTTLE_REASONS = {"nvmlClocksEventReasonSwPowerCap": "power cap",
                    "nvmlClocksEventReasonHwSlowdown": "hardware slowdown",
                    "nvmlClocksEventReasonSwThermalSlowdown": "thermal limit",
                    "nvmlClocksEventReasonHwThermalSlowdown": "hardware thermal slowdown",
                    "nvmlClocksEventReasonHwPowerBrakeSlowdown": "power brake"}
SAMPLE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}  # NVML_VALUE_TYPE_*


class GpuTelemetry:
    """NVML's view of one GPU across the timed runs; `absent` says why there is none (then nothing is read)."""

    def __init__(self, nvml=None, handle=None, absent: Optional[str] = None, device: Optional[dict] = None):
        self.nvml, self.handle, self.absent = nvml, handle, absent
        self.device = device or {}
        self.unsupported: list = []  # readings this GPU or driver does not give
        self.reasons_seen: set = set()
        self.throttled_runs = 0
        self.runs = 0
        self.energy_unmoved = 0  # timed runs over which the energy counter did not move: no figure
        self.energy_over_limit = 0  # timed runs whose mean watts would exceed the power limit: no figure
        self._start: dict = {}
        if nvml is not None and absent is None:
            self.unsupported = [name for name, read in self._counters().items() if read() is None]

    @classmethod
    def open(cls, nvml=None, uuid: Optional[str] = None, index: Optional[int] = None) -> "GpuTelemetry":
        """NVML started and the GPU found by its UUID (what torch calls the device), else by NVML index."""
        if nvml is None:
            try:
                import pynvml as nvml
            except ImportError:
                return cls(absent="pynvml is not installed (pip install nvidia-ml-py)")
        try:
            nvml.nvmlInit()
        except Exception as exc:  # no driver: NVMLError_LibraryNotFound, DriverNotLoaded, ...
            return cls(absent=f"NVML could not start ({exc})")
        try:
            if uuid:
                handle = nvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}")
            elif index is not None:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            else:
                return cls(nvml=nvml, absent="which GPU this config ran on is not known to NVML").closed()
            device = {"name": _text(_ask(nvml.nvmlDeviceGetName, handle)), "uuid": uuid,
                      "max_sm_clock_mhz": _ask(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM)}
            limit_mw = _ask(getattr(nvml, "nvmlDeviceGetEnforcedPowerLimit", None), handle)
            if limit_mw:
                device["power_limit_watts"] = limit_mw / 1e3
        except Exception as exc:
            return cls(nvml=nvml, absent=f"NVML does not know the config's GPU ({exc})").closed()
        return cls(nvml=nvml, handle=handle, device=device)

    def closed(self) -> "GpuTelemetry":
        self.close()
        return self

    def close(self) -> None:
        if self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except Exception:
                pass
            self.nvml = None

    # ------------------------------------------------------------ readings

    def _counters(self) -> dict:
        nvml, handle = self.nvml, self.handle
        counters = {"power": lambda: _ask(nvml.nvmlDeviceGetPowerUsage, handle),  # mW
                    "energy": lambda: _ask(nvml.nvmlDeviceGetTotalEnergyConsumption, handle)}  # mJ, since load
        for words, policy in LIMIT_POLICIES.items():
            counters[words] = (lambda p=getattr(nvml, policy, None):
                               _violation_ns(nvml, handle, p) if p is not None else None)
        counters["temperature"] = lambda: _ask(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU)
        counters["sm clock"] = lambda: _ask(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM)
        return counters

    def start_run(self) -> None:
        if self.absent:
            return
        counters = self._counters()
        self._start = {name: counters[name]() for name in LIMIT_POLICIES}
        self._start["since_us"] = int(time.time() * 1e6)  # NVML's sample timestamps: microseconds of the epoch
        self._start["energy"] = counters["energy"](), time.perf_counter()  # last: the nearest to the run

    def end_run(self, iterations: Optional[int] = None, tokens: Optional[int] = None) -> dict:
        """This run's figures: metric name -> value (only those this GPU gives). `iterations` (a measured_loop
        run's) or `tokens` (a generate call's new tokens) divide the run's energy."""
        if self.absent or not self._start:
            return {}
        counters, start = self._counters(), self._start
        # the energy counter first: the nearest to the run (its figures follow the others in the record)
        energy = self._energy(start["energy"], (counters["energy"](), time.perf_counter()), iterations, tokens)
        figures = {}
        clock = self._mean_clock_since(start["since_us"])
        figures[SM_CLOCK] = clock if clock is not None else counters["sm clock"]()
        power = counters["power"]()
        if power is not None:
            figures[POWER] = power / 1e3
        figures[TEMPERATURE] = counters["temperature"]()
        held, limits, counted = 0.0, [], False
        for words in LIMIT_POLICIES:
            now, before = counters[words](), start[words]
            if now is None or before is None:
                continue
            counted = True
            if now > before:
                held += (now - before) / 1e9
                limits.append(words)
        if counted:
            figures[THROTTLED] = held
        limits += self._throttle_reasons_now()
        self.runs += 1
        if limits:
            self.throttled_runs += 1
            self.reasons_seen.update(limits)
        self._start = {}
        figures.update(energy)
        return {name: float(value) for name, value in figures.items() if value is not None}

    def _energy(self, start: tuple, end: tuple, iterations: Optional[int], tokens: Optional[int]) -> dict:
        """The run's energy figures from the counter's (millijoules, perf_counter seconds) at its start and end;
        none (counted) where the counter did not move, or moved by more than the card may draw in the window."""
        (before, started), (after, ended) = start, end
        if before is None or after is None:
            return {}
        joules, seconds = (after - before) / 1e3, ended - started
        if joules <= 0 or seconds <= 0:
            self.energy_unmoved += 1
            return {}
        watts = joules / seconds
        if watts > self.device.get("power_limit_watts", float("inf")):
            self.energy_over_limit += 1
            return {}
        figures = {ENERGY: joules, MEAN_WATTS: watts}
        if iterations:
            figures[ENERGY_PER_ITERATION] = joules / iterations
        if tokens:
            figures[ENERGY_PER_TOKEN] = joules / tokens
        return figures

    def _mean_clock_since(self, since_us: int) -> Optional[float]:
        nvml = self.nvml
        try:
            value_type, samples = nvml.nvmlDeviceGetSamples(self.handle, nvml.NVML_PROCESSOR_CLK_SAMPLES, since_us)
        except Exception:
            return None
        field = SAMPLE_FIELDS.get(value_type)
        values = [getattr(sample.sampleValue, field) for sample in samples
                  if field and sample.timeStamp >= since_us]
        return statistics.fmean(values) if values else None

    def _throttle_reasons_now(self) -> list:
        reasons = _ask(self.nvml.nvmlDeviceGetCurrentClocksEventReasons, self.handle)
        if not reasons:
            return []
        return [words for name, words in THROTTLE_REASONS.items() if reasons & getattr(self.nvml, name, 0)]

    # ------------------------------------------------------------ the record

    def summary(self) -> dict:
        """The record's `gpu_telemetry`."""
        if self.absent:
            return {"absent": self.absent}
        summary = dict(self.device, source="nvml", timed_runs=self.runs, throttled_runs=self.throttled_runs,
                       throttle_reasons=sorted(self.reasons_seen), unsupported=self.unsupported)
        note = self.energy_note()
        if note:
            summary["energy"] = note
        return summary

    def energy_note(self) -> Optional[str]:
        """Why some timed runs have no energy figure (None when all have one, or the counter is unsupported)."""
        parts = []
        if self.energy_unmoved:
            parts.append(f"the counter did not move in {self.energy_unmoved} of {self.runs} timed runs (each run "
                         "shorter than its resolution)")
        if self.energy_over_limit:
            parts.append(f"in {self.energy_over_limit} of {self.runs} timed runs it moved by more than the card's "
                         f"{self.device['power_limit_watts']:.0f} W limit allows (one step inside a run shorter "
                         "than it)")
        return f"energy: {'; '.join(parts)}: no figure for those" if parts else None

    def warning(self, metrics: dict) -> Optional[str]:
        """One line when a timed run was held back by a limit (the record's `warnings`)."""
        if not self.throttled_runs:
            return None
        clocks = metrics.get(SM_CLOCK) or []
        held = sum(metrics.get(THROTTLED) or [])
        clock_text = (f"; SM clock {min(clocks):.0f}-{max(clocks):.0f} MHz of {self.device.get('max_sm_clock_mhz')}"
                      if clocks else "")
        return (f"gpu: throttled ({', '.join(sorted(self.reasons_seen))}) in {self.throttled_runs} of {self.runs} "
                f"timed runs ({held:.2f} s held below its clocks{clock_text}): its times are not the card's best")


def for_config(experiment, nvml=None) -> Optional[GpuTelemetry]:
    """The telemetry of a CUDA config's GPU (None for other accelerators). Its UUID comes from torch for a
    torch CUDA config; an XLA config's device is the only visible GPU, or unknown."""
    if experiment.accelerator != "cuda":
        return None
    uuid = index = None
    if not experiment.xla:
        import torch

        try:
            uuid = str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
        except Exception as exc:  # no usable device: the config fails on its own; say why there are no figures
            return GpuTelemetry(absent=f"torch names no CUDA device ({exc})")
    else:
        uuid = _single_visible_uuid()
        if uuid is None:
            index = 0 if _nvml_count(nvml) == 1 else None
    return GpuTelemetry.open(nvml, uuid=uuid, index=index)


def _single_visible_uuid() -> Optional[str]:
    visible = [part.strip() for part in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if part.strip()]
    return visible[0] if len(visible) == 1 and visible[0].startswith(("GPU-", "MIG-")) else None


def _nvml_count(nvml) -> int:
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
        try:
            return nvml.nvmlDeviceGetCount()
        finally:
            nvml.nvmlShutdown()
    except Exception:
        return 0


def _violation_ns(nvml, handle, policy) -> Optional[int]:
    status = _ask(nvml.nvmlDeviceGetViolationStatus, handle, policy)
    return None if status is None else int(status.violationTime)


def _ask(fn: Callable, *args):
    try:
        return fn(*args)
    except Exception:  # NVMLError_NotSupported and friends: unknown, not a failure
        return None


def _text(value) -> Optional[str]:
    return value.decode() if isinstance(value, bytes) else value

