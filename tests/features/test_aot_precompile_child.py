"""--aot-precompile in the child (features/aot_precompile/child.py): an Inductor config's forward compiled ahead of time,
saved, loaded and timed as loaded; a model it refuses is an error record and a torch without it a skip that says why;
aggregate's dashboard shows the pass rate and the load time."""

import csv
import io

import pytest

from helpers import ROOT, by_model, call_tool, read_jsonl, run_runner

MODELS = ROOT / "tests" / "fixtures" / "aot_precompile"


@pytest.mark.integration
def test_precompiled_loaded_and_timed_a_refusal_is_an_error_and_a_torch_without_it_a_skip(tmp_path):
    run_runner("--suite-name=files", f"--search-dir={MODELS}", "--accelerator=cpu", "--xla=None",
               "--dynamo=inductor", "--dynamo=None", "--test=eval", "--aot-precompile", "--verify", "--repeat=2",
               "--warmup=1", f"--output-dirname={tmp_path}", check_rc=1)
    found = read_jsonl(tmp_path / "results.jsonl")
    records = by_model([r for r in found if r["experiment"]["dynamo"]])
    assert all(r["status"] == "ok" for r in found if not r["experiment"]["dynamo"])  # eager is never precompiled

    record = records["linear"]
    assert record["status"] == "ok" and record["accuracy"] == "pass", record.get("error")
    assert record["experiment"]["aot_precompile"] is True
    info = record["aot_precompile"]
    assert info["passed"] and info["compile_seconds"] > 0 and info["artifact_bytes"] > 0
    assert record["metrics"]["aot_precompile_load_time"] == [info["load_seconds"]]
    assert (tmp_path / record["artifacts"]["aot-precompile"]).stat().st_size == info["artifact_bytes"]
    assert "absent" not in record

    refused = records["graph_break"]
    assert refused["status"] == "error" and refused["error"]["type"] == "AotPrecompileFailed"
    assert refused["error"]["phase"] == "compile" and refused["accuracy"] == "fail_to_run"
    assert refused["aot_precompile"]["passed"] is False and refused["aot_precompile"]["reason"]

    lacking = records["no_aot_compile"]
    assert lacking["status"] == "skip" and "torch.compiler.load_compiled_function" in lacking["error"]["message"]
    assert list(lacking["absent"]) == ["aot_precompile"]
    assert lacking["absent"]["aot_precompile"].startswith("torch 2.")

    # The dashboard: the line's pass rate (1 of 3: the refusal fails to run, the skip counts too) and load time.
    result = call_tool("aggregate.py", str(tmp_path), "--report=dashboard", "--format=csv", check_rc=0)
    rows = {r["Backend"]: r for r in csv.DictReader(io.StringIO(result.stdout[2:]))}
    line = rows["Inductor"]
    assert line["aot_precompile"] == "aot_precompile" and (line["Passed"], line["Total"]) == ("1", "3")
    assert float(line["AOTLoad(ms)"]) == pytest.approx(1e3 * info["load_seconds"], rel=1e-6)
    assert rows["Eager"]["aot_precompile"] == "" and rows["Eager"]["AOTLoad(ms)"] == ""
