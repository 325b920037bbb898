"""--speedup=paired: a backend's child also times eager, alternating with the backend in one process (the dynamo
harness's order), so the speedup is a ratio per pair of neighbouring runs that saw the same machine and process.
The experiment key `speedup` (isolated, the default, or paired), which configs can be paired and why not, and the
record's `paired_speedup` summary: the median of the per-pair ratios with a distribution-free interval. The child
writes the summary; the readers (results/measurement.py, results/against_eager.py) pool it over processes with the
same functions (the design: below). Pure Python, no torch.

The design:

`--speedup=paired` is an experiment key rather than a request flag like the golden ones (`golden_request`): a paired
child's backend runs after eager's in one process, and issue #30 measured that eager running first changes
Inductor's time on the CPU (the allocator's history), so a paired record's backend time is another measurement than
an isolated one. As a key it is in the fingerprint (resume), in the labels (`inductor[paired]`: aggregate's rows and
dashboard lines, the runner's table) and in compare.py's pairing (a paired record is never compared with an isolated
one unless `--pair speedup=isolated:paired` asks), at no cost to old files (`isolated` is its `AXIS_DEFAULTS`
value). Eager is never paired (`for_config` here): the eager baseline of a paired config is the eager
config an isolated sweep has, found by `against_eager.baseline_key`, which leaves `speedup` out with torch.compile's
axes (`BACKEND_ONLY_AXES`). XLA configs are refused (`SUPPORT_RULES` here); dynamo backends and the export
backends pair.

The child (`child.PairedSpeedup`, the axis's hook, before timing) builds eager's step with `measured_loop.make_step`
on the same module and example inputs, the experiment's dynamo set to None (so a change of the training step reaches
both), and `measured_loop.measure(..., eager=step)` warms eager up first (phase `reference`), then the backend
(phase `compile`), then times eager just before each timed run of the backend, with the same timing function. The
harness's order (dynamobench `common.py`, `speedup_experiment`): eager warm-up, compiled warm-up, then per repeat
eager then compiled on the same model and inputs, its speedup median(eager) / median(compiled) (recorded here as
`ratio_of_medians`). Our headline is the median of the per-pair ratios, whose pairs cancel what changes between
pairs (load, frequency); its interval is the order-statistic one (`median_interval` here: exact coverage from the
binomial, no seed, no assumption on the ratios' distribution). Readers take the ratios through
`Measurement.paired_ratios` and pool them over a config's processes (`against_eager.paired_speedup`): the
dashboard's entry speedup and its note, aggregate's speedup cells (`analysis.paired_point`, only when the baseline
backend is eager; the cell note says how many), compare.py's `--metric=paired` (backend / eager per pair) and the
paired speedups it shows in a row's note, `runner/progress.speedup_table`.
"""

from __future__ import annotations

import math
import statistics
from typing import Optional, Sequence
from benchmarks.config.axis import Axis, EAGER_DEFAULT
from benchmarks.config.record_key import RecordKey, feature

ISOLATED = "isolated"
PAIRED = "paired"
CHOICES = (ISOLATED, PAIRED)
DEFAULT = ISOLATED
# What the record's `paired_speedup.method` says: eager run, then backend run, `pairs` times in one process.
METHOD = "alternating eager/backend runs in one process"
INTERVAL_METHOD = "order statistics of the pair ratios (binomial, distribution-free)"
CONFIDENCE = 0.95


def for_config(value: str, experiment) -> str:
    """The value a config of this backend carries: eager (no dynamo, no XLA) is never paired, so a --speedup=paired
    sweep keeps one eager config, the one an isolated sweep has (same fingerprint: it resumes)."""
    return value if experiment.dynamo is not None or experiment.xla else DEFAULT


def _xla_reason(e, c) -> str:
    return ("--speedup=paired times eager beside the backend on the same module and inputs; an XLA config's module "
            "and inputs live on the XLA device and its eager baseline on the plain one (a second copy, and the XLA "
            "runtime's threads running beside eager's runs): use the isolated default")


SUPPORT_RULES = [
    ("paired-not-with-xla", lambda e, c: e.speedup == PAIRED and bool(e.xla or e.torch_xla2), _xla_reason),
]


def parse(value) -> str:
    """An experiment's `speedup` value (a record without it: isolated), or ValueError."""
    value = value or DEFAULT
    if value not in CHOICES:
        raise ValueError(f"speedup must be one of {', '.join(CHOICES)}, not {value!r}")
    return value


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple:
    """(low, high, coverage): the interval of the median from order statistics, the narrowest symmetric pair
    x(k), x(n+1-k) whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least `confidence`; with too few values for
    that (n < 6 at 95%), the smallest and largest, and their lower coverage 1 - 2^(1-n). No resampling: the same
    values always give the same interval."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("no values")
    below = [math.comb(n, i) / 2.0 ** n for i in range(n + 1)]  # P(B = i), B ~ Binomial(n, 1/2)
    best_k, best_tail = 1, below[0]
    for k in range(2, (n + 1) // 2 + 1):  # x(k), x(n+1-k) misses the median with probability 2 P(B <= k - 1)
        tail = sum(below[:k])
        if 1 - 2 * tail < confidence:
            break
        best_k, best_tail = k, tail
    return ordered[best_k - 1], ordered[n - best_k], 1 - 2 * best_tail


def summarize(eager: Sequence[float], backend: Sequence[float]) -> Optional[dict]:
    """The record's `paired_speedup` from the two series of one process (per-iteration seconds, pair i being eager
    run i then backend run i), or None without a positive pair."""
    pairs = [(e, b) for e, b in zip(eager, backend) if e > 0 and b > 0 and math.isfinite(e) and math.isfinite(b)]
    if not pairs:
        return None
    ratios = [e / b for e, b in pairs]
    low, high, coverage = median_interval(ratios)
    eager_median = statistics.median(e for e, _ in pairs)
    backend_median = statistics.median(b for _, b in pairs)
    return {
        "method": METHOD,
        "pairs": len(pairs),
        "ratios": ratios,
        "median": statistics.median(ratios),
        "interval": {"low": low, "high": high, "confidence": coverage, "method": INTERVAL_METHOD},
        "ratio_of_medians": eager_median / backend_median,  # the harness's statistic: median eager / median compiled
        "eager_median": eager_median,
        "backend_median": backend_median,
    }


def pooled_speedup(ratios_of_processes: Sequence[Sequence[float]]) -> Optional[dict]:
    """A config's paired speedup over its processes (--rounds): the median and interval of every pair's ratio. The
    readers' hook (features.declared_one: results/against_eager.paired_speedup)."""
    ratios = [r for process in ratios_of_processes for r in process if r > 0 and math.isfinite(r)]
    if not ratios:
        return None
    low, high, coverage = median_interval(ratios)
    return {"median": statistics.median(ratios), "low": low, "high": high, "confidence": coverage,
            "pairs": len(ratios), "processes": len(ratios_of_processes)}


ORDER = 60  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "speedup",
        "isolated (default: each config in its own child; a speedup divides two processes' medians) or paired (a "
        "backend's child also times eager on the same module and inputs, alternating eager and backend runs as the "
        "dynamo harness does: the record's paired_speedup, per-pair ratios with an interval; not for XLA); experiment "
        "key `speedup`",
        parse=parse, default=DEFAULT, choices=CHOICES,
        for_config=for_config, support_rules=SUPPORT_RULES, example="paired",
        on_eager=EAGER_DEFAULT,  # eager is the baseline, never paired (for_config)
        meaning="isolated, or paired: eager timed in the backend's child"),
)


# The record's keys this feature writes (results/record_schema.py gathers them into the record's).
RECORD_KEYS = (
    RecordKey("paired_speedup", "object", feature("speedup"), "paired: per-pair ratios, median, interval"),
)
