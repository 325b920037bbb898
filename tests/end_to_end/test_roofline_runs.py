"""The roofline of real configs (docs/roofline.md): a sweep of the dummy models (inference and training) and the
microbench operators (matmul, and add: the memory-bound one) measures the machine's ceilings once into a fresh cache,
and every record gets a fraction of its attainable ceiling strictly above 0 and at most 1, with the bound that its
counts and the ceilings choose (an LLM row's per-token figures: test_generation_runs.py). A fraction above 1 (a
wrong count or ceiling) leaves the record without one, and fails here."""

import os

import pytest

from helpers import read_jsonl, run_runner

from benchmarks.plumbing import user_cache

pytestmark = pytest.mark.integration

CPU = ("--accelerator=cpu", "--xla=None", "--dynamo=None", "--repeat=3")


def assert_consistent(record):
    roofline = record["roofline"]
    assert "why_not" not in roofline, (record["model"]["model_name"], roofline)
    fraction = roofline["fraction_of_attainable"]
    assert 0 < fraction <= 1
    ceilings = record["environment"]["ceilings"]
    peak = ceilings["flops_per_second"][roofline.get("ceiling_dtype") or roofline["dtype"]]  # a slow dtype: float32's
    assert roofline["peak_flops_per_second"] == peak
    compute, memory = roofline["flops_per_iteration"] / peak, roofline["bytes_per_iteration"] / roofline[
        "peak_bytes_per_second"]
    assert roofline["bound"] == ("compute" if compute >= memory else "memory")
    assert roofline["attainable_flops_per_second"] <= peak
    assert roofline["count_seconds"] >= 0  # the counting's own time, outside the timed runs (its cost: make bench-roofline)
    metrics = record["metrics"]
    assert len(metrics["achieved_flops_per_second"]) == len(metrics["per_iter_time"])
    if "per_repeat_why_not" not in roofline:  # else a lucky run beat the ceilings: no run's fraction is given
        assert len(metrics["fraction_of_attainable"]) == len(metrics["per_iter_time"])
    assert all(0 < value <= 1 for value in metrics.get("fraction_of_attainable", ()))


def test_dummy_models_and_microbench_operators_stay_under_their_ceilings(tmp_path):
    env = dict(os.environ, **{user_cache.CACHE_ENV: str(tmp_path / "cache")})
    run_runner("--suite-name=dummy", *CPU, "--test=eval", "--test=train", f"--output-dirname={tmp_path / 'dummy'}",
               env=env)
    # small matmuls (far under the FLOP ceiling even when a busy machine's ceilings are low), and adds in the caches
    # and over them (their ceiling: the cache's bandwidth for the first, the memory's for the second)
    run_runner("--suite-name=microbench", *CPU, "--test=eval", "--op=matmul", "--shapes=32x32x32", "--shapes=64x64x64",
               f"--output-dirname={tmp_path / 'matmul'}", env=env)
    run_runner("--suite-name=microbench", *CPU, "--test=eval", "--op=add", "--shapes=32x32x32", "--shapes=128x128x128",
               f"--output-dirname={tmp_path / 'add'}", env=env)
    records = [r for part in ("dummy", "matmul", "add") for r in read_jsonl(tmp_path / part / "results.jsonl")]
    assert len(records) == 10 and all(r["status"] == "ok" for r in records)
    for record in records:
        assert_consistent(record)
    bounds = {r["model"]["model_name"]: r["roofline"]["bound"] for r in records}
    # an add's 1/12 FLOP per byte is memory-bound on any machine (whether a small matmul is depends on the measured
    # ratio of the ceilings; assert_consistent checked every bound against it)
    assert bounds["add-float32-128x128x128"] == "memory"
    # measured once, by the first child, into the cache; every later child read it (or, having beaten ceilings that a
    # busy machine made low, measured them again)
    measured = [r for r in records if not r["environment"]["ceilings"]["cached"]
                and not r["environment"]["ceilings"].get("remeasured")]
    assert len(measured) == 1 and len(list((tmp_path / "cache").glob("ceilings-*.json"))) == 1


# An LLM row's per-token figures: test_generation_runs.py's eager sweep, whose Qwen3 row (full width, 2 layers, 4 + 3
# tokens) is this file's former generate run, config for config (generation_checks.assert_decode_roofline).


def test_no_roofline_leaves_it_out_and_keeps_the_fingerprint(tmp_path):
    args = ("--suite-name=dummy", "-k", "^mlp$", *CPU, "--test=eval", f"--output-dirname={tmp_path}")
    run_runner(*args, "--no-roofline")
    [record] = read_jsonl(tmp_path / "results.jsonl")
    assert "roofline" not in record and "ceilings" not in record["environment"]
    assert "fraction_of_attainable" not in record["metrics"]
    again = run_runner(*args)  # the same config with the roofline on: already done (the flag is no part of the config)
    assert "1 already done" in again.stdout + again.stderr
    assert len(read_jsonl(tmp_path / "results.jsonl")) == 1
