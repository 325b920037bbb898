"""--allocator: the C allocator policy of every child, set before its interpreter starts (docs/runner.md,
"The C allocator"). Real sweeps of the dummy suite: the policy is in the child's start environment (a forked
child's is its fork server's), a preloaded library is mapped into the child, configs of different policies get
different fork servers, a config by hand restarts itself under its policy, a library that is not installed is a
dropped config with the package to install."""

import json
import os

import pytest

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.process_env import child_environment
from benchmarks.config.run_options import RunOptions
from benchmarks.features import allocator
from benchmarks.fork_server import client
from benchmarks.results.records import fingerprint
from helpers import PYTHON, ROOT, read_jsonl, run_runner

ENTRY = [PYTHON, str(ROOT / "experiment_runner.py")]
EAGER = ["--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
         "--repeat=2", "--warmup=1"]
JEMALLOC = allocator.library("jemalloc")
NEEDS_JEMALLOC = pytest.mark.skipif(JEMALLOC is None, reason="libjemalloc.so.2 is not installed (Debian: apt-get "
                                    "install libjemalloc2, or `make env` as root)")


def policy_env(name, base=None):
    experiment = ExperimentConfig("cpu", None, None, "eval", allocator=name)
    return child_environment(experiment, RunOptions(), dict(base if base is not None else os.environ))


# ---------------------------------------------------------------- the policy's variables (fast)


def test_glibc_policy_fixes_both_thresholds_and_drops_an_inherited_allocator():
    inherited = {"LD_PRELOAD": "/opt/x/libjemalloc.so.2 /opt/y/libother.so", "MALLOC_CONF": "narenas:1",
                 "MALLOC_MMAP_THRESHOLD_": "4096"}
    env = policy_env("glibc", inherited)
    assert env["MALLOC_MMAP_THRESHOLD_"] == "33554432" and env["MALLOC_TRIM_THRESHOLD_"] == "268435456"
    assert env["MALLOC_MMAP_MAX_"] == "0"
    assert env["LD_PRELOAD"] == "/opt/y/libother.so" and "MALLOC_CONF" not in env
    assert policy_env("system", inherited) == dict(inherited, PYTHONUNBUFFERED="1", XLA_DISABLE_FUNCTIONALIZATION="1")


@NEEDS_JEMALLOC
def test_jemalloc_policy_preloads_the_library_first_and_sets_no_glibc_threshold():
    env = policy_env("jemalloc", {"LD_PRELOAD": "/opt/y/libother.so", "MALLOC_TRIM_THRESHOLD_": "1"})
    assert env["LD_PRELOAD"].split() == [JEMALLOC, "/opt/y/libother.so"]
    assert not any(name in env for name in allocator.GLIBC_VARIABLES)


def test_the_default_policy_is_left_out_of_the_fingerprint_and_the_config_name():
    glibc = ExperimentConfig("cpu", None, None, "eval")
    old = {k: v for k, v in glibc.to_dict().items() if k != "allocator"}  # a record written before the key
    assert fingerprint({"model_name": "m"}, glibc.to_dict(), None, False) == fingerprint({"model_name": "m"}, old,
                                                                                           None, False)
    jemalloc = glibc.with_(allocator="jemalloc")
    assert fingerprint({"model_name": "m"}, jemalloc.to_dict(), None, False) != fingerprint({"model_name": "m"}, old,
                                                                                             None, False)
    assert glibc.slug() == "cpu-eager-eval" and jemalloc.slug().endswith("alloc-jemalloc")
    assert ExperimentConfig.from_dict(old).allocator == "glibc"


def test_configs_of_different_policies_get_different_fork_servers_started_under_their_policy():
    specs = {}
    for name in ("glibc", "system"):
        experiment = ExperimentConfig("cpu", None, None, "eval", allocator=name)
        env = child_environment(experiment, RunOptions(), dict(os.environ), {"suite_name": "dummy", "model_name": "mlp"})
        specs[name] = client.server_spec(experiment, RunOptions(), env, ENTRY + ["--repeat=1"], ENTRY)
    assert specs["glibc"] is not None and specs["system"] is not None and specs["glibc"] != specs["system"]
    glibc_env = dict(specs["glibc"].env)  # what the server process is started with (ForkServer: env=spec.env)
    assert {k: glibc_env.get(k) for k in allocator.GLIBC_VARIABLES} == allocator.GLIBC_VARIABLES
    assert specs["glibc"].name == "torch" and specs["system"].name == "torch-allocator-system"


# ---------------------------------------------------------------- real sweeps


@pytest.fixture(scope="module")
def forked_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("allocators")
    names = ["glibc", "system"] + (["jemalloc"] if JEMALLOC else [])
    run_runner(*EAGER, *[f"--allocator={name}" for name in names], f"--output-dirname={out}", check_rc=0)
    return {r["experiment"]["allocator"]: r for r in read_jsonl(out / "results.jsonl")}, out


@pytest.mark.integration
def test_glibc_policy_is_in_the_forked_childs_start_environment(forked_sweep):
    records, out = forked_sweep
    glibc = records["glibc"]
    assert glibc["environment"]["launch"] == "fork"
    # read by the child from /proc/self/environ: a forked child's is its fork server's start environment
    assert glibc["environment"]["allocator"] == {"name": "glibc", "library": None, "library_mapped": None,
                                                 "variables": allocator.GLIBC_VARIABLES, "preload": None,
                                                 "applied": True, "problem": None}
    system = records["system"]["environment"]["allocator"]
    assert system["name"] == "system" and system["applied"] and not set(system["variables"]) & set(
        allocator.GLIBC_VARIABLES)
    # one server per policy, each with its own log
    assert (out / "logs" / "fork-server-torch.log").exists()
    assert (out / "logs" / "fork-server-torch-allocator-system.log").exists()


@pytest.mark.integration
@NEEDS_JEMALLOC
def test_jemalloc_is_mapped_into_the_forked_child(forked_sweep):
    described = forked_sweep[0]["jemalloc"]["environment"]["allocator"]
    assert described["library"] == JEMALLOC and described["library_mapped"] is True and described["applied"]
    assert forked_sweep[0]["jemalloc"]["status"] == "ok"


@pytest.mark.integration
@NEEDS_JEMALLOC
def test_a_spawned_child_and_a_config_by_hand_run_under_their_policy(tmp_path):
    run_runner(*EAGER, "--allocator=jemalloc", "--launch=spawn", f"--output-dirname={tmp_path / 'spawn'}",
               check_rc=0)
    [spawned] = read_jsonl(tmp_path / "spawn" / "results.jsonl")
    assert spawned["environment"]["launch"] == "spawn" and spawned["environment"]["allocator"]["library_mapped"]
    # by hand, from an environment without the policy: the config restarts itself under it before torch loads
    experiment = {"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval", "allocator": "jemalloc"}
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    run_runner("--repeat=1", "--warmup=0", f"--output-dirname={tmp_path / 'hand'}",
               '--model-config={"model_name": "mlp", "suite_name": "dummy"}',
               f"--experiment-config={json.dumps(experiment)}", env=env, check_rc=0)
    [by_hand] = read_jsonl(tmp_path / "hand" / "results.jsonl")
    assert by_hand["environment"]["allocator"]["library_mapped"] is True and by_hand["environment"]["allocator"][
        "applied"]


@pytest.mark.integration
def test_an_allocator_whose_library_is_missing_is_dropped_with_the_package_to_install(tmp_path):
    env = dict(os.environ, **{allocator.DIRS_VARIABLE: str(tmp_path)})  # an empty directory: nothing installed
    result = run_runner(*EAGER, "--allocator=glibc", "--allocator=tcmalloc", f"--output-dirname={tmp_path}",
                        "--dry-run", env=env, check_rc=0)
    assert ("dropped: accelerator=cpu test=eval allocator=tcmalloc: --allocator=tcmalloc preloads "
            "libtcmalloc_minimal.so.4, which is not installed here (Debian: apt-get install libtcmalloc-minimal4"
            in result.stdout), result.stdout
    assert "1 to run" in result.stdout


# ---------------------------------------------------------------- page faults in the timed runs


def test_heavy_faults_need_every_timed_run_to_fault_many_times_and_often():
    from benchmarks.results.page_faults import heavy_faults_warning

    assert heavy_faults_warning([20000, 16000], [0.010, 0.012]).startswith("page faults: 16000 minor faults")
    assert heavy_faults_warning([20000, 10], [0.010, 0.012]) is None  # one run's first touch, not every run's
    assert heavy_faults_warning([20000], [0.010]) is None  # one timed run can't tell
    assert heavy_faults_warning([300, 300], [0.100, 0.100]) is None  # 3 per ms: a slow model's few faults
    assert heavy_faults_warning([100, 100], [0.0001, 0.0001]) is None  # a fast model's few stray ones


@pytest.mark.integration
def test_every_timed_run_records_its_minor_faults_per_iteration(forked_sweep, page_churn):
    for record in [*forked_sweep[0].values(), *page_churn[1].values()]:
        faults = record["metrics"]["minor_faults_per_iter"]
        # one figure per timed run: that run's whole count of faults over its --iterations-per-run iterations
        assert len(faults) == record["repeat"] == len(record["metrics"]["total_time"]), record["metrics"]
        whole = [value * record["iterations_per_run"] for value in faults]
        assert all(count >= 0 and abs(count - round(count)) < 1e-6 for count in whole), (faults, record["iterations_per_run"])
    assert page_churn[1]["system"]["iterations_per_run"] == 2
    # a model that touches a fresh 64 MiB buffer every iteration faults each of its pages, every iteration; a small
    # model whose memory stays in the heap faults a few pages at the most
    churn = page_churn[1]["system"]["metrics"]["minor_faults_per_iter"]
    quiet = forked_sweep[0]["glibc"]["metrics"]["minor_faults_per_iter"]
    assert min(churn) >= 64 * 2**20 / 4096 * 0.9
    assert max(quiet) < min(churn) / 20, (quiet, churn)


@pytest.fixture(scope="module")
def page_churn(tmp_path_factory):
    """page_churn (a fresh 64 MiB buffer every forward), two iterations a timed run, under the inherited allocator and
    the default policy."""
    out = tmp_path_factory.mktemp("page-churn")
    run_runner("--suite-name=faults", "-k", "^page_churn$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
               "--test=eval", "--repeat=10", "--iterations-per-run=2", "--warmup=1", "--allocator=system", "--allocator=glibc",
               f"--output-dirname={out}", check_rc=0)
    return out, {record["experiment"].get("allocator", allocator.DEFAULT): record
                 for record in read_jsonl(out / "results.jsonl")}


@pytest.mark.integration
def test_a_config_whose_timed_runs_fault_heavily_gets_a_warning_in_its_record_and_log(page_churn):
    out, records = page_churn
    record = records["system"]
    assert min(record["metrics"]["minor_faults_per_iter"]) >= 64 * 2**20 / 4096 * 0.9  # its buffer, every page
    [warning] = record["warnings"]
    assert warning.startswith("page faults: ") and "per iteration" in warning
    logs = out / "logs" / "page_churn"
    assert any(warning in (logs / name).read_text() for name in os.listdir(logs))


@pytest.mark.integration
def test_under_the_default_policy_a_block_above_32_mib_is_reused_not_faulted_in_again(page_churn):
    # glibc caps its mmap threshold at 32 MiB: only MALLOC_MMAP_MAX_=0 keeps such a block in the heap. Small
    # allocations between runs may take a piece of the freed block, so the heap can grow again a few times
    # before it settles (seen: 16384 faults in each of the first 0 to 6 of 10 runs, then 0 to 6); once it holds
    # the block, the block is reused, and the warning (which needs every timed run to fault) is not given.
    record = page_churn[1]["glibc"]
    assert min(record["metrics"]["minor_faults_per_iter"]) < 64 * 2**20 / 4096 * 0.05
    assert "warnings" not in record
    assert record["environment"]["allocator"]["variables"]["MALLOC_MMAP_MAX_"] == "0"
