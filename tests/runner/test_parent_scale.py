"""What keeps the parent linear at 100k configs and 1M records (docs/parallel.md, "A parent that scales"): the
streamed resume reads what the old one read, a fingerprint memo that agrees with the fingerprint, model order
by position, one fsync per batch. The figures themselves are `make bench-scale`'s, never a timed test."""

import dataclasses
import json
import math

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.results import records
from benchmarks.runner.plan import Config, Plan
from benchmarks.runner.resume import in_model_order, load_earlier
from scripts.bench import scale as bench_scale

EAGER = ExperimentConfig.from_dict({"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval"})


def record(name, status="ok", run_seconds=2.0, round_index=0, **extra):
    # a plain dict: the lines a reader meets hold keys no writer declares (old and upstream records)
    out = dict(records.new_record({"suite_name": "dummy", "model_name": name}, EAGER.to_dict(), repeat=1,
                                  iterations_per_run=1, warmup=1, timestamp=1.0, verify=False,
                                  requested_batch_size=None, environment={}))
    out.update(status=status, run_seconds=run_seconds, round=round_index, **extra)
    return out


def test_resume_reads_every_line_the_json_reader_reads_nan_and_huge_integers_included(tmp_path):
    path = tmp_path / "results.jsonl"
    lines = [json.dumps(record("a")), json.dumps(record("b", metrics_extra=float("nan"))),
             json.dumps(record("c", model_info={"parameters": 2**70})), json.dumps(record("d", note="\ud800")),
             "not json", json.dumps(record("e", status="error"))[:-5]]
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    problems = []
    read = [r for _, r in records.iter_records(str(path), problems)]
    assert [r["model"]["model_name"] for r in read] == ["a", "b", "c", "d"]
    assert math.isnan(read[1]["metrics_extra"]) and read[2]["model_info"]["parameters"] == 2**70
    assert [p.line for p in problems] == [5, 6] and "torn" in problems[1].message
    assert list(records.stream_records(str(path))) == records.read_records(str(path))


def test_the_fingerprint_memo_agrees_with_the_fingerprint_for_every_record():
    memo = records.RecordFingerprints()
    cases = [record("a"), record("a", round_index=2), record("a", verify=True), record("b"),
             record("a", requested_batch_size=8), record("c", model_info={"big": 2**70}), {"model": None},
             dict(record("a"), model={"suite_name": "dummy", "model_name": "a", "params": {"n": 2**70}})]
    for case in cases * 2:  # the second time from the memo
        assert memo(case) == records.record_fingerprint(case)


def test_load_earlier_keeps_status_and_run_time_per_config(tmp_path):
    path = tmp_path / "results.jsonl"
    with records.ResultsWriter(str(path)) as writer:
        for case in (record("a", "error", 5.0), record("a", "ok", 7.0), record("b", "crash", 3.0),
                     record("b", "ok", 4.0, round_index=1)):
            writer.append(case, sync=False)
    earlier = load_earlier(str(path), retry_failed=True)
    first_a, first_b = records.record_fingerprint(record("a")), records.record_fingerprint(record("b"))
    assert earlier.records == 4 and first_a in earlier.done and first_b not in earlier.done
    assert records.record_fingerprint(record("b", round_index=1)) in earlier.done
    assert earlier.run_seconds == {first_a: 7.0, first_b: 4.0}  # a later round's time counts for the config


def test_a_configs_fingerprint_is_computed_once_and_a_round_is_its_own():
    config = Config({"suite_name": "dummy", "model_name": "m"}, EAGER)
    again = dataclasses.replace(config, round=1)
    assert config.fingerprint is config.fingerprint
    assert again.fingerprint != config.fingerprint and again.first_round.fingerprint == config.fingerprint


def test_model_order_is_the_plans_even_for_models_that_compare_equal():
    models = [{"suite_name": "s", "model_name": f"m{i}"} for i in range(50)] + [{"suite_name": "s", "model_name": "m0"}]
    configs = [Config(model, EAGER) for model in reversed(models)]
    plan = Plan(models, [EAGER], [], configs[::2], [(c, "why") for c in configs[1::2]])
    ordered = in_model_order(plan)
    positions = [next(i for i, m in enumerate(models) if m is c.model) for c, _ in ordered]
    assert positions == sorted(positions) and len(ordered) == len(models)


def test_bench_scale_times_the_sweeps_own_steps(tmp_path):
    """scripts/bench/scale.py runs run_locked itself (a fake executor, no child) and reports every step run_locked
    times, in its order: a step added to the sweep is measured, never re-sequenced by the script."""
    import importlib.util
    figures = bench_scale.measure(40, rate=1e6, workdir=str(tmp_path))
    steps = figures["steps"]
    assert list(steps) == ["dry-run", "resume", "longest-first", "noise-check", "sweep", "end-of-sweep"]
    assert steps["resume"][3].startswith("400 records") and steps["resume"][3].endswith(", 20 left")  # half was done
    written = records.read_records(str(tmp_path / "results.jsonl"))
    assert len(written) == 400 + 20 and all(wall >= 0 and peak > 0 for wall, _, peak, _ in steps.values())
