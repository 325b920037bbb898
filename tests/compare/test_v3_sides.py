"""compare.py takes PyTorch OSS benchmark ("v3") files as a side (issue 63): our records written as v3 and read back
compare to the originals at a ratio of exactly 1; rows exported from the HUD (a stored file in the dynamo harness's
shape) pair with our configs of the same model, backend, mode, dtype and device, and what matches none is listed."""

import gzip
import json

import pytest

from helpers import GOLDEN, ROOT, call_tool

OURS = GOLDEN / "ours_cpu.jsonl"
HUD = ROOT / "tests" / "fixtures" / "oss_v3" / "hud_inductor_export.json"


def records_of(path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def compared(control, treatment, *args, rc=None) -> tuple:
    result = call_tool("compare.py", control, treatment, "--format=json", "--fail-on=none", *args, check_rc=rc)
    return json.loads(result.stdout), result.stderr


@pytest.mark.parametrize("name,extra", [("oss.json", ()), ("oss.jsonl.gz", ("--baseline-backend=eager",)),
                                        ("inductor.json", ("--hud-dashboard=inductor",))])
def test_our_records_through_v3_compare_to_the_originals_at_ratio_one(tmp_path, name, extra):
    out = tmp_path / name
    call_tool("result_analyzer.py", OURS, "--format=oss-benchmark", "-o", out, *extra, check_rc=0)
    report, _ = compared(OURS, out, "--latest", rc=0)
    paired = [row for row in report["rows"] if row["time_ratio"] is not None]
    latest = max(r["timestamp"] for r in records_of(OURS))
    dashboard = "--hud-dashboard=inductor" in extra  # one record per compiled config: eager is its baseline
    ok = [r for r in records_of(OURS) if r["timestamp"] == latest and r.get("status") == "ok"
          and not (dashboard and r["experiment"]["dynamo"] is None and r["experiment"]["xla"] is None)]
    assert len(paired) == len(ok) > 0
    for row in paired:
        assert row["time_ratio"] == pytest.approx(1.0, abs=1e-12), row
        assert row["control"]["median"] == pytest.approx(row["treatment"]["median"], rel=1e-12)
        assert row["gates"] == []  # the accuracy comes back too: no gate fires


def test_a_hud_export_pairs_by_model_backend_mode_dtype_and_device_and_lists_the_rest():
    report, stderr = compared(OURS, HUD, "--latest")
    rows = {(r["model_name"], r["experiment"]["dynamo"], r["experiment"]["test"]): r for r in report["rows"]}
    mlp = rows[("mlp", "inductor", "eval")]  # the HUD's abs_latency 5 ms beside our newest run's 4 ms
    assert mlp["suite_name"] == "dummy" and mlp["experiment"]["batch_size"] == 16  # our config's, the HUD's numbers
    assert mlp["treatment"]["median"] == pytest.approx(0.005) and mlp["control"]["median"] == pytest.approx(0.004)
    # one sample a side (the HUD keeps one figure a config): the ratio is shown, no verdict is given without a test
    assert mlp["time_ratio"] == pytest.approx(1.25) and mlp["verdict"] == "unsure"
    assert "variation between processes unknown" in mlp["note"], mlp["note"]
    assert rows[("cnn", "inductor", "eval")]["note"] == "treatment error: accuracy: fail_to_run"
    assert ("compare.py: treatment: 1 v3 config(s) match no config of the control by model, backend, mode, dtype and "
            "device: resnet50 inductor inference bfloat16 cuda") in stderr
    assert rows[("resnet50", "inductor", "eval")]["verdict"] == "only-treatment"  # listed, and still in the report


def test_the_same_export_as_gzipped_json_lines_reads_the_same(tmp_path):
    rows = json.loads(HUD.read_text())
    packed = tmp_path / "hud.jsonl.gz"
    packed.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    assert compared(OURS, packed, "--latest")[0] == compared(OURS, HUD, "--latest")[0]


def test_a_bad_row_costs_itself_and_a_broken_gzip_is_one_line_and_exit_2(tmp_path):
    rows = json.loads(HUD.read_text())
    rows.insert(1, {"benchmark": {"name": "TorchInductor"}, "model": {"name": "mlp"}})  # no metric
    path = tmp_path / "hud.json"
    path.write_text(json.dumps(rows))
    report, stderr = compared(OURS, path, "--latest", "--log-level=warning")
    assert "v3 record 2: no metric.name" in stderr
    assert any(r["model_name"] == "mlp" and r["time_ratio"] for r in report["rows"])
    broken = tmp_path / "hud.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"benchmark": {}}\n')[:12])
    result = call_tool("compare.py", OURS, broken)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "no usable record" in result.stderr and "not a v3 file" in result.stderr


def test_a_results_file_whose_first_line_is_a_list_is_still_read_line_by_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text("[1, 2]\n" + OURS.read_text())
    report, stderr = compared(OURS, path, "--latest")
    assert "not a JSON object" in stderr
    assert all(r["time_ratio"] == pytest.approx(1.0) for r in report["rows"] if r["time_ratio"] is not None)
