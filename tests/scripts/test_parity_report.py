"""scripts/parity/report.py (fast): the side-by-side table and its differences, from harness CSV files and our
records the tests write (no harness, no torch); finding a harness checkout; the shims the harness runs under
(against a stand-in harness module of the test's own); the command line's bad-usage exits."""

import json
import subprocess

import pytest

from helpers import PYTHON, call_main

from benchmarks.config import experiment_config
from scripts.parity import harness
from scripts.parity import report
from scripts.parity import table

ACCURACY_HEADER = ("dev,name,batch_size,accuracy,calls_captured,unique_graphs,graph_breaks,unique_graph_breaks,"
                   "autograd_captures,autograd_compiles,cudagraph_skips,compilation_latency\n")
PERFORMANCE_HEADER = ("dev,name,batch_size,speedup,abs_latency,compilation_latency,compression_ratio,eager_peak_mem,"
                      "dynamo_peak_mem,calls_captured,unique_graphs,graph_breaks,unique_graph_breaks,"
                      "autograd_captures,autograd_compiles,cudagraph_skips\n")
DCGAN = table.Spec("torchbench", "dcgan", "eval", "fp32", 2)


def write_harness(out, spec, accuracy="pass", speedup=1.0, compile_s=10.0, breaks=0, calls=13, eager_mem=25.0,
                  compiled_mem=26.0, performance_row=None):
    path = table.harness_csv(out, spec, "accuracy")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ACCURACY_HEADER + f"cpu,{spec.model},{spec.batch_size},{accuracy},{calls},1,{breaks},0,0,0,1,22.0\n")
    row = performance_row or (f"cpu,{spec.model},{spec.batch_size},{speedup:.6f},2.0,{compile_s:.6f},"
                              f"{eager_mem / compiled_mem:.6f},{eager_mem:.6f},{compiled_mem:.6f},{calls},1,{breaks},0,0,0,0")
    table.harness_csv(out, spec, "performance").write_text(PERFORMANCE_HEADER + row + "\n")


def record(spec, dynamo, ms, first_s, memory, accuracy="pass", reference="fp64", breaks=0, calls=13, status="ok",
           **extra):
    experiment = experiment_config.ExperimentConfig("cpu", None, dynamo, spec.test, batch_size=spec.batch_size,
                                                    precision=spec.precision,
                                                    compile_mode="default" if dynamo else None,
                                                    compile_cache="cold" if dynamo else None)
    out = {"model": {"suite_name": spec.suite, "model_name": spec.model}, "experiment": experiment.to_dict(),
           "status": status, "requested_batch_size": spec.batch_size, "warmup": 2, "iterations_per_run": 1,
           "verify": True, "accuracy": accuracy, "accuracy_reference": reference, "memory_kind": "cpu_rss_above_baseline",
           "metrics": {"per_iter_time": [ms / 1e3] * 3, "total_time": [ms / 1e3] * 3,
                       "warmup_time": [first_s, ms / 1e3], "peak_memory_bytes": [memory] * 3}}
    if dynamo:
        out["dynamo_stats"] = {"calls_captured": calls, "graphs": 1 + breaks, "graph_breaks": breaks,
                               "unique_graph_breaks": min(breaks, 1), "recompiles": 0}
    if status != "ok":
        out["metrics"] = {"error": "it broke"}
        out["error"] = {"type": "RuntimeError", "message": "it broke", "phase": "compile"}
    out.update(extra)
    return out


def write_ours(out, *found):
    path = out / "ours" / "results.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.writelines(json.dumps(r) + "\n" for r in found)
    return path


def one_row(out, spec=DCGAN):
    return table.build_rows([spec], out, out / "ours" / "results.jsonl")[0]


def test_agreeing_figures_give_no_difference(tmp_path):
    # harness: speedup 1.0, compile 10 s, compression 25/26; ours: 2 ms / 2 ms, first runs 10.5 s - 0.5 s, 25/26 MiB
    write_harness(tmp_path, DCGAN, speedup=1.0, compile_s=10.0)
    write_ours(tmp_path, record(DCGAN, None, 2.0, 0.5, 25 * 2**20), record(DCGAN, "inductor", 2.0, 10.5, 26 * 2**20))
    row = one_row(tmp_path)
    assert row.differences == []
    cells = table.cells(row)
    assert cells[3:9] == ("2 / 2", "pass / pass", "1.00x / 1.00x", "10.0 / 10.0", "0 / 0", "0.96 / 0.96")
    assert cells[9] == "none"


def test_each_difference_is_named_with_its_reason(tmp_path):
    write_harness(tmp_path, DCGAN, speedup=1.0, compile_s=10.0, eager_mem=25.0, compiled_mem=26.0, calls=13)
    write_ours(tmp_path, record(DCGAN, None, 1.8, 0.5, 34 * 2**20, reference=None),
               record(DCGAN, "inductor", 7.2, 20.5, 74 * 2**20, accuracy="fail_accuracy", reference=None, calls=12))
    row = one_row(tmp_path)
    named = {d.what: d for d in row.differences}
    assert set(named) == {"accuracy", "accuracy rule", "speedup", "compile latency", "calls captured", "memory"}
    assert str(named["accuracy"]) == "accuracy pass vs fail_accuracy [accuracy-rule]"
    assert "mean relative error" in named["accuracy rule"].text
    assert str(named["speedup"]) == "speedup 1.00x vs 0.25x [timing]"
    assert str(named["compile latency"]) == "compile latency 10.0 s vs 20.0 s [compile]"
    # the harness's figure is 100 x RSS in GB: 25.0 -> 2.5e8 bytes -> 238 MiB
    assert named["memory"].text == ("compression 0.96 vs 0.46 (harness RSS 238 -> 248 MiB; "
                                    "ours above baseline 34 -> 74 MiB)")
    assert named["memory"].reason == "cpu-memory"
    rendered = table.render([row])
    for key in ("accuracy-rule", "timing", "compile", "cpu-memory", "graphs"):
        assert f"  [{key}] {table.REASONS[key]}" in rendered


def test_training_graph_breaks_cite_the_training_step(tmp_path):
    spec = table.Spec("timm", "mobilenetv2_100", "train", "fp32", 8)
    write_harness(tmp_path, spec, breaks=5)
    write_ours(tmp_path, record(spec, None, 2.0, 0.5, 25 * 2**20), record(spec, "inductor", 2.0, 10.5, 26 * 2**20))
    named = {d.what: str(d) for d in one_row(tmp_path, spec).differences}
    assert named == {"graph breaks": "graph breaks 5 vs 0 [train-step]"}


def test_graph_breaks_are_the_accuracy_csvs_and_calls_captured_the_performance_csvs(tmp_path):
    # dcgan training in the harness: its accuracy check (the dashboard's count) 5 breaks, eval mode (13 calls);
    # its performance warm-up 6 (collect_results), train mode (16 calls), as ours times it
    spec = table.Spec("torchbench", "dcgan", "train", "fp32", 2)
    write_harness(tmp_path, spec, breaks=5, calls=13,
                  performance_row="cpu,dcgan,2,0.76,30.6,21.9,0.94,95.5,101.0,16,1,6,5,0,0,1")
    side = table.harness_side(tmp_path, spec)
    assert (side.graph_breaks, side.calls_captured) == (5, 16)
    write_ours(tmp_path, record(spec, None, 2.0, 0.5, 25 * 2**20),
               record(spec, "inductor", 2.0, 10.5, 26 * 2**20, breaks=5, calls=16))
    assert not {d.what for d in one_row(tmp_path, spec).differences} & {"graph breaks", "calls captured"}


def test_the_harness_pairs_median_is_read_from_its_raw_timings_and_named_beside_its_ratio_of_medians(tmp_path):
    import numpy as np

    # phlippe_resnet training as measured here: half the harness's compiled runs disturbed, so its ratio of the two
    # medians (0.97x) is far from its own pairs' median (1.16x), which agrees with ours paired (1.10x)
    spec = table.Spec("torchbench", "phlippe_resnet", "train", "fp32", 2)
    eager = [14.32, 13.94, 14.01, 14.22, 14.31, 14.35, 17.23, 21.29, 21.15, 28.35]
    compiled = [12.14, 12.02, 12.25, 12.3, 12.59, 22.82, 16.83, 17.98, 17.43, 18.65]
    ratio_of_medians = float(np.median(eager) / np.median(compiled))
    write_harness(tmp_path, spec, speedup=ratio_of_medians, breaks=5)
    np.save(table.harness_raw_timings(tmp_path, spec), np.array([eager, compiled]).T / 1e3)
    assert table.harness_side(tmp_path, spec).paired_speedup == float(np.median(np.array(eager) / np.array(compiled)))
    ours = record(spec, "inductor", 2.0, 10.5, 26 * 2**20, breaks=5, paired_speedup={"median": 1.10})
    write_ours(tmp_path, record(spec, None, 2.0, 0.5, 25 * 2**20), ours)
    named = {d.what: str(d) for d in one_row(tmp_path, spec).differences}
    assert named["paired speedup"] == ("speedup 0.97x vs ours paired 1.10x (the harness's own pairs' median 1.16x: "
                                       "within 10%) [paired]")


def test_a_paired_speedup_is_shown_and_judged_against_the_harness(tmp_path):
    write_harness(tmp_path, DCGAN, speedup=1.0)
    write_ours(tmp_path, record(DCGAN, None, 1.8, 0.5, 25 * 2**20),
               record(DCGAN, "inductor", 7.2, 10.5, 26 * 2**20, paired_speedup={"median": 0.95, "low": 0.9}))
    row = one_row(tmp_path)
    assert row.ours.paired_speedup == 0.95
    assert table.cells(row)[5] == "1.00x / 0.25x (paired 0.95x)"
    assert [str(d) for d in row.differences] == ["speedup 1.00x vs 0.25x (ours paired 0.95x: within 10%) [timing]"]


def test_a_paired_speedup_beyond_the_harness_is_named_even_when_the_plain_one_agrees(tmp_path):
    write_harness(tmp_path, DCGAN, speedup=1.0)
    write_ours(tmp_path, record(DCGAN, None, 2.0, 0.5, 25 * 2**20),
               record(DCGAN, "inductor", 2.0, 10.5, 26 * 2**20, paired_speedup=0.5))
    assert [str(d) for d in one_row(tmp_path).differences] == ["speedup 1.00x vs ours paired 0.50x [paired]"]


def test_failures_and_missing_runs_are_named_never_compared(tmp_path):
    write_harness(tmp_path, DCGAN, performance_row="cpu,dcgan,0,0.0,0.0")  # the harness's failure row
    write_ours(tmp_path, record(DCGAN, None, 2.0, 0.5, 25 * 2**20), record(DCGAN, "inductor", 0, 0, 0, status="crash",
                                                                          accuracy="fail_to_run"))
    row = one_row(tmp_path)
    assert [str(d) for d in row.differences] == [
        "harness: performance run failed [no-figure]", "ours: inductor crash: it broke [no-figure]",
        "accuracy pass vs fail_to_run [no-figure]"]
    assert row.harness.speedup is None and row.ours.speedup is None
    assert table.cells(row)[5] == "- / -"
    nothing = one_row(tmp_path / "empty")
    assert [str(d) for d in nothing.differences] == [
        "harness: no accuracy run [no-figure]", "harness: no performance run [no-figure]",
        "ours: no inductor record [no-figure]"]


def test_our_rows_are_chosen_by_test_precision_and_batch_size(tmp_path):
    bf16 = table.Spec("torchbench", "dcgan", "eval", "bf16", 2)
    write_harness(tmp_path, DCGAN)
    write_ours(tmp_path, record(DCGAN, None, 2.0, 0.5, 25 * 2**20), record(DCGAN, "inductor", 2.0, 10.5, 26 * 2**20),
               record(bf16, None, 4.0, 0.5, 25 * 2**20), record(bf16, "inductor", 1.0, 10.5, 26 * 2**20))
    assert one_row(tmp_path).ours.speedup == 1.0
    assert one_row(tmp_path, bf16).ours.speedup == 4.0
    assert one_row(tmp_path, table.Spec("torchbench", "dcgan", "eval", "fp32", 4)).ours.problems == [
        "no inductor record"]


def test_the_memory_difference_gives_ours_by_the_harness_kind_of_memory_too(tmp_path):
    write_harness(tmp_path, DCGAN, eager_mem=25.0, compiled_mem=26.0)
    eager, compiled = record(DCGAN, None, 2.0, 0.5, 34 * 2**20), record(DCGAN, "inductor", 2.0, 10.5, 74 * 2**20)
    eager["metrics"]["process_rss_bytes"] = [480 * 2**20, 470 * 2**20, 475 * 2**20]
    compiled["metrics"]["process_rss_bytes"] = [500 * 2**20] * 3
    write_ours(tmp_path, eager, compiled)
    row = one_row(tmp_path)
    assert row.ours.process_compression == 0.95
    [memory] = [d for d in row.differences if d.what == "memory"]
    assert memory.text.endswith("ours above baseline 34 -> 74 MiB; ours by whole-process RSS 0.95)")
    table.write_csv([row], tmp_path / "parity.csv")
    import csv
    assert next(csv.DictReader(open(tmp_path / "parity.csv")))["ours_process_compression"] == "0.95"


def test_the_csv_holds_both_sides(tmp_path):
    write_harness(tmp_path, DCGAN, speedup=1.0)
    write_ours(tmp_path, record(DCGAN, None, 2.0, 0.5, 25 * 2**20), record(DCGAN, "inductor", 1.0, 10.5, 26 * 2**20))
    table.write_csv([one_row(tmp_path)], tmp_path / "parity.csv")
    import csv
    rows = list(csv.DictReader(open(tmp_path / "parity.csv")))
    assert rows[0]["harness_speedup"] == "1.0" and rows[0]["ours_speedup"] == "2.0"
    assert rows[0]["differences"] == "speedup 1.00x vs 2.00x [timing]"


# --- finding the harness, its shims and its command line ---

def fake_harness(directory):
    directory.mkdir(parents=True)
    (directory / "common.py").write_text(
        "import os, yaml\nclass BenchmarkRunner: pass\n"
        "def load_yaml_file(filename):\n"
        "    with open(os.path.join(os.path.dirname(__file__), filename)) as f:\n"
        "        return yaml.safe_load(f)\n")
    (directory / "torchbench.py").write_text("")
    return directory


def test_the_harness_is_found_in_either_layout_or_beside_the_project(tmp_path):
    fake_harness(tmp_path / "tb" / "userbenchmark" / "dynamo" / "dynamobench")
    fake_harness(tmp_path / "pytorch" / "benchmarks" / "dynamo")
    found = harness.harness_at(tmp_path / "tb")
    assert (found.layout, found.checkout, found.torchbench_dir) == ("torchbench", tmp_path / "tb", tmp_path / "tb")
    found = harness.harness_at(tmp_path / "pytorch" / "benchmarks" / "dynamo", tmp_path / "tb")
    assert (found.layout, found.checkout, found.torchbench_dir) == ("pytorch", tmp_path / "pytorch", tmp_path / "tb")
    assert harness.harness_at(tmp_path) is None
    project = tmp_path / "project"
    project.mkdir()
    assert harness.find_harness(None, project).checkout == tmp_path / "pytorch"  # siblings in name order
    lonely = tmp_path / "alone" / "project"
    lonely.mkdir(parents=True)
    with pytest.raises(harness.NoHarness, match="give --harness-dir"):
        harness.find_harness(None, lonely)


def test_the_harness_runs_under_our_childrens_allocator_policy_unless_told_otherwise(tmp_path):
    from benchmarks.features import allocator

    found = harness.harness_at(fake_harness(tmp_path / "tb" / "userbenchmark" / "dynamo" / "dynamobench").parents[2])
    inherited = {"PATH": "/usr/bin:/bin", "MALLOC_MMAP_THRESHOLD_": "4096"}
    env = harness.environment(found, tmp_path, [], base=dict(inherited))
    for name, value in allocator.GLIBC_VARIABLES.items():  # the default: our children's policy, not the inherited one
        assert env[name] == value
    untouched = harness.environment(found, tmp_path, [], base=dict(inherited), allocator_policy="system")
    assert untouched["MALLOC_MMAP_THRESHOLD_"] == "4096" and "MALLOC_TRIM_THRESHOLD_" not in untouched


def test_the_shims_fill_what_the_checkout_lacks_and_put_extra_paths_last(tmp_path):
    bench = fake_harness(tmp_path / "tb" / "userbenchmark" / "dynamo" / "dynamobench")
    (bench / "torchbench.yaml").write_text("skip:\n  all: [a, b]\n")
    found = harness.harness_at(tmp_path / "tb")
    scratch = harness.write_shims(found, tmp_path / "shims")
    assert sorted(p.name for p in scratch.iterdir()) == ["huggingface_llm_models.py", "sitecustomize.py",
                                                          "timm_models.yaml"]
    assert list(bench.iterdir()) and not (bench / "timm_models.yaml").exists()  # the checkout untouched
    env = harness.environment(found, scratch, [str(tmp_path / "deps")], base={"PATH": "/usr/bin:/bin"})
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["HF_HUB_OFFLINE"] == "1"
    probe = ("import sys, common, huggingface_llm_models\n"
             "print(common.load_yaml_file('timm_models.yaml')['skip']['device'])\n"
             "print(common.load_yaml_file('torchbench.yaml'))\n"
             "print(huggingface_llm_models.HF_LLM_MODELS, sys.path[-1])\n")
    result = subprocess.run([PYTHON, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "{'cpu': set(), 'cpu_aarch64': set()}"  # ours, lists read as sets as the harness reads them
    assert lines[1] == "{'skip': {'all': ['a', 'b']}}"  # the checkout's own file: the harness's own reader
    assert lines[2] == "{} " + str(tmp_path / "deps")
    assert not (bench / "__pycache__").exists()  # nothing written into the checkout


@pytest.mark.integration  # a fresh interpreter under the shims imports torchvision and builds resnet18: 3.5 s
def test_torchbench_torchvision_models_get_random_weights_instead_of_a_download(tmp_path):
    # TorchBench's resnet18 asks torchvision for ImageNet weights: offline (a GPU machine), a download that fails
    found = harness.harness_at(fake_harness(tmp_path / "tb" / "userbenchmark" / "dynamo" / "dynamobench"))
    factory = tmp_path / "tb" / "torchbenchmark" / "util" / "framework" / "vision"
    factory.mkdir(parents=True)
    for folder in (factory, factory.parent, factory.parent.parent, factory.parents[2]):
        (folder / "__init__.py").touch()
    (factory / "model_factory.py").write_text(
        "from torchvision import models\n"
        "def build(name):\n"
        "    return getattr(models, name)(weights=models.ResNet18_Weights.IMAGENET1K_V1)\n")
    scratch = harness.write_shims(found, tmp_path / "shims")
    env = harness.environment(found, scratch, [], base={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    probe = ("from torchbenchmark.util.framework.vision import model_factory\n"
             "print(type(model_factory.build('resnet18')).__name__)\n")
    result = subprocess.run([PYTHON, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.split() == ["ResNet"], result.stderr[-2000:]
    assert not (tmp_path / ".cache").exists()  # nothing was downloaded


def test_a_checkout_that_has_the_files_gets_no_shim_for_them(tmp_path):
    bench = fake_harness(tmp_path / "tb" / "userbenchmark" / "dynamo" / "dynamobench")
    (bench / "timm_models.yaml").write_text("skip: {}\n")
    (bench / "huggingface_llm_models.py").write_text("HF_LLM_MODELS = {}\n")
    scratch = harness.write_shims(harness.harness_at(tmp_path / "tb"), tmp_path / "shims")
    assert [p.name for p in scratch.iterdir()] == ["sitecustomize.py"]


def test_the_harness_command_names_the_same_config(tmp_path):
    found = harness.harness_at(fake_harness(tmp_path / "tb" / "userbenchmark" / "dynamo" / "dynamobench"))
    command = harness.command("py", found, "timm", "ghostnet_100", "train", "bf16", 8, "performance", 5,
                              tmp_path / "x.csv")
    assert command[:2] == ["py", str(found.bench_dir / "timm_models.py")]
    assert " ".join(command[2:]) == ("--performance --training --bfloat16 --backend inductor --device cpu --only "
                                     f"ghostnet_100 --batch-size 8 --cold-start-latency --output {tmp_path / 'x.csv'} "
                                     "--repeat 5 --dump-raw-metrics")
    on_gpu = harness.command("py", found, "timm", "ghostnet_100", "eval", "amp", 8, "performance", 5,
                             tmp_path / "x.csv", device="cuda")
    assert on_gpu[on_gpu.index("--device") + 1] == "cuda" and "--inference" in on_gpu and "--amp" in on_gpu


def test_our_sweep_names_the_same_configs_and_takes_extra_flags(tmp_path):
    options = report.parse(["--models", "dcgan,phlippe_resnet", "--tests", "eval,train", "--precisions", "bf16",
                            "--batch-size", "torchbench=4", "--repeat", "3", "--ours-args", "--freezing --rounds 2"])
    command = report.our_command("torchbench", ["phlippe_resnet", "dcgan"], options, options.batch["torchbench"],
                                 "/tb", tmp_path)
    assert command[2:] == ["--suite-name=torchbench", "--torchbench-dir=/tb", "-k", "^(dcgan|phlippe_resnet)$",
                           "--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=inductor", "--test=eval",
                           "--test=train", "--precision=bf16", "--batch-size=4", "--verify", "--repeat=3",
                           f"--output-dirname={tmp_path / 'ours'}", "--freezing", "--rounds", "2",
                           "--speedup=paired"]  # the harness's way of timing, unless another is named
    pinned = report.parse(["--cpu-affinity", "1", "--ours-args", "--rounds 2 --speedup=isolated"])
    assert pinned.cores == [1] and pinned.ours_args == ["--rounds", "2", "--speedup=isolated", "--cpu-affinity=1"]
    found = harness.harness_at(fake_harness(tmp_path / "tb" / "userbenchmark" / "dynamo" / "dynamobench"))
    env = harness.environment(found, tmp_path, [], base={}, cores=pinned.cores)
    assert env["OMP_NUM_THREADS"] == "1" == env["MKL_NUM_THREADS"]


# --- the command line ---

def run_script(*args):
    """The script's command line, in process (its exit status, stdout and stderr)."""
    return call_main(report.main, *args, name="scripts.parity.report")


@pytest.mark.parametrize("args, message", [
    (["--batch-size", "timm"], "--batch-size timm: expected SUITE=N"),
    (["--tests", "infer"], "--tests: infer is not one of eval, train"),
    (["--repeat", "0"], "--repeat must be at least 1"),
    (["--ours-args", "'unclosed"], "--harness-args/--ours-args: No closing quotation"),
    (["--cpu-affinity", "3-1"], "--cpu-affinity: '3-1' is not a valid core range"),
    (["--skip-harness", "--skip-ours", "--models", "nosuch"], "--models nosuch: not a default model"),
    (["--skip-harness", "--skip-ours", "--models", "huggingface:T5Small"], "from the Hugging Face hub"),
])
def test_bad_usage_is_one_line_and_exit_2(args, message, tmp_path):
    (tmp_path / "no-harness").mkdir()
    result = run_script(*args, "--out", tmp_path, "--harness-dir", tmp_path / "no-harness")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_torchbench_models_without_torchbench_checkout_is_one_line_and_exit_2(tmp_path):
    fake_harness(tmp_path / "pytorch" / "benchmarks" / "dynamo")  # a PyTorch checkout: TorchBench's models elsewhere
    result = run_script("--skip-harness", "--models", "dcgan", "--harness-dir", tmp_path / "pytorch", "--out",
                        tmp_path / "out")
    assert result.returncode == 2
    assert result.stderr == "parity_report: our TorchBench sweep needs TorchBench's checkout: --torchbench-dir DIR\n"


def test_no_checkout_is_one_line_and_exit_2(tmp_path):
    result = run_script("--harness-dir", tmp_path, "--out", tmp_path / "out")
    assert result.returncode == 2
    assert result.stderr == f"parity_report: {tmp_path} holds no dynamo harness (looked for " \
                            "userbenchmark/dynamo/dynamobench/common.py or benchmarks/dynamo/common.py)\n"


def test_finished_runs_are_read_again_without_running_anything(tmp_path):
    write_harness(tmp_path, DCGAN, speedup=1.0)
    write_ours(tmp_path, record(DCGAN, None, 2.0, 0.5, 25 * 2**20), record(DCGAN, "inductor", 1.0, 10.5, 26 * 2**20))
    result = run_script("--skip-harness", "--skip-ours", "--models", "dcgan", "--out", tmp_path,
                        "--harness-dir", tmp_path / "harness")  # none there: not needed to read finished runs
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["model", "test", "prec"]
    assert lines[1].startswith("dcgan  eval  fp32") and "speedup 1.00x vs 2.00x [timing]" in lines[1]
    assert (tmp_path / "parity.txt").read_text() == result.stdout
    assert (tmp_path / "parity.csv").exists()
