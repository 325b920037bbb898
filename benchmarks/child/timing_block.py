"""How many back-to-back calls one timed run (a sample) holds: given by hand (--iterations-per-run=N), or found
here, as torch.utils.benchmark's blocked_autorange and pyperf size their loops: the fewest calls whose block lasts at
least a target (10 ms on a CPU, 2 ms on a GPU), never fewer than one. A sample of one cold call after the telemetry's
bookkeeping reads a sub-millisecond model slow (docs/measurement.md, "The timed region"); a block of calls amortizes
what happens between samples. No torch: the caller times the probe blocks."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Optional

CPU_TARGET_SECONDS = 0.010
DEVICE_TARGET_SECONDS = 0.002  # a GPU's or TPU's calls are queued: shorter blocks already hide the host's gaps
MAX_BLOCK = 10_000  # calls in one block at most (--randomize-input makes one input set per call)
MARGIN = 1.2  # the block aims past the target, so a sample a little faster than the probes still reaches it
GROWTH = 10  # a probe block grows at most tenfold on the previous one's estimate

CALIBRATED, GIVEN, ONE_CALL = "calibrated", "given", "one call"


@dataclasses.dataclass(frozen=True)
class Block:
    """The record's `timing_block`: how the number of calls per timed run was chosen, and what it is."""

    how: str  # CALIBRATED, GIVEN (--iterations-per-run), or ONE_CALL (why: `reason`)
    iterations: int
    target_seconds: Optional[float] = None  # calibrated: what one block is to last at least
    probes: tuple = ()  # calibrated: (calls, seconds) of each probe block, in order
    reason: Optional[str] = None  # ONE_CALL: why no block was calibrated

    def to_record(self) -> dict:
        found = {"how": self.how, "iterations": self.iterations}
        if self.how == CALIBRATED:
            found.update(target_seconds=self.target_seconds,
                         probes=[[calls, round(seconds, 9)] for calls, seconds in self.probes])
        if self.reason:
            found["reason"] = self.reason
        return found


def target_seconds(experiment) -> float:
    """How long one block is to last: 10 ms where the host runs the work, 2 ms on an accelerator (CUDA, or an
    XLA device other than the CPU's)."""
    return CPU_TARGET_SECONDS if experiment.accelerator == "cpu" else DEVICE_TARGET_SECONDS


def calibrate(time_block: Callable[[int], float], target: float, limit: int = MAX_BLOCK) -> Block:
    """The block size from probe blocks: `time_block(n)` runs n calls back to back and returns their seconds. The
    probes start at one call and grow (aimed by the fastest time per call seen so far, at most tenfold) until one
    lasts at least the target, or reaches `limit` calls; the block is the calls that last MARGIN x the target at the
    fastest time per call seen, never fewer than that last probe's calls. At least two probes: one slow call (a
    core taken by another process for a moment) does not make every timed run a single call."""
    calls, probes = 1, []
    while True:
        seconds = time_block(calls)
        probes.append((calls, seconds))
        fastest = min(taken / made for made, taken in probes)
        if (seconds >= target and len(probes) > 1) or calls >= limit:
            break
        if seconds < target:  # else: a first probe that lasted the target, tried once more at one call
            wanted = calls_for(target, 1, fastest) if fastest > 0 else calls * GROWTH
            calls = min(limit, max(calls + 1, min(calls * GROWTH, wanted)))
    wanted = calls_for(target, 1, fastest) if fastest > 0 else calls
    return Block(CALIBRATED, max(1, min(limit, max(calls, wanted))), target, tuple(probes))


def calls_for(target: float, calls: int, seconds: float) -> int:
    """The calls that would last MARGIN x the target, at `calls` calls per `seconds` (rounded first, so that a
    product such as 1.2 x 0.01 x 10 / 0.01 is 12, not 13)."""
    return math.ceil(round(MARGIN * target * calls / seconds, 6))


def grown(block: Block, calls: int, seconds: float, limit: int = MAX_BLOCK) -> Block:
    """A calibrated block after a warm-up block of `calls` calls lasted `seconds`: grown (never shrunk) to last
    MARGIN x the target where that block fell short of the target (the calls got faster as they warmed up), that
    block noted among the probes; any other block as it is."""
    if block.how != CALIBRATED or seconds <= 0 or seconds >= block.target_seconds:
        return block
    wanted = min(limit, calls_for(block.target_seconds, calls, seconds))
    if wanted <= block.iterations:
        return block
    return dataclasses.replace(block, iterations=wanted, probes=block.probes + ((calls, seconds),))


def given(iterations: int) -> Block:
    return Block(GIVEN, iterations)


def one_call(reason: str) -> Block:
    return Block(ONE_CALL, 1, reason=reason)
