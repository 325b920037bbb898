"""`make gpu-check` (scripts/gpu/check.py) as far as this machine allows: without a CUDA device every part says it
is skipped and why (the tier's tests each say so too), exit 0; the comparison's own path (our sweep beside the plain
loop, the report's table) on the CPU; the report read from the tier's JUnit file."""

import json

import pytest

from helpers import PYTHON, ROOT, call_main

from scripts.gpu import check as gpu_check, check_machine
from scripts.parity import table as parity_table

SCRIPT = ["-m", "scripts.gpu.check"]
# What a lent GPU machine's Python has before any wheel is unpacked: the standard library and its torch image (numpy
# with it); the project is the tree, run from its root, not installed.
BARE_MACHINE = """
import importlib, importlib.abc, pathlib, sys
allowed = set(sys.stdlib_module_names) | {"torch", "numpy", "benchmarks", "scripts"}

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in allowed:
            raise ImportError(f"{name}: not on a bare GPU machine")

sys.meta_path.insert(0, Refuse())
for name in sys.argv[1:]:
    importlib.import_module(name)
print(*(pathlib.Path(sys.modules[top].__path__[0]).parent for top in ("benchmarks", "scripts")))
"""


def run_check(tmp_path, *args, timeout=600):
    import subprocess

    return subprocess.run([PYTHON, *SCRIPT, f"--out={tmp_path}", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def test_the_tier_is_the_files_make_test_gpu_runs():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    command = next(line for line in makefile.splitlines() if "-m gpu" in line)
    assert command.split("-m gpu", 1)[1].split() == list(gpu_check.TIER_FILES)
    assert all((ROOT / name).is_file() for name in gpu_check.TIER_FILES)


@pytest.mark.process  # a fresh interpreter: what the GPU scripts import at start
def test_the_gpu_scripts_start_from_the_root_on_a_python_with_torch_alone():
    """`python -m scripts.gpu.check` (and slice, harness_subset, the plain loop) from the root of the tree, the
    project not installed: at module top they import the standard library, torch's image and the tree's own code;
    the rest (psutil, yaml, ...) only after the wheels are unpacked."""
    import subprocess

    gpu = ("check", "slice", "slice_plan", "slice_report", "plain_loop", "harness_subset")
    modules = [f"scripts.gpu.{name}" for name in gpu] + ["scripts.parity.harness", "scripts.parity.table"]
    done = subprocess.run([PYTHON, "-c", BARE_MACHINE, *modules], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [str(ROOT), str(ROOT)]  # this tree's, not an installed copy


@pytest.mark.integration
def test_without_a_cuda_device_every_part_says_it_was_skipped_and_why(tmp_path):
    result = run_check(tmp_path, "--minutes=3")
    assert result.returncode == 0, result.stderr[-3000:]
    report = (tmp_path / "gpu-check.md").read_text()
    assert result.stdout.startswith(report)  # printed too: a run's output carries it home
    parts = {p["name"]: p for p in json.loads((tmp_path / "gpu-check.json").read_text())["parts"]}
    for name in ("GPU tier", "small sweep", "plain loop", "harness"):
        assert parts[name]["status"] == "skipped", parts[name]
    assert "no CUDA device is visible" in parts["small sweep"]["detail"]
    tier = gpu_check.tier_outcomes(tmp_path / "tier.xml")
    assert len(tier) >= 10 and {kind for _, kind, _ in tier} == {"skipped"}  # each test ran its skip, with why
    assert "- skipped: GPU tier: no CUDA device is visible" in report


@pytest.mark.integration
def test_the_comparison_times_our_sweep_beside_a_plain_loop_and_reports_one_table(tmp_path):
    result = run_check(tmp_path, "--accelerator=cpu", "--models=dummy:mlp:4", "--configs=eager,inductor",
                       "--minutes=6")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads((tmp_path / "gpu-check.json").read_text())["rows"]
    assert [(r["model"], r["config"]) for r in rows] == [("mlp", "eager"), ("mlp", "inductor")]
    assert all(r["ours_ms"] > 0 and r["plain_ms"] > 0 and r["harness_ms"] is None for r in rows), rows
    report = (tmp_path / "gpu-check.md").read_text()
    assert "| model | batch | config | ours | plain loop | ours / plain | harness | ours / harness |" in report
    assert "| mlp | 4 | eager | " in report and "| harness | skipped | no --harness-dir" in report


def test_the_report_reads_each_tests_outcome_from_the_tiers_junit_file(tmp_path):
    xml = tmp_path / "tier.xml"
    xml.write_text('<testsuites><testsuite><testcase name="a"/><testcase name="b"><failure message="boom&#10;more"/>'
                   '</testcase><testcase name="c"><skipped message="GPU tier: no device"/></testcase></testsuite>'
                   '</testsuites>')
    assert gpu_check.tier_outcomes(xml) == [("a", "passed", ""), ("b", "failed", "boom"),
                                            ("c", "skipped", "GPU tier: no device")]
    assert gpu_check.tier_outcomes(tmp_path / "absent.xml") == []


@pytest.mark.process  # the script's exit status and its one line: once as `python -m`, the rest in process
def test_bad_usage_is_one_line_and_exit_2(tmp_path):
    for index, args in enumerate((["--configs=eager,turbo"], ["--models=timm:x"], ["--minutes=0"])):
        result = (call_main(gpu_check.main, f"--out={tmp_path}", *args) if index else run_check(tmp_path, *args))
        assert result.returncode == 2 and "error: " in result.stderr.strip().splitlines()[-1], (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_no_gpu_reason_names_what_is_missing():
    assert check_machine.no_gpu_reason({"torch_error": "No module named 'torch'"}).startswith("torch does not import")
    assert "without CUDA" in check_machine.no_gpu_reason({"torch": "2.13.0+cpu", "cuda_built": False})
    assert check_machine.no_gpu_reason({"torch": "2.11.0", "cuda_built": True, "devices": []}) == "no CUDA device is visible"
    assert check_machine.no_gpu_reason({"torch": "2.11.0", "cuda_built": True, "devices": ["NVIDIA H100"]}) is None


def test_the_harness_failure_row_is_no_time_and_a_timed_row_gives_both(tmp_path):
    csv_path = tmp_path / "harness.csv"
    csv_path.write_text("dev,name,batch_size,speedup,abs_latency\ncuda,resnet18,0,0.000000,0.000000\n")
    assert gpu_check.harness_times(parity_table.read_csv_row(csv_path, "resnet18")) is None  # eager_fail_to_run
    assert gpu_check.harness_times(None) is None  # no CSV at all
    csv_path.write_text("dev,name,batch_size,speedup,abs_latency\ncuda,resnet18,32,2.5,1.2\n")
    times = gpu_check.harness_times(parity_table.read_csv_row(csv_path, "resnet18"))
    assert times == {"compiled": 1.2, "eager": pytest.approx(3.0)}


def test_the_plain_loop_runs_under_the_setup_ours_runs_under_the_profile():
    resnet, timm_model = gpu_check.MODELS
    assert gpu_check.plain_flags(resnet, "inductor+cudagraphs", "cuda") == [
        "--backend=inductor", "--cudagraphs", "--tf32", "--cudnn-benchmark"]  # TorchBench's factory autotunes it
    assert gpu_check.plain_flags(timm_model, "eager", "cuda") == ["--backend=eager", "--tf32"]
    assert gpu_check.plain_flags(resnet, "eager", "cpu") == ["--backend=eager"]


def wheel(folder, project, module, version="1.0"):
    """A wheel as pip downloads one: a zip of the module and its dist-info."""
    import zipfile

    path = folder / f"{project}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{module}/__init__.py", f"VERSION = {version!r}\n")
        archive.writestr(f"{project}-{version}.dist-info/METADATA", f"Name: {project}\n")
    return path


def test_a_carried_library_missing_here_comes_with_its_companions_and_their_missing_dependencies(tmp_path,
                                                                                               monkeypatch):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel(wheels, "slicefake_lib", "slicefake_lib")
    wheel(wheels, "slicefake_hub", "slicefake_hub", "0.9")
    wheel(wheels, "slicefake_hub", "slicefake_hub", "2.4")  # the newest of a project is the one unpacked
    wheel(wheels, "slicefake_dep", "slicefake_dep")  # a dependency of theirs this Python lacks
    wheel(wheels, "PyYAML", "yaml")  # one it has: left alone
    monkeypatch.setattr(check_machine, "CARRIED_GROUPS", {"slicefake_lib": ("slicefake_lib", "slicefake_hub"),
                                                      "json": ("json_wheel_never_looked_for",)})
    options = gpu_check.parse([f"--out={tmp_path / 'out'}", f"--wheels={wheels}"])
    check = check_machine.Check(options)
    check_machine.unpack_wheels(check)
    site = tmp_path / "out" / "site"
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info")) == [
        "slicefake_dep", "slicefake_hub", "slicefake_lib"]
    assert (site / "slicefake_hub" / "__init__.py").read_text() == "VERSION = '2.4'\n"
    assert str(site) in check.env["PYTHONPATH"].split(":")
    part = check.parts["packages"]
    assert part.status == "ok" and part.detail.startswith("unpacked slicefake_lib-1.0-py3-none-any.whl, "
                                                          "slicefake_hub-2.4-py3-none-any.whl, slicefake_dep")
