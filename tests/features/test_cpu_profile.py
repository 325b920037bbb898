"""--cpu-profile=dashboard: PyTorch's CPU dashboard setup as one choice (docs/runner.md, "The CPU dashboard's
setup"). Real sweeps of the dummy suite: every piece recorded in environment.cpu_profile (jemalloc with its
MALLOC_CONF, Intel OpenMP and its settings, threads, memory binding, freezing for Inductor inference), a piece that
can't be had named as missing; an --allocator that contradicts the profile is one line and exit 2."""

import os

import pytest

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.features import allocator, cpu_profile
from helpers import call_runner, read_jsonl, run_runner

MLP = ["--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--test=eval", "--repeat=2",
       "--warmup=1", "--cpu-profile=dashboard"]
JEMALLOC = allocator.library("jemalloc")
pytestmark = pytest.mark.skipif(JEMALLOC is None, reason="libjemalloc.so.2 is not installed (Debian: apt-get install "
                                "libjemalloc2, or `make env` as root): the dashboard's allocator")


def test_an_allocator_that_contradicts_the_profile_is_one_line_and_exit_2(tmp_path):
    result = call_runner(*MLP, "--dynamo=None", "--allocator=glibc", f"--output-dirname={tmp_path}", "--dry-run")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "experiment_runner.py: error: --cpu-profile=dashboard runs jemalloc with the dashboard's MALLOC_CONF; "
        "--allocator=glibc contradicts it: pass one of them (or --allocator=jemalloc)"]
    call_runner(*MLP, "--dynamo=None", "--allocator=jemalloc", f"--output-dirname={tmp_path}", "--dry-run", check_rc=0)


def test_the_profile_freezes_inductor_inference_only():
    eval_inductor = ExperimentConfig("cpu", None, "inductor", "eval", inductor_config="max_autotune=False",
                                     allocator="jemalloc", cpu_profile="dashboard")
    assert cpu_profile.settle(eval_inductor).inductor_config == "freezing=True,max_autotune=False"
    for other in (eval_inductor.with_(test="train"), eval_inductor.with_(dynamo=None, inductor_config=None),
                  eval_inductor.with_(cpu_profile=None)):
        assert cpu_profile.settle(other) == other


@pytest.fixture(scope="module")
def dashboard_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("dashboard")
    run_runner(*MLP, "--dynamo=None", "--dynamo=inductor", f"--output-dirname={out}", check_rc=0)
    return {r["experiment"]["dynamo"]: r for r in read_jsonl(out / "results.jsonl")}


@pytest.mark.integration
def test_every_piece_of_the_dashboards_setup_is_recorded(dashboard_sweep):
    eager, inductor = dashboard_sweep[None], dashboard_sweep["inductor"]
    assert inductor["experiment"]["inductor_config"] == "freezing=True" and inductor["status"] == "ok"
    for record in (eager, inductor):
        profile = record["environment"]["cpu_profile"]
        assert record["experiment"]["allocator"] == "jemalloc" and record["experiment"]["cpu_profile"] == "dashboard"
        assert profile["allocator"] == {"name": "jemalloc", "malloc_conf": cpu_profile.MALLOC_CONF, "ok": True}
        assert record["environment"]["allocator"]["library_mapped"] is True
        cores = len(os.sched_getaffinity(0))
        assert profile["threads"] == {"cores": cores, "OMP_NUM_THREADS": str(cores), "torch_threads": cores, "ok": True}
        # what can't be had here is named, and only that
        expected_missing = []
        if cpu_profile.openmp_library() is None:
            expected_missing.append(cpu_profile.OPENMP_MISSING)
        else:
            assert profile["openmp"]["mapped"] and profile["openmp"]["variables"] == cpu_profile.OPENMP_VARIABLES
        if allocator.find_library(cpu_profile.NUMA_LIBRARY) is None:
            expected_missing.append(cpu_profile.NUMA_MISSING)
        else:
            assert profile["numa"]["membind"] is True and profile["numa"]["nodes"]
        assert profile["missing"] == expected_missing and profile["as_dashboard"] is (not expected_missing)
    assert eager["environment"]["cpu_profile"]["freezing"] == {"applies": False, "ok": None}
    assert inductor["environment"]["cpu_profile"]["freezing"] == {"applies": True, "ok": True}


@pytest.mark.integration
def test_pieces_that_are_not_installed_are_named_in_the_record_and_warned_of(tmp_path):
    only_jemalloc = tmp_path / "libs"
    only_jemalloc.mkdir()
    (only_jemalloc / "libjemalloc.so.2").symlink_to(JEMALLOC)  # Intel OpenMP and libnuma not found
    env = dict(os.environ, **{allocator.DIRS_VARIABLE: str(only_jemalloc)})
    run_runner(*MLP, "--dynamo=None", f"--output-dirname={tmp_path / 'out'}", env=env, check_rc=0)
    [record] = read_jsonl(tmp_path / "out" / "results.jsonl")
    profile = record["environment"]["cpu_profile"]
    assert profile["missing"] == [cpu_profile.OPENMP_MISSING, cpu_profile.NUMA_MISSING]
    assert profile["as_dashboard"] is False and profile["allocator"]["ok"] is True
    assert profile["numa"] == {"cores": profile["numa"]["cores"], "nodes": profile["numa"]["nodes"], "membind": False,
                               "ok": False, "missing": cpu_profile.NUMA_MISSING}
    [warning] = record["warnings"]
    assert warning.startswith("cpu profile dashboard: not as the dashboard runs: Intel OpenMP")
