"""The roofline's arithmetic (results/roofline_figures.py): the bound chosen right, the fraction never above 1 (a
fraction above 1 is refused, with why), the memory level by the bytes an iteration moves, the ceiling's dtype."""

import math

import pytest

from benchmarks.results import roofline_figures as rf

CEILINGS = {"flops_per_second": {"float32": 100e9, "bfloat16": 400e9}, "bytes_per_second": 10e9,
            "cache_bytes_per_second": 50e9, "last_level_cache_bytes": 1 << 20}


def test_a_compute_bound_iteration_reads_against_the_flop_ceiling():
    # 2e9 FLOPs: 20 ms at the FLOP ceiling; 100 MB: 10 ms at the bandwidth ceiling
    out = rf.figures(2e9, 100e6, [0.04, 0.05, 0.06], CEILINGS, "float32")
    assert out["bound"] == "compute" and out["memory_level"] == "memory"
    assert out["attainable_flops_per_second"] == 100e9  # min(100e9, 20 FLOP/byte x 10e9)
    assert math.isclose(out["fraction_of_attainable"], (2e9 / 100e9) / 0.05)
    assert math.isclose(out["achieved_flops_per_second"] / out["attainable_flops_per_second"],
                        out["fraction_of_attainable"])
    assert out["per_repeat"]["fraction_of_attainable"] == pytest.approx([0.5, 0.4, 1 / 3])


def test_a_memory_bound_iteration_reads_against_the_bandwidth_ceiling():
    out = rf.figures(1e6, 400e6, [0.1], CEILINGS, "float32")
    assert out["bound"] == "memory"
    assert out["attainable_flops_per_second"] == pytest.approx(out["arithmetic_intensity"] * 10e9)
    # the fraction of a memory-bound iteration is its share of the bandwidth
    assert out["fraction_of_attainable"] == pytest.approx(out["achieved_bytes_per_second"] / 10e9)
    assert 0 < out["fraction_of_attainable"] <= 1


def test_work_without_flops_still_has_a_bandwidth_fraction():
    out = rf.figures(0, 400e6, [0.1], CEILINGS, "float32")
    assert out["bound"] == "memory" and out["fraction_of_attainable"] == pytest.approx(0.4)


def test_bytes_that_fit_in_the_last_level_cache_read_against_the_cache_ceiling():
    out = rf.figures(1e3, 1 << 19, [1e-4], CEILINGS, "float32")
    assert out["memory_level"] == "cache" and out["peak_bytes_per_second"] == 50e9


def test_a_fraction_above_one_is_refused_with_why():
    out = rf.figures(1e12, 1e6, [0.001], CEILINGS, "float32")  # 1000 TFLOP/s on a 0.1 TFLOP/s ceiling
    assert rf.FRACTION not in out and rf.FRACTION not in out["per_repeat"]
    assert out["why_not"].startswith("a fraction above 1")
    assert out[rf.BEATEN] == 10000  # the child measures the ceilings again on this mark
    # one timed run above the ceiling under a median below it: the median's fraction, no run's
    out = rf.figures(1e9, 1e6, [0.1, 0.1, 0.001], CEILINGS, "float32")
    assert out[rf.FRACTION] == pytest.approx(0.1) and out[rf.BEATEN] == pytest.approx(10)
    assert rf.FRACTION not in out["per_repeat"] and out["per_repeat_why_not"].startswith("a timed run's fraction")
    assert len(out["per_repeat"][rf.ACHIEVED_FLOPS]) == 3


def test_no_ceiling_no_fraction_and_why():
    assert rf.figures(1e9, 1e6, [0.1], None, "float32")["why_not"] == "no ceilings measured"
    assert "float16" in rf.figures(1e9, 1e6, [0.1], CEILINGS, "float16")["why_not"]
    assert rf.figures(1e9, 1e6, [0.1], {"why_not": "XLA configs: x"}, "float32")["why_not"] == "XLA configs: x"
    assert rf.figures(1e9, 1e6, [], CEILINGS, "float32")["why_not"] == "no positive timed run"


def test_the_ceilings_dtype():
    assert rf.ceiling_dtype("float32", "cuda", "high") == "tf32"
    assert rf.ceiling_dtype("float32", "cuda", "highest") == "float32"
    assert rf.ceiling_dtype("float32", "cpu", "high") == "float32"
    assert rf.ceiling_dtype("bfloat16", "cuda", "high") == "bfloat16"


def test_fraction_of_a_record():
    assert rf.fraction_of({"roofline": {"fraction_of_attainable": 0.5}}) == 0.5
    assert rf.fraction_of({"roofline": {"why_not": "x"}}) is None
    assert rf.fraction_of({}) is None and rf.fraction_of({"roofline": {"fraction_of_attainable": True}}) is None
