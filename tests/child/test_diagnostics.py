"""Diagnostics flags, end to end with the real runner: files at the promised paths that parse, metrics with
sane values, dict-valued results under diagnostics, saved outputs that load with weights_only=True and match
a fresh eager run, random bf16/fp16 inputs, graph breaks as error records, precision reaching torch and
torch_xla. Three small sweeps (eager + PJRT, inductor + PJRT, two single configs) are shared by the tests. Where
torch-xla can't run (another torch than 2.9), the XLA configs are dropped and the tests check the others."""

import json

import pytest

from helpers import XLA as HAS_XLA
from helpers import call_runner, read_jsonl, records_by_slug, run_runner

COMMON = ["--accelerator=cpu", "--test=eval", "--repeat=2", "--warmup=1"]
EAGER, XLA, INDUCTOR = "cpu-eager-eval", "cpu-openxla-lazytensor-eval", "cpu-inductor-eval"
RAN = (EAGER, XLA) if HAS_XLA else (EAGER,)  # the eval slugs of the mlp sweep that ran here


def artifact(out, relative: str):
    path = out / relative
    assert path.exists(), f"{relative} is listed in the record but does not exist"
    return path


def assert_metrics_are_number_lists(record):
    for name, values in record["metrics"].items():
        if name == "error":
            continue
        assert isinstance(values, list) and all(isinstance(v, (int, float)) for v in values), (name, values)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    """dummy mlp, eager and PyTorch/XLA lazy tensors, eval and train, with every file-writing flag."""
    out = tmp_path_factory.mktemp("diag_mlp")
    run_runner(*COMMON, "--test=train", "--xla=None", "--xla=PJRT", "--dynamo=None", "-k", "^mlp$",
               f"--output-dirname={out}", "--dump-pytorch-profiles", "--profile-cuda-cpu",
               "--profile-cuda-cpu-individual-ops", "--dump-pytorch-xla-metrics", "--dump-hlo", "--save-ir-format=hlo",
               "--save-output", "--collect-full-output", "--collect-dynamo-counters",
               check_rc=0)
    found = records_by_slug(out)
    assert all(r["status"] == "ok" for r in found.values()), [r["error"] for r in found.values()]
    return out, found


@pytest.fixture(scope="module")
def graph_break(tmp_path_factory):
    """faults graph_break (one graph break; torch.median falls back to the CPU on XLA): inductor and PJRT."""
    out = tmp_path_factory.mktemp("diag_graph_break")
    run_runner(*COMMON, "--suite-name=faults", "-k", "^graph_break$", "--xla=None", "--xla=PJRT",
               "--dynamo=inductor", "--dynamo=None", f"--output-dirname={out}", "--collect-dynamo-counters",
               "--dump-dynamo-counters", "--profile-cuda-cpu-individual-ops", "--profile-xla",
               "--profile-xla-duration-ms=500", check_rc=0)
    found = records_by_slug(out)
    assert set(found) == {("graph_break", slug) for slug in (INDUCTOR,) + RAN}  # PJRT+inductor is dropped
    return out, found


def single(out, model: str, experiment: dict, *flags, rc: int):
    run_runner("--suite-name=faults", f"--model-config={json.dumps({'suite_name': 'faults', 'model_name': model})}",
               f"--experiment-config={json.dumps(experiment)}", "--repeat=2", "--warmup=1",
               f"--output-dirname={out}", *flags, check_rc=rc)
    return read_jsonl(out / "results.jsonl")[-1]


# ---------------------------------------------------------------- usage


def test_contradicting_precision_flags_are_a_usage_error():
    result = call_runner("--disable-tf32", "--matmul-precision=default", "--dry-run", check_rc=2)
    assert result.stderr.count("\n") == 1 and "--disable-tf32" in result.stderr and "Traceback" not in result.stderr
    result = call_runner("--save-ir-format=json", "--dry-run", check_rc=2)
    assert "--save-ir-format" in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------- torch.profiler


@pytest.mark.integration
def test_pytorch_profiles_are_a_chrome_trace_and_an_operator_table_per_repeat(mlp):
    out, found = mlp
    for slug in RAN:
        artifacts = found[("mlp", slug)]["artifacts"]
        assert artifacts["trace"] == [f"mlp/trace-{slug}-{i}.json" for i in range(2)]
        assert artifacts["pytorch-profile"] == [f"mlp/pytorch-profile-{slug}-{i}.txt" for i in range(2)]
        for relative in artifacts["trace"]:
            events = json.loads(artifact(out, relative).read_text())["traceEvents"]
            assert any(e.get("name") == "aten::addmm" for e in events) or slug == XLA
            assert events
        for relative in artifacts["pytorch-profile"]:
            table = artifact(out, relative).read_text()
            assert "Self CPU" in table and "aten::" in table


@pytest.mark.integration
def test_no_profiler_is_active_during_the_timed_repeats_of_a_profiled_config(tmp_path):
    """faults/notes_the_profiler writes, at every forward, whether torch's profiler is active, eager and compiled
    (its note is dynamo-disabled, so Python runs it at every call): warm-up and timed runs none, then one profiled
    run per timed one, each with it on (pytorch#181043)."""
    import os

    from benchmarks.suites.faults_models import PROFILER_LOG_VARIABLE

    log = tmp_path / "profiler.log"
    out = tmp_path / "out"
    run_runner("--suite-name=faults", "-k", "^notes_the_profiler$", "--accelerator=cpu", "--xla=None", "--test=eval",
               "--dynamo=None", "--dynamo=aot_eager", "--warmup=1", "--repeat=3", "--iterations-per-run=2",
               "--dump-pytorch-profiles", "--profile-cuda-cpu", "--profile-cuda-cpu-individual-ops",
               f"--output-dirname={out}", env=dict(os.environ, **{PROFILER_LOG_VARIABLE: str(log)}), check_rc=0)
    per_child = {}
    for line in log.read_text().splitlines():
        pid, active = line.split()
        per_child.setdefault(pid, []).append(int(active))
    assert len(per_child) == 2  # eager and aot_eager, each its child
    for notes in per_child.values():
        # warm-up, timed runs, profiled runs (2 iterations each), then the roofline's count: one eager forward after
        # them all, unprofiled (docs/roofline.md)
        assert notes == [0] * 2 + [0] * 3 * 2 + [1] * 3 * 2 + [0]
    for record in read_jsonl(out / "results.jsonl"):
        assert record["status"] == "ok"
        metrics, diagnostics = record["metrics"], record["diagnostics"]
        assert diagnostics["profiled_repeats"] == {"count": 3, "timed_repeats_profiled": False}
        assert len(metrics["total_time"]) == len(metrics["profiled_total_time"]) == 3
        assert len(metrics["total_cpu_time_s"]) == len(record["artifacts"]["trace"]) == 3  # from the profiled runs
        assert diagnostics["aten_ops"]["aten::addmm"]["num_of_calls"] == [2, 2, 2]


@pytest.mark.integration
def test_profile_cuda_cpu_adds_per_repeat_cpu_times(mlp):
    _, found = mlp
    for record in found.values():
        assert_metrics_are_number_lists(record)
        metrics = record["metrics"]
        assert len(metrics["total_cpu_time_s"]) == 2 and all(0 < t < 30 for t in metrics["total_cpu_time_s"])
        calls = record["iterations_per_run"]  # the calibrated block: each profiled run is one too
        assert metrics["per_iter_cpu_time_s"] == [total / calls for total in metrics["total_cpu_time_s"]]
        assert "total_cuda_time_s" not in metrics  # no CUDA here


@pytest.mark.integration
def test_individual_ops_go_to_diagnostics_not_metrics(mlp):
    _, found = mlp
    record = found[("mlp", EAGER)]
    ops, calls = record["diagnostics"]["aten_ops"], record["iterations_per_run"]
    assert ops["aten::addmm"]["num_of_calls"] == [3 * calls] * 2  # three Linear layers per call, calls per repeat
    assert all(len(v) == 2 and min(v) >= 0 for row in ops.values() for v in row.values())
    if HAS_XLA:
        assert found[("mlp", XLA)]["diagnostics"]["xla_unlowered_ops"] == {}  # the mlp lowers completely
    assert not any(isinstance(v, dict) for r in found.values() for v in r["metrics"].values())


@pytest.mark.integration
@pytest.mark.requires_xla
def test_xla_fallback_operators_are_listed(graph_break):
    _, found = graph_break
    record = found[("graph_break", XLA)]
    ops, calls = record["diagnostics"]["xla_unlowered_ops"], record["iterations_per_run"]
    assert ops["aten::median"]["num_of_calls"] == [calls, calls]  # once per call, a block of calls per repeat
    assert all(name.startswith("aten::") for name in ops)
    assert "aten_ops" in found[("graph_break", INDUCTOR)]["diagnostics"]


# ---------------------------------------------------------------- torch_xla


@pytest.mark.integration
@pytest.mark.requires_xla
def test_xla_metrics_report_per_repeat(mlp):
    out, found = mlp
    artifacts = found[("mlp", XLA)]["artifacts"]
    assert artifacts["pytorch-xla-metrics"] == [f"mlp/pytorch-xla-metrics-{XLA}-{i}.txt" for i in range(2)]
    for relative in artifacts["pytorch-xla-metrics"]:
        report = artifact(out, relative).read_text()
        assert "Metric: ExecuteTime" in report and "TotalSamples" in report
    eager = found[("mlp", EAGER)]
    assert "pytorch-xla-metrics" not in eager["artifacts"]
    assert eager["diagnostics"]["not_applied"]["--dump-pytorch-xla-metrics"] == "not an XLA config"


@pytest.mark.integration
@pytest.mark.requires_xla
def test_hlo_dump_and_ir_dump(mlp):
    out, found = mlp
    artifacts = found[("mlp", XLA)]["artifacts"]
    assert artifacts["hlo"] == f"mlp/hlo-{XLA}"
    texts = [p.read_text(errors="replace") for p in artifact(out, artifacts["hlo"]).glob("*.txt")]
    assert any("HloModule" in text and "ENTRY" in text for text in texts)
    assert artifacts["dump"] == f"mlp/dump-{XLA}.hlo.0"  # torch_xla appends the device ordinal
    ir = artifact(out, artifacts["dump"]).read_text()
    assert "## BEGIN_GRAPH" in ir and "HloModule" in ir
    assert "hlo" not in found[("mlp", EAGER)]["artifacts"]


@pytest.mark.integration
@pytest.mark.requires_xla
def test_xla_profile_is_captured_on_a_free_port(graph_break):
    out, found = graph_break
    record = found[("graph_break", XLA)]
    assert record["artifacts"]["xla-profile"] == f"graph_break/xla-profile-{XLA}"
    profile = record["diagnostics"]["xla_profile"]
    assert profile["port"] != 9012 and 0 < profile["port"] < 65536 and profile["duration_ms"] == 500
    assert profile["files"] and all(artifact(out, f).stat().st_size > 0 for f in profile["files"])
    assert found[("graph_break", INDUCTOR)]["diagnostics"]["not_applied"]["--profile-xla"] == "not an XLA config"


# ---------------------------------------------------------------- dynamo


@pytest.mark.integration
def test_dynamo_counters_and_graph_metrics(graph_break):
    out, found = graph_break
    record = found[("graph_break", INDUCTOR)]
    assert_metrics_are_number_lists(record)
    assert record["metrics"]["dynamo_graph_count"] == [2, 2]  # split in two by the break, compiled once
    assert record["metrics"]["dynamo_graph_break_count"] == [1, 1]
    counters = record["diagnostics"]["dynamo_counters"]
    assert counters["stats"]["unique_graphs"] == 2
    assert any("Data-dependent" in reason for reason in counters["graph_break"])
    dumped = json.loads(artifact(out, record["artifacts"]["dynamo-counters"]).read_text())
    assert record["artifacts"]["dynamo-counters"] == f"graph_break/dynamo-counters-{INDUCTOR}.json"
    assert len(dumped["per_repeat"]) == 2 and dumped["per_repeat"][-1] == counters
    for slug in RAN:  # nothing is compiled by dynamo there
        other = found[("graph_break", slug)]
        assert "dynamo_graph_count" not in other["metrics"] and "dynamo_counters" not in other["diagnostics"]
        assert other["diagnostics"]["not_applied"]["--collect-dynamo-counters"] == "not a dynamo config"


@pytest.mark.integration
def test_filter_by_single_graph_makes_a_graph_break_an_error_record(tmp_path):
    record = single(tmp_path, "graph_break", {"accelerator": "cpu", "xla": None, "dynamo": "inductor", "test": "eval"},
                    "--filter-by-single-graph", "--collect-dynamo-counters", rc=1)
    assert record["status"] == "error" and record["error"]["type"] == "GraphBreak"
    assert record["error"]["phase"] == "compile"
    assert "fullgraph" in record["error"]["message"] and "Data-dependent" in record["error"]["message"]
    assert record["metrics"]["error"].startswith("GraphBreak: ")
    counters = record["diagnostics"]["dynamo_counters"]  # the failed record still says where dynamo stopped
    assert any("Data-dependent" in reason for category in counters.values() for reason in category)


# ---------------------------------------------------------------- outputs, inputs, precision


def fresh_eager_mlp_output():
    import torch

    from benchmarks.child import backends
    from benchmarks.config.experiment_config import ExperimentConfig
    from benchmarks.suites import dummy_models

    backends.seed_everything(ExperimentConfig("cpu", None, None, "eval"))  # as the child does before building
    module, inputs = dummy_models.build("mlp", 16, "cpu")
    with torch.no_grad():
        return module.eval()(*inputs)


@pytest.mark.integration
def test_saved_outputs_load_safely_and_match_a_fresh_eager_run(mlp):
    import torch

    out, found = mlp
    expected = fresh_eager_mlp_output()
    for slug, tolerance in ((EAGER, 1e-5), (XLA, 1e-3))[:len(RAN)]:
        files = found[("mlp", slug)]["artifacts"]["output"]
        assert files == [f"mlp/output-{slug}-{i}.pt" for i in range(2)]
        outputs = [torch.load(artifact(out, f), weights_only=True) for f in files]
        assert torch.equal(outputs[0], outputs[1])  # the same inputs every repeat (no --randomize-input)
        assert outputs[0].device.type == "cpu"
        torch.testing.assert_close(outputs[0], expected, rtol=tolerance, atol=tolerance)


@pytest.mark.integration
def test_collect_full_output_saves_loss_output_and_gradients_of_train_steps(mlp):
    import torch

    out, found = mlp
    for slug in ("cpu-eager-train", "cpu-openxla-lazytensor-train")[:len(RAN)]:
        saved = torch.load(artifact(out, found[("mlp", slug)]["artifacts"]["output"][-1]), weights_only=True)
        assert set(saved) == {"loss", "output", "grads"}
        assert saved["loss"].dim() == 0 and saved["output"].shape == (16, 32)
        assert set(saved["grads"]) == {f"{layer}.{p}" for layer in ("fc1", "fc2", "out") for p in ("weight", "bias")}
        assert saved["grads"]["fc1.weight"].shape == (128, 32) and torch.isfinite(saved["grads"]["fc1.weight"]).all()


@pytest.mark.integration
def test_randomize_input_works_for_bf16_and_fp16_and_keeps_integer_inputs(tmp_path):
    import torch

    # mixed_dtypes takes a bfloat16, a float16 and an int64 index tensor; a randomized index would not index.
    record = single(tmp_path, "mixed_dtypes", {"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval"},
                    "--randomize-input", "--save-output", "--disable-tf32", rc=0)
    assert record["status"] == "ok", record["error"]
    first, second = (torch.load(artifact(tmp_path, f), weights_only=True) for f in record["artifacts"]["output"])
    assert first.shape == second.shape == (4, 8) and not torch.equal(first, second)  # fresh inputs each repeat
    assert record["diagnostics"]["matmul_precision"] == {"torch": "highest", "cudnn_allow_tf32": False}


