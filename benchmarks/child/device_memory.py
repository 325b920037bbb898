"""Peak memory per timed run, of the device the config runs on (docs/measurement.md): the
record's `metrics.peak_memory_bytes` (one sample per timed run) and `memory_kind`, which says what it counts:

- `cuda_allocated`: torch.cuda.max_memory_allocated, its peak reset before each timed run (after warm-up, so
  autotuning's one-off buffers don't count);
- `xla_device`: the XLA runtime's peak (torch_xla's memory info `peak_bytes_used`) where the device reports one:
  the runtime's lifetime peak, which has no reset, so every run's sample is the peak since the process started;
  PJRT's CPU client reports none, so CPU XLA configs fall back to the CPU rule;
- `cpu_rss_above_baseline`: the process's peak resident set during the run (Linux's VmHWM, reset before each
  run through /proc/self/clear_refs) minus the resident set just before the model was built, once the C
  allocator has given the memory freed until then back to the system (`release_free_memory`), so that what
  ran earlier in the process (a suite's loading, --save-golden's eager run) leaves no freed memory for the
  model to reuse unseen. Nothing of --verify runs before that point (its references run after timing).
Beside it, `process_rss()` is the whole process's resident set now: `metrics.process_rss_bytes`, read after
each timed run, the dynamo harness's CPU figure (it reads psutil's RSS after its warm-up iterations).
That reset also resets what getrusage's ru_maxrss reads, so `lifetime_peak_rss()` keeps the process's lifetime
peak (the record's `metrics.peak_rss_bytes`): VmHWM is read before each reset and the largest kept.
Child only.
"""

from __future__ import annotations

import ctypes
import gc
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


def forget_peak_rss() -> bool:
    """The process's peak resident set reset to what it holds now (child/ceilings.py: its arrays, freed, are not the
    config's); False where this kernel can't."""
    return _reset_peak_rss()


def _allocator_release(libc) -> Optional[str]:
    """Ask whichever C allocator this process runs under (glibc's, or jemalloc or tcmalloc preloaded: the
    symbols are looked up in the process, not in a library named here) to give its free pages back; the
    allocator's name, or None where none of the calls exists."""
    mallctl = getattr(libc, "mallctl", None)
    if mallctl is not None:  # jemalloc: this thread's cache back to its arena, then purge every arena
        mallctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        mallctl(b"thread.tcache.flush", None, None, None, 0)
        mallctl(b"arena.4096.purge", None, None, None, 0)  # 4096: MALLCTL_ARENAS_ALL
        return "jemalloc"
    release = getattr(libc, "MallocExtension_ReleaseFreeMemory", None)
    if release is not None:  # tcmalloc (gperftools): its page heap's free spans back to the system
        release()
        return "tcmalloc"
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:  # glibc: the top of every arena and the free pages inside them (madvise)
        trim.argtypes = [ctypes.c_size_t]
        trim(0)
        return "glibc"
    return None


def release_free_memory() -> Optional[str]:
    """Collect Python's garbage and give the C allocator's free memory back to the system, so that the resident
    set is what the process holds (whatever `--allocator` preloaded; its thresholds may keep freed memory: glibc
    with MALLOC_TRIM_THRESHOLD_ set never trims below it by itself). Which allocator answered, or None."""
    gc.collect()
    try:
        return _allocator_release(ctypes.CDLL(None))
    except (OSError, AttributeError) as exc:  # no C library to ask: the baseline keeps the freed memory
        log.debug("cannot release free memory: %s", exc)
        return None


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
    """`mark_baseline()` before any model of the config is built (--verify's references included); then
    `start_run()` / `end_run()` around each timed run, `leave_out(bytes)` before them for what the process holds
    that is not the config's (--verify's references)."""

    def __init__(self, experiment):
        self.experiment = experiment
        self.kind: Optional[str] = None  # decided at the first timed run (the XLA device exists by then)
        self.baseline = 0
        self.left_out = 0
        self._device = None
        self._peak_before_resets = 0  # the largest VmHWM read just before a reset wiped it

    def mark_baseline(self) -> None:
        release_free_memory()  # else memory freed earlier is reused by the model without showing
        self.baseline = process_rss() - (_status_bytes("RssFile") or 0)

    def leave_out(self, held: int) -> None:
        """`held` bytes, resident since after the baseline, are not the config's: the CPU rule subtracts them."""
        self.left_out = held

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
        if peak is None:
            return None
        # Less the file-backed pages (libraries' code, mapped files): which run touched them first is history,
        # not the config's memory (they barely change during a timed run, so the ones resident now stand in).
        return max(0, peak - (_status_bytes("RssFile") or 0) - self.baseline - self.left_out)

    def lifetime_peak_rss(self) -> int:
        """The process's peak resident set since it started, in bytes, across the resets start_run makes."""
        return max(self._peak_before_resets, process_peak_rss())


def process_rss() -> int:
    """The process's resident set now (VmRSS), in bytes (0 where unknown)."""
    return _status_bytes("VmRSS") or 0


def process_peak_rss() -> int:
    """getrusage's peak resident set, in bytes (the peak since the last reset, if any)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
