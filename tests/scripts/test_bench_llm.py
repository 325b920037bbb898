"""scripts/bench_llm.py's plain decode rate (fast): the new tokens after the first over the time they add to a
generate call of one token, from the medians of both; the run itself is make bench-llm's."""

import pytest

from helpers import load_script

from benchmarks.suites import huggingface_llm


def test_the_plain_loops_decode_rate_is_the_extra_tokens_over_the_extra_time():
    bench = load_script("bench_llm")
    # 16 new tokens take 2.0 s, one takes 0.5 s: 15 decode steps in 1.5 s
    assert bench.plain_rate([2.0, 2.2, 1.9], [0.5, 0.6, 0.4], 16) == pytest.approx(10.0)
    assert bench.MODEL in huggingface_llm.NAMES
