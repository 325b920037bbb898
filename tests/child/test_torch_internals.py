"""What reads torch's private APIs degrades with a reason, never a crash (benchmarks/child/torch_internals.py): on a
torch that moved what a feature reads, that feature is absent from the record, its `absent` says which and why, and
the config runs on, measured and verified. Each path is run for real on this torch, with the API taken away in the
child (a model file that removes it as it is imported: tests/fixtures/moved_torch/), or in the probe's and the fork
server's own functions."""

import json
import subprocess
import types

import pytest

from helpers import PYTHON, ROOT, by_model, call_tool, read_jsonl, run_runner

MOVED = ROOT / "tests" / "fixtures" / "moved_torch"
SWEEP = ["--suite-name=files", f"--search-dir={MOVED}", "--accelerator=cpu", "--xla=None", "--dynamo=aot_eager",
         "--test=train", "--train-step=harness", "--verify", "--repeat=2", "--warmup=1"]
# model file -> (the feature it takes away, what the reason names, the dynamo_stats keys left out)
EXPECTED = {
    "no_graph_break_reasons": ("graph_break_reasons", "torch._dynamo.utils.graph_break_reasons",
                               {"graph_break_reasons", "graph_break_reasons_omitted"}),
    "no_time_spent": ("compile_seconds_by_phase", "torch._dynamo.utils.calculate_time_spent",
                      {"compile_seconds_by_phase"}),
    "no_counters": ("dynamo_counters", "torch._dynamo.utils.counters",
                    {"calls_captured", "graphs", "graph_breaks", "unique_graph_breaks", "fallbacks_to_eager"}),
    "no_fallback_random": ("fallback_random", "torch._inductor.config.fallback_random", set()),
}


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    out = tmp_path_factory.mktemp("moved")
    run_runner(*SWEEP, f"--output-dirname={out}", check_rc=0)
    return by_model(read_jsonl(out / "results.jsonl"))


@pytest.mark.integration
def test_an_intact_torch_leaves_nothing_absent(moved):
    record = moved["intact"]
    assert record["status"] == "ok" and record["accuracy"] == "pass", record.get("error")
    assert "absent" not in record
    stats = record["dynamo_stats"]
    assert {"graphs", "recompiles", "graph_break_reasons", "compile_seconds_by_phase",
            "compile_seconds_by_function"} <= set(stats)
    assert record["metrics"]["dynamo_graph_count"]


@pytest.mark.integration
@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_a_moved_private_api_costs_its_feature_named_with_why_and_the_config_runs_on(moved, model):
    feature, source, left_out = EXPECTED[model]
    record, intact = moved[model], moved["intact"]
    assert record["status"] == "ok" and record["accuracy"] == "pass", record.get("error")
    assert list(record["absent"]) == [feature]
    reason = record["absent"][feature]
    assert reason.startswith("torch 2."), reason  # the torch that ran, by its own version
    assert source in reason and "could not be read" in reason and "\n" not in reason
    stats = record["dynamo_stats"]
    assert not left_out & set(stats), f"{left_out & set(stats)} should be absent"
    assert set(intact["dynamo_stats"]) - left_out == set(stats)  # every other statistic is still there
    if feature == "dynamo_counters":  # the per-repeat graph metrics read the counters too
        assert "dynamo_graph_count" not in record["metrics"]
    assert record["metrics"]["per_iter_time"] and record["verification_code"] == "PASS"


@pytest.mark.integration
def test_the_analyzer_reads_records_with_absent_features(moved, tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in moved.values()))
    report = call_tool("result_analyzer.py", path, "--format=csv", "-o", "-", "--timestamp=1", check_rc=0)
    assert report.stdout.strip().count("\n") == len(moved)  # a header and a row per record


@pytest.mark.integration
def test_a_fork_servers_child_without_inductors_compile_thread_rule_runs_and_says_so():
    """zygote.apply_runtime_settings in a forked child: a torch whose Inductor config has no decide_compile_threads
    costs the compile-thread setting (absent, with why), not the child."""
    code = ("import torch._inductor.config as config\n"
            "vars(config).pop(\"decide_compile_threads\")\n"
            "from benchmarks.child import torch_internals\nfrom benchmarks.fork_server import zygote\n"
            "zygote.apply_runtime_settings(threads_changed=False)\n"
            "print(json.dumps(torch_internals.absent()))\n")
    done = subprocess.run([PYTHON, "-c", "import json\n" + code], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    absent = json.loads(done.stdout.strip().splitlines()[-1])
    assert list(absent) == ["compile_threads"]
    assert "torch._inductor.config.decide_compile_threads could not be read (AttributeError" in \
        absent["compile_threads"]


def test_inductors_settings_on_a_torch_that_moved_them_are_listed_another_way_or_left_to_the_children(caplog):
    """The probe lists Inductor's settings from its private _config (their defaults), else from get_config_copy();
    a torch with neither gives the reason instead, and the sweep leaves --inductor-config to its children (each sets
    the value, or fails saying why) rather than refusing it."""
    from benchmarks.config.experiment_config import ExperimentConfig
    from benchmarks.runner import flag_checks, matrix, probe
    from benchmarks.runner.capabilities import Capabilities

    copy_only = types.ModuleType("torch._inductor.config")  # a config module without _config
    copy_only.get_config_copy = lambda: {"max_autotune": False, "_private": 1, "compile_threads": 2}
    assert probe.inductor_settings_of(copy_only) == ({"max_autotune": "bool", "compile_threads": "int"}, None)
    settings, error = probe.inductor_settings_of(types.ModuleType("torch._inductor.config"))
    assert settings == {} and error.startswith("torch._inductor.config._config could not be read (AttributeError")
    caps = Capabilities.from_dict({"dynamo_backends": ["inductor"], "inductor_settings": settings,
                                   "inductor_settings_error": error})
    asking = ExperimentConfig(accelerator="cpu", xla=None, dynamo="inductor", test="eval",
                              inductor_config="max_autotune=True")
    flag_checks.check_inductor_settings([asking], caps)  # not refused: the child sets it
    assert matrix.unsupported_reason(asking, caps) is None
    assert f"--inductor-config is not checked before the children run: {error}" in caplog.text


def test_a_torch_without_inductors_cuda_graph_knob_runs_without_graphs_and_says_why(monkeypatch):
    """--cuda-profile=dashboard turns Inductor's CUDA graphs on through its config (not torch's API): where this torch
    has no such knob (a config module without triton.cudagraphs stands in for it), the config runs without graphs,
    its record says so (`cudagraphs`: false) and why (`absent`); and a torch without dynamo's counters can't count
    the graphs Inductor skipped: that figure is absent too, saying why."""
    import sys

    import torch._dynamo.utils
    import torch._inductor

    from benchmarks.child import torch_internals
    from benchmarks.features.cuda_profile import child as cuda_profile_child
    from benchmarks.config.experiment_config import ExperimentConfig

    monkeypatch.setattr(torch_internals, "ABSENT", {})
    moved = types.ModuleType("torch._inductor.config")
    monkeypatch.setattr(torch._inductor, "config", moved)
    monkeypatch.setitem(sys.modules, "torch._inductor.config", moved)
    profiled = ExperimentConfig("cuda", None, "inductor", "eval", precision="bf16", compile_mode="default",
                                compile_cache="cold", cuda_profile="dashboard")
    assert cuda_profile_child.before_build({"suite_name": "torchvision", "model_name": "resnet18"}, profiled) == {"cudagraphs": False}
    monkeypatch.delattr(torch._dynamo.utils, "counters")
    assert cuda_profile_child.cudagraph_skips() is None
    absent = torch_internals.absent()
    assert set(absent) == {"cudagraphs", "cudagraph_skips"}
    assert "torch._inductor.config.triton.cudagraphs could not be read (AttributeError" in absent["cudagraphs"]
    assert "torch._dynamo.utils.counters could not be read (ImportError" in absent["cudagraph_skips"]
