"""Peak memory per timed run, of the device the config runs on (docs/architecture.md, "Measurement"): the
record's `metrics.peak_memory_bytes` (one sample per timed run) and `memory_kind`, which says what it counts:

- `cuda_allocated`: torch.cuda.max_memory_allocated, its peak reset before each timed run (after warm-up, so
  autotuning's one-off buffers don't count);
- `xla_device`: the XLA runtime's peak (torch_xla's memory info `peak_bytes_used`) where the device reports one:
  the runtime's lifetime peak, which has no reset, so every run's sample is the peak since the process started;
  PJRT's CPU client reports none, so CPU XLA configs fall back to the CPU rule;
- `cpu_rss_above_baseline`: the process's peak resident set during the run (Linux's VmHWM, reset before each
  run through /proc/self/clear_refs) minus the resident set just before the model was built.
That reset also resets what getrusage's ru_maxrss reads, so `lifetime_peak_rss()` keeps the process's lifetime
peak (the record's `metrics.peak_rss_bytes`): VmHWM is read before each reset and the largest kept.
Child only.
"""

from __future__ import annotations

import logging
import re
import resource
from typing import Optional

log = logging.getLogger("benchmarks.child.device_memory")

CUDA_ALLOCATED = "cuda_allocated"
XLA_DEVICE = "xla_device"
CPU_RSS_ABOVE_BASELINE = "cpu_rss_above_baseline"
KINDS = (CUDA_ALLOCATED, XLA_DEVICE, CPU_RSS_ABOVE_BASELINE)

_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"
_RESET_PEAK_RSS = "5"  # proc(5): resets the peak resident set size (VmHWM) to the current one


def _status_bytes(field: str) -> Optional[int]:
    """A `/proc/self/status` figure (kB) in bytes, or None where there is no such file."""
    try:
        with open(_STATUS, encoding="ascii") as handle:
            found = re.search(rf"^{field}:\s+(\d+)\s+kB", handle.read(), re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) * 1024 if found else None


def _reset_peak_rss() -> bool:
    try:
        with open(_CLEAR_REFS, "w", encoding="ascii") as handle:
            handle.write(_RESET_PEAK_RSS)
        return True
    except OSError:
        return False


def _xla_peak(device) -> Optional[int]:
    """The XLA runtime's peak bytes in use on `device` (its lifetime peak: the runtime has no reset), or None
    where the device reports no peak."""
    try:
        import torch_xla.core.xla_model as xm

        info = xm.get_memory_info(device)
    except Exception as exc:  # PJRT's CPU client: "GetAllocatorStats is not supported"
        log.debug("the XLA device reports no memory figures: %s", exc)
        return None
    # Only a peak: "bytes_used" is the current usage, no peak, so without "peak_bytes_used" the CPU rule applies.
    peak = info.get("peak_bytes_used") if isinstance(info, dict) else None
    return peak if isinstance(peak, int) else None


class PeakMemory:
    """`mark_baseline()` just before the model is built; then `start_run()` / `end_run()` around each timed run."""

    def __init__(self, experiment):
        self.experiment = experiment
        self.kind: Optional[str] = None  # decided at the first timed run (the XLA device exists by then)
        self.baseline = 0
        self._device = None
        self._peak_before_resets = 0  # the largest VmHWM read just before a reset wiped it

    def mark_baseline(self) -> None:
        self.baseline = _status_bytes("VmRSS") or 0

    def _decide(self) -> str:
        experiment = self.experiment
        if experiment.xla:
            from benchmarks.child import backends

            self._device = backends.target_device(experiment)
            if _xla_peak(self._device) is not None:
                return XLA_DEVICE
            return CPU_RSS_ABOVE_BASELINE
        if experiment.accelerator == "cuda":
            return CUDA_ALLOCATED
        return CPU_RSS_ABOVE_BASELINE

    def start_run(self) -> None:
        if self.kind is None:
            self.kind = self._decide()
        if self.kind == CUDA_ALLOCATED:
            import torch

            torch.cuda.reset_peak_memory_stats()
        elif self.kind == CPU_RSS_ABOVE_BASELINE:
            self._peak_before_resets = max(self._peak_before_resets, _status_bytes("VmHWM") or 0)
            if not _reset_peak_rss():
                log.debug("cannot reset the peak resident set: the sample is the process's peak since it started")

    def end_run(self) -> Optional[int]:
        """Bytes at the peak of the run just ended (None where unknown)."""
        if self.kind == CUDA_ALLOCATED:
            import torch

            return int(torch.cuda.max_memory_allocated())
        if self.kind == XLA_DEVICE:
            return _xla_peak(self._device)
        peak = _status_bytes("VmHWM")
        return None if peak is None else max(0, peak - self.baseline)

    def lifetime_peak_rss(self) -> int:
        """The process's peak resident set since it started, in bytes, across the resets start_run makes."""
        return max(self._peak_before_resets, process_peak_rss())


def process_peak_rss() -> int:
    """getrusage's peak resident set, in bytes (the peak since the last reset, if any)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
