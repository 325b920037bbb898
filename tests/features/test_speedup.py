"""--speedup=paired: the backend's child also times eager, alternating with the backend in one process. The
interval and the summary (pure functions), which configs can be paired, the resume fingerprint, and real sweeps
(the dummy mlp, eager and aot_eager): the record's two series and their ratios, the dashboard, the speedup
report, compare.py and the end-of-sweep table use the paired speedup and say so; an isolated sweep is unchanged;
resume tells paired from isolated."""

import csv
import io
import json
import statistics

import pytest

from benchmarks.config import experiment_config
from benchmarks.features import speedup
from benchmarks.results import records
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities
from helpers import call_runner, read_jsonl, run_runner, run_tool

SWEEP = ("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=aot_eager",
         "--test=eval", "--repeat=3", "--warmup=1", "--verify")


# ---------------------------------------------------------------- pure parts


def test_the_interval_of_the_median_is_of_order_statistics_with_its_coverage():
    values = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5]  # unordered: the interval is of the sorted values
    low, high, coverage = speedup.median_interval(values)
    # 10 values: x(2)..x(9) misses the median with probability 2 * P(Binomial(10, 1/2) <= 1) = 22/1024.
    assert (low, high) == (2, 9) and coverage == pytest.approx(1 - 22 / 1024)
    # Too few for 95%: the smallest and largest, with the coverage they have (1 - 2^(1-n)).
    assert speedup.median_interval([3, 1, 2]) == (1, 3, 0.75)
    assert speedup.median_interval([1, 2, 3, 4, 5, 6])[2] >= 0.95


def test_a_pair_ratio_is_eager_over_backend_of_the_same_pair():
    found = speedup.summarize([4.0, 6.0, 9.0], [2.0, 2.0, 3.0])
    assert found["ratios"] == [2.0, 3.0, 3.0] and found["pairs"] == 3
    assert found["median"] == 3.0
    assert found["ratio_of_medians"] == pytest.approx(6.0 / 2.0)  # the harness's: median eager / median backend
    assert (found["eager_median"], found["backend_median"]) == (6.0, 2.0)
    assert found["interval"]["low"] <= found["median"] <= found["interval"]["high"]
    assert speedup.summarize([1.0], [0.0]) is None  # no positive pair: no summary


def test_eager_is_never_paired_and_xla_is_refused_with_the_reason():
    configs = matrix.expand({"accelerator": ["cpu"], "xla": [None, "PJRT"], "dynamo": [None, "inductor", "export"],
                             "test": ["eval"], "speedup": ["paired"]})
    by_backend = {(c.xla, c.dynamo): c.speedup for c in configs}
    assert by_backend[(None, None)] == "isolated"  # the baseline config: the one an isolated sweep has
    assert by_backend[(None, "inductor")] == by_backend[(None, "export")] == "paired"
    caps = Capabilities(dynamo_backends=("inductor",), torch_xla_error=None, xla_devices=("CPU",))
    lazy = next(c for c in configs if c.xla and c.dynamo is None)
    assert "XLA" in matrix.unsupported_reason(lazy, caps)
    assert matrix.unsupported_reason(next(c for c in configs if c.dynamo == "inductor"), caps) is None


def test_a_paired_config_has_another_fingerprint_and_isolated_keeps_the_old_one():
    model = {"suite_name": "dummy", "model_name": "mlp"}
    base = experiment_config.ExperimentConfig("cpu", None, "inductor", "eval")
    paired = base.with_(speedup="paired").to_dict()
    isolated = base.to_dict()
    assert records.fingerprint(model, paired, None, False) != records.fingerprint(model, isolated, None, False)
    without_key = {k: v for k, v in isolated.items() if k != "speedup"}  # a record written before the key
    assert records.fingerprint(model, isolated, None, False) == records.fingerprint(model, without_key, None, False)
    with pytest.raises(experiment_config.ConfigError):
        experiment_config.ExperimentConfig.from_dict(dict(isolated, speedup="together"))


# ---------------------------------------------------------------- real sweeps


@pytest.fixture(scope="module")
def paired(tmp_path_factory):
    out = tmp_path_factory.mktemp("paired")
    result = run_runner(*SWEEP, "--speedup=paired", f"--output-dirname={out}", check_rc=0)
    return out, result


@pytest.fixture(scope="module")
def resumed(paired, tmp_path_factory):
    """The paired sweep's file resumed by the paired sweep (nothing left to run), then by the isolated sweep, which
    runs its aot_eager config only: eager, never paired, is the same config, done. Its two isolated records are an
    isolated sweep's."""
    out = tmp_path_factory.mktemp("resumed")
    (out / "results.jsonl").write_text((paired[0] / "results.jsonl").read_text())
    again = run_runner(*SWEEP, "--speedup=paired", f"--output-dirname={out}", check_rc=0)
    run_runner(*SWEEP, f"--output-dirname={out}", check_rc=0)
    return out, again


def backend_record(found: list, dynamo) -> dict:
    return next(r for r in found if r["experiment"]["dynamo"] == dynamo)


@pytest.mark.integration
def test_the_paired_record_holds_both_series_and_the_ratio_of_each_pair(paired):
    found = read_jsonl(paired[0] / "results.jsonl")
    record = backend_record(found, "aot_eager")
    assert record["status"] == "ok" and record["experiment"]["speedup"] == "paired"
    metrics = record["metrics"]
    assert len(metrics["per_iter_time"]) == len(metrics["eager_per_iter_time"]) == 3  # the backend's, and eager's
    assert len(metrics["eager_total_time"]) == 3 and len(metrics["eager_warmup_time"]) == 1
    summary = record["paired_speedup"]
    assert summary["pairs"] == 3
    assert summary["ratios"] == [e / b for e, b in zip(metrics["eager_per_iter_time"], metrics["per_iter_time"])]
    assert summary["median"] == statistics.median(summary["ratios"])
    assert summary["interval"]["low"] == min(summary["ratios"]) and summary["interval"]["high"] == max(summary["ratios"])
    assert summary["interval"]["confidence"] == 0.75  # three pairs: the range covers the median 75% of the time
    eager = backend_record(found, None)  # the baseline config is never paired
    assert eager["experiment"]["speedup"] == "isolated" and "paired_speedup" not in eager
    assert "eager_per_iter_time" not in eager["metrics"]
    # The end-of-sweep table shows the paired speedup and its interval, and says what it is.
    assert "x paired, " in paired[1].stdout + paired[1].stderr


@pytest.mark.integration
def test_the_dashboard_and_the_speedup_report_use_the_paired_speedup_and_say_so(paired):
    results = paired[0] / "results.jsonl"
    summary = backend_record(read_jsonl(results), "aot_eager")["paired_speedup"]
    result = run_tool("aggregate.py", results, "--report=dashboard", "--format=csv", "--accelerator=cpu", check_rc=0)
    rows = {r["Backend"]: r for r in csv.DictReader(io.StringIO(result.stdout[2:]))}  # the header after "# "
    assert rows["aot_eager"]["speedup"] == "paired" and rows["aot_eager"]["Passed"] == "1"
    assert float(rows["aot_eager"]["GeomeanSpeedup"]) == pytest.approx(summary["median"], rel=1e-3)
    table = run_tool("aggregate.py", results, "--report=dashboard", "--format=tab", "--accelerator=cpu", check_rc=0)
    assert "Paired: 1 config(s)" in table.stdout + table.stderr
    report = run_tool("aggregate.py", results, "--format=csv", "--accelerator=cpu", check_rc=0)
    assert "paired: 1 model" in report.stdout + report.stderr
    header, values = report.stdout[2:].splitlines()[:2]
    speedups = dict(zip(header.split(","), values.split(",")))
    assert float(speedups["Speedup(aot_eager[paired]/Oldest Eager)"]) == pytest.approx(summary["median"], rel=1e-3)


@pytest.mark.integration
def test_compare_compares_paired_speedups_and_says_which_it_used(paired):
    results = paired[0] / "results.jsonl"
    result = run_tool("compare.py", results, results, "--metric=paired", "--format=json", check_rc=0)
    rows = {r["experiment"]["dynamo"]: r for r in json.loads(result.stdout)["rows"]}
    summary = backend_record(read_jsonl(results), "aot_eager")["paired_speedup"]
    row = rows["aot_eager"]
    assert row["time_ratio"] == pytest.approx(1.0)  # the same records on both sides
    assert row["paired_speedup"] == {"control": summary["median"], "treatment": summary["median"]}
    assert "the verdict is of it" in row["note"]
    assert rows[None]["verdict"] == "no-data" and "--speedup=paired" in rows[None]["note"]


@pytest.mark.integration
def test_an_isolated_sweep_is_unchanged(resumed, tmp_path):
    lines = [line for line in (resumed[0] / "results.jsonl").read_text().splitlines(keepends=True)
             if json.loads(line)["experiment"]["speedup"] == "isolated"]  # the isolated sweep's two records
    found = [json.loads(line) for line in lines]
    assert sorted(r["experiment"]["dynamo"] or "" for r in found) == ["", "aot_eager"]
    for record in found:
        assert "paired_speedup" not in record
        assert not any(name.startswith("eager_") for name in record["metrics"])
    isolated = tmp_path / "results.jsonl"
    isolated.write_text("".join(lines))
    table = run_tool("aggregate.py", isolated, "--report=dashboard", "--format=tab", "--accelerator=cpu", check_rc=0)
    assert "Paired" not in table.stdout + table.stderr


@pytest.mark.integration
def test_resume_treats_paired_and_isolated_as_different_runs(resumed):
    out, again = resumed
    assert "(2 already done)" in again.stderr + again.stdout
    # The isolated sweep on the paired file: eager is the same config (done), aot_eager isolated is not.
    found = read_jsonl(out / "results.jsonl")
    assert sorted((r["experiment"]["dynamo"] or "", r["experiment"]["speedup"]) for r in found) == [
        ("", "isolated"), ("aot_eager", "isolated"), ("aot_eager", "paired")]


@pytest.mark.integration
def test_an_eager_failure_in_a_paired_child_is_eager_s(tmp_path):
    # third_call_raises fails from its third call on: the paired child's eager warm-up (first) makes that call.
    run_runner("--suite-name=faults", "-k", "^third_call_raises$", "--accelerator=cpu", "--xla=None",
               "--dynamo=aot_eager", "--test=eval", "--speedup=paired", "--warmup=3", "--repeat=1",
               f"--output-dirname={tmp_path}", check_rc=1)  # a failed config: exit 1
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "error" and record["error"]["phase"] == "reference"
    assert record["accuracy"] == "eager_fail_to_run"  # not the backend's fail_to_run
