"""scripts/gpu/slice_report.py (`make gpu-slice`'s report): the side-by-side rows from a fake harness's CSV files and
our records written here (no harness, no torch), the CUDA-graph probe against the row it probes, each side's wall time,
and the report of a run that is still going or was cut off: what it measured, and where it stopped."""

import json

from test_parity_report import record, write_harness, write_ours

from scripts.gpu import slice_plan
from scripts.gpu import slice_report as report

RESNET18 = slice_plan.RESNET18
H_SPEC, O_SPEC = report.harness_spec(RESNET18, "eval"), report.our_spec(RESNET18, "eval")


def cuda(found: dict, **extra) -> dict:
    """A record of ours made a CUDA one: the dashboard profile's facts, the device's peak memory, CUDA graphs."""
    found["experiment"]["accelerator"] = "cuda"
    found["memory_kind"] = "cuda_allocated"
    if found["experiment"].get("dynamo"):
        found.update(cudagraphs=True, cudagraph_skips=0)
        found["environment"] = {"cuda_profile": {"cudnn": {"benchmark": True, "allow_tf32": True}}}
        found["metrics"]["gpu_sm_clock_mhz"] = [1980.0, 1755.0, 1980.0]
    found.update(extra)
    return found


def measured_row(out, ours_ms=1.3, harness_ms=1.0, paired=2.0):
    """resnet18's row as both sides leave it: the harness's CSVs (its accuracy run at its own batch, 4), ours."""
    write_harness(out, H_SPEC, speedup=2.0, compile_s=12.0, eager_mem=2.0, compiled_mem=1.0,
                  performance_row=f"cuda,resnet18,8,2.000000,{harness_ms:.6f},12.000000,2.000000,2.000000,1.000000,"
                                  "13,1,0,0,0,0,0")
    accuracy = report.parity_table.harness_csv(out, H_SPEC, "accuracy")
    accuracy.write_text(accuracy.read_text().replace("cpu,resnet18,8,", "cuda,resnet18,4,"))
    write_ours(out, cuda(record(O_SPEC, None, 2 * ours_ms, 0.5, 2 * 2**30)),
               cuda(record(O_SPEC, "inductor", ours_ms, 12.5, 2**30), paired_speedup={"median": paired}))


def all_steps():
    return slice_plan.default_steps(tiers=("first", "probe"))


def outcomes(steps, **states):
    """Every step planned but those named (key -> (state, seconds))."""
    found = {s.key: report.Outcome() for s in steps}
    for key, (state, seconds) in states.items():
        found[key] = report.Outcome(state, "", seconds)
    return found


def built(out, steps, found, **kwargs):
    return report.build(out, steps, found, {"devices": ["NVIDIA H100 80GB HBM3"], "torch": "2.11.0"}, "cuda", 420.0,
                        100.0, **kwargs)


def test_a_row_puts_the_harness_csv_beside_our_records(tmp_path):
    measured_row(tmp_path, ours_ms=1.0, harness_ms=1.0)
    row = built(tmp_path, all_steps(), outcomes(all_steps()))["rows"][0]
    assert (row["model"], row["harness_model"], row["batch_size"], row["harness_accuracy_batch"]) == (
        "resnet18", "resnet18", 8, 4)
    h, o = row["harness"], row["ours"]
    assert (h["accuracy"], h["batch_size"], h["speedup"], h["latency"], h["compile_latency"]) == (
        "pass", 8, 2.0, 1.0, 12.0)
    assert (o["accuracy"], o["batch_size"], o["paired_speedup"], o["latency"], o["compile_latency"]) == (
        "pass", 8, 2.0, 1.0, 12.0)
    # the harness's accuracy batch (its own, 4) is no difference: the dashboard's accuracy jobs run it so
    assert row["differences"] == []
    assert report.row_cells(row) == ["resnet18", "eval", "8 / 8", "pass / pass", "2.00x / 2.00x", "1.000 / 1.000",
                                     "12.0 / 12.0", "2.00 / 2.00", "none"]


def test_a_latency_or_memory_gap_is_named_with_the_reason_the_definitions_differ(tmp_path):
    measured_row(tmp_path, ours_ms=1.317, harness_ms=1.025)
    found = built(tmp_path, all_steps(), outcomes(all_steps()))
    named = {d["what"]: d for d in found["rows"][0]["differences"]}
    assert named["latency"]["text"] == "latency 1.025 vs 1.317 ms (ours / harness 1.28)"
    assert named["latency"]["reason"] == "latency" and "speedup" not in named
    text = report.render(found)
    assert "[latency] ms per compiled iteration" in text
    # on CUDA both read the caching allocator's peak: the CUDA reason, not the CPU resident set's
    write_ours(tmp_path, cuda(record(O_SPEC, "inductor", 1.317, 12.5, 2 * 2**30), paired_speedup={"median": 2.0}))
    named = {d["what"]: d for d in built(tmp_path, all_steps(), outcomes(all_steps()))["rows"][0]["differences"]}
    assert named["memory"]["reason"] == "cuda-memory" and "peak allocated: harness 1907 -> 954 MiB" in \
        named["memory"]["text"]


def test_a_row_not_measured_yet_says_which_side_is_missing(tmp_path):
    steps = all_steps()
    found = built(tmp_path, steps, outcomes(steps))
    assert [r["model"] for r in found["rows"]] == [m.name for m in slice_plan.FIRST_MODELS]
    first = found["rows"][0]
    assert {d["text"] for d in first["differences"]} == {
        "harness: no accuracy run", "harness: no performance run", "ours: no inductor record"}
    assert first["steps"] == {"harness-performance": "planned", "ours": "planned", "harness-accuracy": "planned"}


def test_the_probe_measures_each_candidate_against_the_row_it_probes(tmp_path):
    measured_row(tmp_path, ours_ms=1.3, harness_ms=1.0)
    steps = all_steps()
    probe = {s.variant.name: s for s in steps if s.tier == "probe"}
    isolated = report.probe_path(tmp_path, probe["ours isolated"])  # that sweep's own directory
    isolated.mkdir(parents=True)
    (isolated / "results.jsonl").write_text(json.dumps(cuda(record(O_SPEC, "inductor", 1.56, 12.0, 2**30),
                                                            cudagraph_skips=1)) + "\n")
    report.probe_path(tmp_path, probe["plain, autotuner on"]).write_text(json.dumps({"median_ms": 1.04}) + "\n")
    found = built(tmp_path, steps, outcomes(steps))
    entries = {p["variant"]: p for p in found["probe"]}
    assert entries["ours isolated"]["ms"] == 1.56
    assert round(entries["ours isolated"]["per_ours_row"], 2) == 1.2
    assert round(entries["ours isolated"]["per_harness"], 2) == 1.56
    assert entries["ours isolated"]["facts"] == {"cudagraphs": True, "cudagraph_skips": 1, "sm_clock_mhz": 1980.0,
                                                 "cudnn": {"benchmark": True, "allow_tf32": True}}
    assert entries["plain, autotuner on"]["ms"] == 1.04 and entries["plain, autotuner off"]["ms"] is None
    assert found["probe_row"]["facts"] == {"ours": {"cudagraphs": True, "cudagraph_skips": 0, "sm_clock_mhz": 1980.0,
                                                    "cudnn": {"benchmark": True, "allow_tf32": True}},
                                           "harness": {"cudagraph_skips": 0}}
    text = report.render(found)
    assert "The row: ours 1.300 ms (paired), the harness 1.000 ms, ours / harness 1.30." in text
    assert "| ours isolated | planned | 1.560 | 1.20 | 1.56 | where the timed region sits" in text


def test_each_sides_wall_time_covers_the_rows_both_sides_finished(tmp_path):
    steps = all_steps()
    resnet, bert = ("eval:torchvision:resnet18", "eval:huggingface:DistilBertForQuestionAnswering")
    found = outcomes(steps, **{f"{resnet}:harness-performance": (report.DONE, 30.0),
                               f"{resnet}:ours": (report.DONE, 35.0),
                               f"{resnet}:harness-accuracy": (report.FAILED, 25.0),
                               f"{bert}:harness-performance": (report.DONE, 40.0),
                               f"{bert}:ours": (report.DONE, 45.0)})  # its accuracy run not yet: not counted
    wall = built(tmp_path, steps, found)["wall"]
    assert wall == {"harness": {"seconds": 55.0, "processes": 2}, "ours": {"seconds": 35.0, "processes": 1},
                    "rows": 1}


def test_a_run_in_progress_or_cut_off_reports_what_it_measured_and_where_it_stopped(tmp_path):
    measured_row(tmp_path)
    steps = all_steps()
    resnet = "eval:torchvision:resnet18"
    found = outcomes(steps, **{f"{resnet}:harness-performance": (report.DONE, 30.0),
                               f"{resnet}:ours": (report.DONE, 35.0),
                               f"{resnet}:harness-accuracy": (report.RUNNING, None)})
    going = built(tmp_path, steps, found)
    assert going["running"] == [f"{resnet}:harness-accuracy"]
    text = report.render(going)
    assert f"in progress: {resnet}:harness-accuracy running (a run that ended here was cut off during it" in text
    assert "| resnet18 | eval | 8 / 8 | pass / pass | 2.00x / 2.00x |" in text  # measured before it: kept
    found[f"{resnet}:harness-accuracy"] = report.Outcome(report.CUT_OFF, "signal SIGTERM", 12.0)
    stopped = built(tmp_path, steps, found, cut_off=f"signal SIGTERM during {resnet}:harness-accuracy")
    text = report.render(stopped)
    assert f"cut off (signal SIGTERM during {resnet}:harness-accuracy): what follows is what it measured" in text
    assert f"| {resnet}:harness-accuracy | first | 25 | cut off | 12 | signal SIGTERM |" in text
    report.write(tmp_path, stopped)
    assert json.loads((tmp_path / "gpu-slice.json").read_text())["cut_off"] == stopped["cut_off"]
    assert (tmp_path / "gpu-slice.md").read_text() == text
    assert not list(tmp_path.glob(".*.partial"))


def llm_record(dynamo, generate_s, tokens_per_s, ttft_s, **extra):
    """An LLM row's record of ours, as child/generation.py writes it (three timed generate calls)."""
    metrics = {"warmup_time": [generate_s * 20, generate_s], "generate_time": [generate_s] * 3,
               "total_time": [generate_s] * 3, "per_iter_time": [generate_s] * 3,
               "decode_tokens_per_second": [tokens_per_s] * 3, "time_to_first_token": [ttft_s] * 3,
               "compile_time": [generate_s * 19]}
    experiment = {"accelerator": "cuda", "accelerator_model": "NVIDIA H100 80GB HBM3", "xla": None, "dynamo": dynamo,
                  "test": "eval", "batch_size": 1, "precision": "bf16", "prompt_tokens": 128, "new_tokens": 128,
                  "generation_compile": "forward" if dynamo else None,
                  "compile_mode": "reduce-overhead" if dynamo else None}
    return {"model": {"suite_name": "huggingface", "model_name": "Qwen/Qwen3-0.6B"}, "experiment": experiment,
            "repeat": 3, "iterations_per_run": 1, "metrics": metrics, "timestamp": 100.0, "status": "ok",
            "warmup": 2, "round": 0, **extra}


def test_an_llm_row_puts_eager_beside_the_compiled_decode_step_with_both_speedups(tmp_path):
    steps = slice_plan.default_steps(tiers=("llm",), llm=(slice_plan.QWEN3, slice_plan.LLAMA32))
    path = report.llm_results(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in (
        llm_record(None, 4.0, 32.0, 0.040),
        llm_record("inductor", 1.0, 160.0, 0.050, accuracy="pass",
                   generation_verify={"leading_tokens_match": 120, "new_tokens": 128, "logit_steps_judged": 2}))))
    found = built(tmp_path, steps, outcomes(steps, **{steps[0].key: ("done", 90.0)}))
    qwen, llama = found["llm"]
    assert (qwen["speedup_generate"], qwen["speedup_decode"]) == (4.0, 5.0)  # eager time / compiled; rate / rate
    assert qwen["compiled"]["compile_time"] == 19.0 and llama["eager"] is None and llama["state"] == "planned"
    text = report.render(json.loads(json.dumps(found)))
    assert "## LLM generation: eager / compiled" in text and "with CUDA graphs" in text
    assert ("| Qwen/Qwen3-0.6B | 128+128 | bf16 | 40.0 / 50.0 | 32.0 / 160.0 | 4.000 / 1.000 | 4.00 | 5.00 | 19.0 | "
            "pass (120/128 tokens as eager's) |") in text
    assert "| meta-llama/Llama-3.2-1B | - | - | - / - | - / - | - / - | - | - | - | planned |" in text
    assert found["rows"] == []  # no forward row from an LLM step
