"""A real sweep on the CPU: eager, Inductor, PyTorch/XLA lazy tensors and PyTorch/XLA + openxla, eval and
train, one child per config; then resume adds nothing. Where torch-xla can't run (another torch than 2.9), its
configs are dropped with that reason and the others run alike."""

import pytest

from helpers import XLA, read_jsonl, run_runner, xla_missing
from benchmarks.plumbing import machine_facts, torch_support

pytestmark = pytest.mark.integration  # every test here starts real sweeps or children

MATRIX = ["--accelerator=cpu", "--xla=None", "--xla=PJRT", "--dynamo=None", "--dynamo=inductor", "--dynamo=openxla",
          "--test=eval", "--test=train", "-k", "^multi_output$", "--repeat=2", "--warmup=1"]
XLA_METRICS = ["trace_total_time", "trace_per_iter_time", "xla_CompileTime_time_s", "xla_CompileTime_number",
               "xla_ExecuteTime_time_s", "xla_ExecuteTime_number"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    result = run_runner(*MATRIX, f"--output-dirname={out}", check_rc=0)
    return result, out, read_jsonl(out / "results.jsonl")


def backend(record):
    e = record["experiment"]
    return (e["xla"], e["dynamo"], e["test"])


NATIVE = [(None, None, "eval"), (None, None, "train"), (None, "inductor", "eval"), (None, "inductor", "train")]
WITH_XLA = [("PJRT", None, "eval"), ("PJRT", None, "train"), ("PJRT", "openxla", "eval"), ("PJRT", "openxla", "train")]
EXPECTED = NATIVE + (WITH_XLA if XLA else [])


def test_every_config_ran_ok_in_order(sweep):
    result, out, records = sweep
    assert [backend(r) for r in records] == EXPECTED
    if not XLA:  # this torch has no torch-xla beside it: each XLA config dropped, saying why, and the rest ran
        assert result.stderr.count(f"torch_xla is not usable: {xla_missing()}") == 4  # each XLA config, why
    for record in records:
        assert record["status"] == "ok", record["error"]
        assert record["error"] is None and record["verification_code"] == "VERIFIER_SKIPPED"


def test_records_carry_timings_warmup_and_the_real_batch_size(sweep):
    _, _, records = sweep
    timestamps = {r["timestamp"] for r in records}
    assert len(timestamps) == 1  # one sweep, one timestamp
    for record in records:
        metrics = record["metrics"]
        assert len(metrics["total_time"]) == 2 and len(metrics["per_iter_time"]) == 2
        assert all(t > 0 for t in metrics["total_time"])
        assert len(metrics["warmup_time"]) == 1 and record["warmup"] == 1
        assert len(metrics["peak_rss_bytes"]) == 2 and metrics["peak_rss_bytes"][0] > 50 * 2**20
        assert all(isinstance(v, list) for v in metrics.values())  # upstream's analyzer reads arrays only
        assert record["experiment"]["batch_size"] == 16 and record["requested_batch_size"] is None
        assert record["experiment"]["accelerator_model"]
        assert record["schema_version"] == 1
        env = record["environment"]
        assert env["torch"] == torch_support.installed_torch()[0]  # as torch names itself: 2.9.1+cu128
        assert env["torch_xla"] == machine_facts.package_version("torch_xla") and env["cpu_count"] >= 1
        assert env["hostname"]


def test_xla_configs_have_upstreams_xla_metrics_and_others_do_not(sweep):
    _, _, records = sweep
    for record in records:
        metrics = record["metrics"]
        if record["experiment"]["xla"]:
            for name in XLA_METRICS:
                assert len(metrics[name]) == 2, name
            assert metrics["xla_ExecuteTime_number"][0] >= 1  # the timed run executed a compiled graph
        else:
            assert not any(name in metrics for name in XLA_METRICS)


def test_logs_and_the_end_of_sweep_table(sweep):
    result, out, _ = sweep
    logs = sorted(p.name for p in (out / "logs" / "multi_output").iterdir())
    xla_logs = ["cpu-openxla-lazytensor-eval.log", "cpu-openxla-lazytensor-train.log", "cpu-openxla-dynamo-eval.log",
                "cpu-openxla-dynamo-train.log"]
    assert logs == sorted(["cpu-eager-eval.log", "cpu-eager-train.log", "cpu-inductor-eval.log",
                           "cpu-inductor-train.log"] + (xla_logs if XLA else []))
    table = result.stdout
    assert "eager ms" in table and "inductor ms" in table and ("openxla+dynamo ms" in table) == XLA
    assert f"{len(EXPECTED)} ok, 0 failed, 0 skipped" in table
    assert f"results: {out}/results.jsonl" in table and "resume:" in table


def test_a_second_run_resumes_and_adds_nothing(sweep):
    _, out, records = sweep
    again = run_runner(*MATRIX, f"--output-dirname={out}", check_rc=0)
    assert f"0 to run, {len(EXPECTED)} already in" in again.stderr
    assert len(read_jsonl(out / "results.jsonl")) == len(records)
