"""scripts/bench/llm.py's plain decode rate (fast): the new tokens after the first over the time they add to a
generate call of one token, from the medians of both; the run itself is make bench-llm's."""

import pytest

from benchmarks.suites import huggingface_llm
from scripts.bench import llm as bench_llm


def test_the_plain_loops_decode_rate_is_the_extra_tokens_over_the_extra_time():
    # 16 new tokens take 2.0 s, one takes 0.5 s: 15 decode steps in 1.5 s
    assert bench_llm.plain_rate([2.0, 2.2, 1.9], [0.5, 0.6, 0.4], 16) == pytest.approx(10.0)
    assert bench_llm.MODEL in huggingface_llm.NAMES


def test_the_ratios_interval_is_the_order_statistics_that_hold_the_median():
    # 6 pairs: only the extremes reach 90 % (1 - 2/64 = 96.9 %; the next pair in holds it 1 - 2 * 7/64 = 78 %)
    low, high, held = bench_llm.median_interval([0.97, 0.91, 1.02, 0.95, 0.99, 0.96])
    assert (low, high) == (0.91, 1.02) and held == pytest.approx(1 - 2 / 64)
    # 10 pairs: the second from each end holds it 1 - 2 * 11/1024 = 97.9 %, the third 1 - 2 * 56/1024 = 89 %
    low, high, held = bench_llm.median_interval([float(v) for v in range(10)])
    assert (low, high) == (1.0, 8.0) and held == pytest.approx(1 - 2 * 11 / 1024)
    assert bench_llm.median_interval([0.9, 1.1]) == (0.9, 1.1, pytest.approx(0.5))  # too few pairs: said, not hidden
