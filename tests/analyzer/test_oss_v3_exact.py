"""result_analyzer.py --format=oss-benchmark writes records that PyTorch's OSS benchmark table takes as they are
(every field a column of its type, every extra_info value text), in our names or the TorchInductor dashboard's
(--hud-dashboard=inductor), as a JSON list or gzip'd JSON lines (issue 63)."""

import gzip
import json
import statistics

import pytest

from benchmarks.analyzer import oss_v3_schema
from helpers import GOLDEN, call_tool

OURS = GOLDEN / "ours_cpu.jsonl"


def records_of(path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def steady_median(record: dict) -> float:
    """The median of the timed samples every tool reads (an upstream record's first holds compilation)."""
    from benchmarks.results.measurement import Measurement

    return statistics.median(Measurement(record).per_iter_time())


def written(*args) -> list:
    return json.loads(call_tool("result_analyzer.py", *args, "--format=oss-benchmark", "-o", "-", check_rc=0).stdout)


@pytest.mark.parametrize("kind", [(), ("--hud-dashboard=inductor",), ("--baseline-backend=eager",)])
def test_every_field_is_a_column_of_its_type_and_every_extra_info_is_text(kind):
    rows = written(OURS, *kind)
    assert rows
    for row in rows:
        assert oss_v3_schema.problems(row) == [], row
        for section in ("benchmark", "model", "metric"):
            assert all(isinstance(v, str) for v in row[section].get("extra_info", {}).values())
        runner = row["runners"][0]
        info = row["benchmark"]["extra_info"]  # the device (cpu, tpu here), then its model
        assert runner["name"] == info["device"] in ("cpu", "tpu") and runner["type"] == info["arch"] != ""
        assert all(set(dep) == {"repo", "branch", "sha", "version", "extra_info"}
                   for dep in row["dependencies"].values())


def test_the_field_check_refuses_what_the_table_would_not_take():
    row = written(OURS)[0]
    assert oss_v3_schema.problems(row) == []
    bad = json.loads(json.dumps(row))
    bad["benchmark"]["extra_info"]["batch_size"] = 16  # a number where the table holds text
    bad["runners"][0]["cpu_count"] = -1
    bad["metric"]["unit"] = "ms"  # not a column: the upload would drop it
    bad["model"]["origins"] = "dummy"
    del bad["metric"]["name"]
    found = "\n".join(oss_v3_schema.problems(bad))
    for expected in ("record.benchmark.extra_info['batch_size']: int, not text", "record.runners[0].cpu_count: -1",
                     "record.metric.unit: not a column", "record.model.origins: str, not a list",
                     "metric.name is missing"):
        assert expected in found


def test_our_records_round_the_experiment_config_and_units_into_text():
    rows = written(OURS)
    record = next(r for r in records_of(OURS) if r.get("status") == "ok")
    row = next(r for r in rows if r["model"]["name"] == record["model"]["model_name"]
               and json.loads(r["benchmark"]["extra_info"]["experiment"]) == record["experiment"])
    assert row["benchmark"]["extra_info"]["batch_size"] == json.dumps(record["experiment"]["batch_size"])
    assert row["model"]["backend"] == "eager" and row["benchmark"]["extra_info"]["device"] == "cpu"
    assert {r["metric"]["extra_info"]["unit"] for r in rows if r["metric"]["name"] == "per_iter_time_ms"} == {"ms"}


def test_gzipped_json_lines_hold_the_same_records_one_a_line(tmp_path):
    listed = written(OURS)
    out = tmp_path / "oss.jsonl.gz"
    call_tool("result_analyzer.py", OURS, "--format=oss-benchmark", "-o", out, check_rc=0)
    lines = gzip.decompress(out.read_bytes()).decode("utf-8").splitlines()
    assert [json.loads(line) for line in lines] == listed
    plain = tmp_path / "rows.txt"
    call_tool("result_analyzer.py", OURS, "--format=oss-benchmark", "-o", plain, "--oss-layout=jsonl", check_rc=0)
    assert [json.loads(line) for line in plain.read_text().splitlines()] == listed


def test_the_inductor_dashboards_names_grouping_and_figures():
    rows = written(OURS, "--hud-dashboard=inductor")
    assert {r["benchmark"]["name"] for r in rows} == {"TorchInductor"}
    assert {r["metric"]["name"] for r in rows} <= {"accuracy", "speedup", "abs_latency", "compilation_latency",
                                                   "compression_ratio", "dynamo_peak_mem", "eager_peak_mem", "mfu",
                                                   "memory_bandwidth"}
    assert "eager" not in {r["model"]["backend"] for r in rows}  # eager is the baseline, not a row
    ok = [r for r in records_of(OURS) if r.get("status") == "ok"]
    for record in (r for r in ok if r["experiment"]["dynamo"] == "inductor"):
        mine = [r for r in rows if json.loads(r["benchmark"]["extra_info"]["experiment"]) == record["experiment"]
                and r["model"]["name"] == record["model"]["model_name"]
                and json.loads(r["benchmark"]["extra_info"]["timestamp"]) == record["timestamp"]]
        by_name = {r["metric"]["name"]: r["metric"] for r in mine}
        assert len(by_name) == len(mine)  # one record per config and metric
        assert by_name["accuracy"]["extra_info"]["benchmark_values"] == record.get("accuracy", "not_checked")
        assert "benchmark_values" not in by_name["accuracy"]  # a text result has no numbers
        assert by_name["abs_latency"]["benchmark_values"] == pytest.approx([steady_median(record) * 1e3])
        eager = [r for r in ok if r["model"] == record["model"] and r["experiment"]["dynamo"] is None
                 and r["experiment"]["xla"] is None and r["experiment"]["test"] == record["experiment"]["test"]
                 and r["timestamp"] == record["timestamp"]]
        if eager:
            assert by_name["speedup"]["benchmark_values"] == pytest.approx(
                [steady_median(eager[0]) / steady_median(record)])
        mode = {"eval": "inference", "train": "training"}[record["experiment"]["test"]]
        assert mine[0]["benchmark"]["extra_info"]["output"] == f"inductor_dummy_float32_{mode}_cpu_performance.csv"


def test_inductor_rows_take_mfu_and_bandwidth_from_the_roofline_and_name_timm_and_cuda_graphs(tmp_path):
    record = next(r for r in records_of(OURS) if r.get("status") == "ok" and r["experiment"]["dynamo"] == "inductor")
    record["model"]["suite_name"] = "timm"
    record["experiment"].update(accelerator="cuda", accelerator_model="NVIDIA H100 80GB HBM3", precision="bf16")
    record["cudagraphs"] = True
    record["roofline"] = {"achieved_flops_per_second": 2.5e14, "peak_flops_per_second": 1e15,
                          "achieved_bytes_per_second": 1.5e12}
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(record) + "\n")
    rows = written(path, "--hud-dashboard=inductor")
    by_name = {r["metric"]["name"]: r for r in rows}
    assert by_name["mfu"]["metric"]["benchmark_values"] == [0.25]
    assert by_name["memory_bandwidth"]["metric"]["benchmark_values"] == [1500.0]
    row = by_name["abs_latency"]
    assert row["model"]["origins"] == ["timm_models"] and row["runners"][0] == dict(
        row["runners"][0], name="cuda", type="NVIDIA H100 80GB HBM3")
    assert row["benchmark"]["dtype"] == "bfloat16"
    assert row["benchmark"]["extra_info"]["output"] == \
        "inductor_with_cudagraphs_timm_models_bfloat16_inference_cuda_performance.csv"


def test_hud_dashboard_without_the_oss_format_is_one_line_and_exit_2():
    result = call_tool("result_analyzer.py", OURS, "--hud-dashboard=inductor", "-o", "-")
    assert result.returncode == 2 and "--hud-dashboard" in result.stderr and len(result.stderr.splitlines()) == 1
