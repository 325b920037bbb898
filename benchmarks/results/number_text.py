"""How every terminal and page writes a ratio, a percent and a spread: with significant digits, so that a small
ratio stays readable (0.0046 is `0.00460x`, never `0.00x`), the marks a figure carries (a failed check, an
unstable spread) and what goes beside a speedup (graph breaks, the roofline fraction) are spelled once: the runner's
end-of-sweep table and aggregate's page say them alike."""

from __future__ import annotations

import math
from typing import Optional

from benchmarks.results import roofline_figures

# The mark of a figure from a config whose outputs failed their check (accuracy_status.failed): its time and
# speedup are no win. The legend line every output prints beside it.
FAILED_MARK = "✗"
FAILED_LEGEND = (f"{FAILED_MARK} <status>: the config's outputs failed their check (--verify, --golden, ...): its time "
                 "and speedup are not a result")
# pyperf's rule: a benchmark is unstable where its runs' standard deviation exceeds 10 % of their mean.
UNSTABLE_CV = 0.10
UNSTABLE_MARK = "!"
SPREAD_LEGEND = (f"±N%: half the range (max - min) of the timed runs over their median, rounds pooled; "
                 f"{UNSTABLE_MARK}: unstable (their standard deviation is over {UNSTABLE_CV:.0%} of their mean, "
                 "pyperf's warning): rerun on a quiet machine, with --rounds 3")


def significant(value: Optional[float], digits: int = 3) -> str:
    """`value` with `digits` significant digits, trailing zeros kept (2.00, 0.00460, 18.2); whole numbers from
    10**digits up (1234); '' for None, 'nan' for NaN."""
    if value is None:
        return ""
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    if abs(value) >= 10 ** digits:
        return f"{value:.0f}"
    return f"{value:#.{digits}g}".rstrip(".")


def ratio(value: Optional[float]) -> str:
    """A speedup or any ratio: `0.418x`, `18.2x`, `0.00460x`."""
    return "" if value is None else significant(value) + "x"


def percent(fraction: Optional[float]) -> str:
    """A fraction as a percent with 2 significant digits: 0.0016 -> `0.16%`, 0.42 -> `42%`."""
    if fraction is None:
        return ""
    return significant(fraction * 100, 2) + "%"


def spread(values) -> tuple:
    """(half the range over the median as a percent text `±3%`, whether unstable by pyperf's rule) of positive
    samples; ('', False) for fewer than two, or identical ones."""
    values = [float(v) for v in values]
    if len(values) < 2:
        return "", False
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    mean = sum(values) / len(values)
    stdev = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    if ordered[0] == ordered[-1]:
        return "", False  # identical samples (a synthetic record): nothing to say
    half = (ordered[-1] - ordered[0]) / 2 / median if median > 0 else math.nan
    return "±" + significant(half * 100, 2) + "%", mean > 0 and stdev / mean > UNSTABLE_CV


def beside_speedup(record: dict) -> list:
    """What goes beside a config's speedup, as the dynamo harness's CSV and the HUD put it: dynamo's graph breaks (a
    dynamo config's), then the roofline fraction: ['2 breaks', 'roofline 0.16%']."""
    stats = record.get("dynamo_stats")
    breaks = stats.get("graph_breaks") if isinstance(stats, dict) else None
    out = []
    if isinstance(breaks, int) and not isinstance(breaks, bool):
        out.append(f"{breaks} break" + ("" if breaks == 1 else "s"))
    fraction = roofline_figures.fraction_of(record)
    if fraction is not None:
        out.append(f"roofline {percent(fraction)}")
    return out


# A generate run's figures as vLLM's bench and optimum-benchmark print them: (label, metric, unit, factor).
GENERATE_FIGURES = (("TTFT", "time_to_first_token", "ms", 1e3), ("TPOT", "time_per_output_token", "ms", 1e3),
                    ("ITL p50", "inter_token_latency_p50", "ms", 1e3), ("ITL p99", "inter_token_latency_p99", "ms", 1e3),
                    ("tokens/s", "decode_tokens_per_second", "tokens/s", 1.0))


def generate_figures(m) -> list:
    """An LLM row's figures (a Measurement of a generate run), medians over its timed calls, each with its unit:
    [(label, '4.10 ms'), ..., ('tokens/s', '432 tokens/s'), ('bandwidth', '0.75%'), ('generate', '54.4 ms')]; [] for a
    record not run by generate."""
    from benchmarks.results import decode_bandwidth

    if m.median("generate_time") is None:
        return []
    out = []
    for label, name, unit, factor in GENERATE_FIGURES:
        value = m.median(name)
        if value is not None:
            out.append((label, f"{significant(value * factor)} {unit}"))
    fraction = m.median(decode_bandwidth.FRACTION)
    if fraction is not None:
        out.append(("bandwidth", percent(fraction)))
    out.append(("generate", f"{significant(m.median('generate_time') * 1e3)} ms"))
    return out
