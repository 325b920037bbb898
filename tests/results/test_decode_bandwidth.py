"""Decode's achieved bandwidth (gpt-fast's GB/s) and its fraction of the machine's bandwidth ceiling
(results/decode_bandwidth.py): from the record's roofline bytes per decoded token, its decode tokens per second and
environment.ceilings; absent, never made up, where the record lacks either; no fraction above 1."""

import pytest

from benchmarks.results import decode_bandwidth

GB = 1e9


def record(bytes_per_token=2.4 * GB, rates=(4.0, 5.0), ceiling=20 * GB):
    out = {"metrics": {"decode_tokens_per_second": list(rates)}, "environment": {}}
    if bytes_per_token is not None:
        out["roofline"] = {"bytes_per_token": bytes_per_token, "flops_per_token": 1.2e9}
    if ceiling is not None:
        out["environment"]["ceilings"] = {"bytes_per_second": ceiling, "flops_per_second": {"float32": 1e12}}
    return out


def test_bytes_per_second_is_bytes_per_token_times_tokens_per_second_and_its_share_of_the_ceiling():
    found = decode_bandwidth.figures(record())
    assert found["decode_bytes_per_second"] == [pytest.approx(9.6 * GB), pytest.approx(12 * GB)]
    assert found["decode_bandwidth_fraction"] == [pytest.approx(0.48), pytest.approx(0.6)]


def test_without_the_roofline_or_the_ceiling_the_figure_is_absent():
    assert decode_bandwidth.figures(record(bytes_per_token=None)) == {}
    assert decode_bandwidth.figures({"metrics": {"decode_tokens_per_second": [4.0]}}) == {}
    assert decode_bandwidth.figures(record(rates=())) == {}
    assert decode_bandwidth.figures({**record(), "roofline": {"why_not": "counting failed"}}) == {}
    no_ceiling = decode_bandwidth.figures(record(ceiling=None))
    assert set(no_ceiling) == {"decode_bytes_per_second"}


def test_a_fraction_above_one_is_not_given():
    found = decode_bandwidth.figures(record(ceiling=10 * GB))  # 12 GB/s achieved against a 10 GB/s ceiling
    assert set(found) == {"decode_bytes_per_second"}
