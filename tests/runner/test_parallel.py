"""--jobs N and --executor=ray: the same records as a serial sweep, spread over disjoint cores or Ray tasks,
with the parent still the only writer; resume, --retry-failed, lost workers, SIGKILL of the parent, Ctrl-C;
the resource split and the probe cache (docs/architecture.md, "Executors")."""

import json
import os
import signal
import subprocess
import time

import psutil
import pytest

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.plumbing import user_cache
from benchmarks.runner import capabilities
from benchmarks.runner.job_resources import Needs, ResourceError, ResourcePool, split_cores
from benchmarks.runner.plan import Config
from benchmarks.runner.resume import longest_first
from helpers import (PYTHON, ROOT, call_runner, processes_mentioning, ray_children, read_jsonl, run_runner, usable_cores,
                     wait_for)

EAGER = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--repeat=1", "--warmup=0"]
FAULTS = ["--suite-name=faults", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=1",
          "--warmup=0", "--subprocess-timeout=120"]


def experiment(accelerator="cpu", xla=None):
    return ExperimentConfig(accelerator=accelerator, xla=xla, dynamo=None, test="eval")


# ---------------------------------------------------------------- resources (fast)


def test_cores_split_into_equal_disjoint_groups():
    assert split_cores([3, 0, 1, 2], 2) == [(0, 1), (2, 3)]
    assert split_cores([0, 1, 2, 3, 4], 2) == [(0, 1), (2, 3)]  # the odd core stays unused: equal shares
    assert split_cores([5], 1) == [(5,)]
    with pytest.raises(ResourceError, match="--jobs 3 needs at least 3 CPU cores.*may use 2 \\(0,1\\)"):
        split_cores([0, 1], 3)


def test_cuda_configs_get_their_own_gpus_and_wait_for_them():
    pool = ResourcePool([0, 1, 2, 3], 4, gpus=[0, 1, 2], gpus_per_job=2)
    cuda = Needs.of(experiment("cuda"), gpus_per_job=2)
    assert cuda == Needs(gpus=2) and Needs.of(experiment("cpu"), 2) == Needs()
    first = pool.try_acquire(cuda)
    assert first.gpus == (0, 1) and first.child_env()["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert pool.try_acquire(cuda) is None  # one GPU left: the next CUDA config waits
    cpu = pool.try_acquire(Needs())
    assert cpu is not None and not cpu.gpus and set(cpu.cores).isdisjoint(first.cores)
    pool.release(first)
    second = pool.try_acquire(cuda)
    assert second is not None and len(second.gpus) == 2
    assert pool.impossible(Needs(gpus=4)) == "needs 4 GPU(s) (--gpus-per-job) and this machine shows 3"


def test_tpu_configs_run_one_at_a_time_and_cores_bound_the_jobs():
    pool = ResourcePool([0, 1, 2, 3], 2)
    tpu = Needs.of(experiment("tpu", "PJRT"), gpus_per_job=1)
    held = pool.try_acquire(tpu)
    assert held.tpu and pool.try_acquire(tpu) is None  # the host's TPU is taken
    other = pool.try_acquire(Needs())
    assert other is not None and pool.try_acquire(Needs()) is None  # two jobs, two core groups, both held
    pool.release(held)
    assert pool.try_acquire(tpu) is not None


def test_a_grant_sizes_the_childs_threads_to_its_cores():
    grant = ResourcePool([0, 1, 2, 3], 2).try_acquire(Needs())
    env = grant.child_env()
    assert grant.cores == (0, 1) and env["OMP_NUM_THREADS"] == "2" and env["TORCHINDUCTOR_COMPILE_THREADS"] == "2"
    assert "CUDA_VISIBLE_DEVICES" not in env


def test_longest_configs_go_first_when_earlier_run_times_are_known():
    configs = [Config({"suite_name": "dummy", "model_name": name}, experiment()) for name in "abcd"]
    todo = [(c, None) for c in configs]
    assert longest_first(todo, {}) == todo  # nothing known: plan order
    seconds = {configs[1].fingerprint: 10.0, configs[3].fingerprint: 30.0, configs[2].fingerprint: 1.0}
    order = [c.model["model_name"] for c, _ in longest_first(todo, seconds)]
    assert order == ["d", "a", "b", "c"]  # a was never run: it counts as the median (10 s); ties keep plan order


# ---------------------------------------------------------------- the probe cache (fast)


def test_the_probe_cache_key_changes_with_devices_versions_and_the_question(monkeypatch):
    argv = capabilities.probe_argv([ExperimentConfig("cpu", "PJRT", "openxla", "eval")])
    assert argv[-3:] == ["benchmarks.runner.probe", "--xla-kind=CPU", "--dynamo"]
    assert capabilities.probe_argv([experiment()]) is None  # plain eager CPU: nothing to ask
    base = {"PATH": "/usr/bin"}
    key = capabilities.cache_key(argv, base)
    assert key == capabilities.cache_key(argv, dict(base, UNRELATED="1"))
    assert key != capabilities.cache_key(argv, dict(base, CUDA_VISIBLE_DEVICES="0"))
    assert key != capabilities.cache_key(argv, dict(base, PJRT_DEVICE="TPU"))
    assert key != capabilities.cache_key(argv + ["--cuda"], base)
    monkeypatch.setattr(capabilities, "_package_stamp", lambda name: [name, "/elsewhere", 1])
    assert key != capabilities.cache_key(argv, base)  # another torch install


def test_the_probe_cache_directory_follows_the_environment(tmp_path):
    assert user_cache.cache_dir({user_cache.CACHE_ENV: "off"}) is None
    assert user_cache.cache_dir({user_cache.CACHE_ENV: str(tmp_path)}) == str(tmp_path)
    assert user_cache.cache_dir({"XDG_CACHE_HOME": "/x"}) == "/x/ptbench-matrix"


# ---------------------------------------------------------------- bad input (fast: nothing runs)


@pytest.mark.parametrize("args, message", [
    (["--jobs=0"], "--jobs: must be a positive integer"),
    (["--jobs=two"], "--jobs: not an integer"),
    (["--jobs=4", f"--cpu-affinity={','.join(map(str, usable_cores()[:3]))}"], "--jobs 4 needs at least 4 CPU cores"),
    (["--gpus-per-job=0"], "--gpus-per-job: must be a positive integer"),
    (["--executor=slurm"], "--executor: invalid choice"),
])
def test_bad_parallel_flags_are_one_line_and_exit_2(args, message, tmp_path):
    result = call_runner(*EAGER, "--test=eval", "-k", "^mlp$", *args, f"--output-dirname={tmp_path / 'out'}")
    assert result.returncode == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_artifacts_uri_without_ray_is_one_line_and_exit_2(tmp_path):
    result = call_runner(*EAGER, "--test=eval", "-k", "^mlp$", f"--artifacts-uri=file://{tmp_path / 'shared'}",
                        f"--output-dirname={tmp_path / 'out'}")
    assert result.returncode == 2 and "pass it with --executor=ray" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


@pytest.mark.process  # Ray, once imported and asked to connect, stays in its process
def test_an_unreachable_ray_address_is_one_line_and_exit_2(tmp_path):
    result = run_runner(*EAGER, "--test=eval", "-k", "^mlp$", "--executor=ray", "--ray-address=127.0.0.1:9",
                        f"--output-dirname={tmp_path / 'out'}")
    assert result.returncode == 2 and "cannot reach the Ray cluster at 127.0.0.1:9" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


@pytest.mark.process  # what a fresh interpreter can import
def test_ray_not_installed_is_one_line_and_exit_2(tmp_path):
    shadow = tmp_path / "shadow" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named ray (shadowed by the test)')\n")
    env = dict(os.environ, PYTHONPATH=str(shadow.parent))
    result = run_runner(*EAGER, "--test=eval", "-k", "^mlp$", "--executor=ray", f"--output-dirname={tmp_path / 'out'}",
                        env=env)
    assert result.returncode == 2 and "--executor=ray needs Ray" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_dry_run_shows_the_executor_and_each_jobs_cores(tmp_path):
    cores = usable_cores()[:2]
    result = call_runner(*EAGER, "--test=eval", "-k", "^mlp$", f"--jobs={len(cores)}",
                         f"--cpu-affinity={','.join(map(str, cores))}", "--dry-run", f"--output-dirname={tmp_path}",
                         check_rc=0)
    assert "# executor: local on" in result.stdout
    each = f"{len(cores)} job(s), cores per job: {'; '.join(map(str, cores))}"
    assert (each if len(cores) > 1 else "one job at a time") in result.stdout  # pinned to one core: one job


# ---------------------------------------------------------------- real sweeps


def outcome(records: list) -> dict:
    from benchmarks.results import records as record_rules

    return {record_rules.record_fingerprint(r): (r["status"], tuple(sorted(r))) for r in records}


# Two working models and one that fails while it is built, eval and train: one suite, so each way is one sweep (one
# runner, one fork server, one Ray instance).
SWEEP = [*FAULTS, "--test=train", "-k", "^(row_wise|normalises_over_batch|raise_on_load)$"]


@pytest.fixture(scope="module")
def three_ways(tmp_path_factory):
    """The same small sweep (two models, eval and train, two failing configs) serially, with --jobs 2, on Ray."""
    out = {}
    for name, extra in (("serial", []), ("jobs", ["--jobs=2"]), ("ray", ["--executor=ray", "--jobs=2"])):
        folder = tmp_path_factory.mktemp(name)
        run_runner(*SWEEP, *extra, f"--output-dirname={folder}", check_rc=1)
        out[name] = (folder, read_jsonl(folder / "results.jsonl"))
    return out


@pytest.mark.integration
def test_jobs_and_ray_write_the_same_records_as_a_serial_sweep(three_ways):
    serial = outcome(three_ways["serial"][1])
    assert len(serial) == 6 and sorted(s for s, _ in serial.values()) == ["error", "error", "ok", "ok", "ok", "ok"]
    for name in ("jobs", "ray"):
        assert outcome(three_ways[name][1]) == serial, name
    for name, (_, records) in three_ways.items():
        for record in records:
            facts = record["environment"]["executor"]
            assert facts["kind"] == ("ray" if name == "ray" else "local")
            assert record["run_seconds"] > 0 and facts["jobs"] == (1 if name == "serial" else 2)


@pytest.mark.integration
def test_each_job_ran_on_the_cores_its_record_names(three_ways):
    _, records = three_ways["jobs"]
    for record in records:
        facts = record["environment"]["executor"]
        assert len(facts["cores"]) == len(psutil.Process().cpu_affinity()) // 2
        assert record["environment"]["cpu_affinity"] == facts["cores"]  # the child's own reading after pinning
    assert any(r["environment"]["executor"]["running_beside_at_start"] for r in records)


@pytest.mark.integration
@pytest.mark.parametrize("how", ["jobs", "ray"])
def test_resume_and_retry_failed_in_parallel(three_ways, how):
    folder, before = three_ways[how]
    extra = ["--jobs=2"] if how == "jobs" else ["--executor=ray", "--jobs=2"]
    if how == "jobs":  # a plain resume runs nothing (on Ray it would start Ray only to describe it: the run below
        # shows the resume there, its ok configs already done)
        resumed = run_runner(*SWEEP, *extra, f"--output-dirname={folder}")
        assert "0 ok, 0 failed, 0 skipped (6 already done)" in resumed.stdout
        assert read_jsonl(folder / "results.jsonl") == before
    result = run_runner(*SWEEP, "--retry-failed", *extra, f"--output-dirname={folder}", check_rc=1)
    assert "0 ok, 2 failed, 0 skipped (4 already done)" in result.stdout  # the ok configs not run again
    after = read_jsonl(folder / "results.jsonl")
    assert after[: len(before)] == before and len(after) == len(before) + 2  # only the failed configs again
    assert {r["model"]["model_name"] for r in after[len(before):]} == {"raise_on_load"}


def child_of(tmp_path, model: str):
    """The running child process of `model` in a sweep writing under tmp_path."""
    for proc in processes_mentioning(str(tmp_path)):
        cmdline = " ".join(proc.cmdline())
        if "--model-config" in cmdline and f'"model_name": "{model}"' in cmdline:
            return proc
    return None


def ray_child_of(driver_pid: int, model: str):
    """(the running child of `model` in the Ray sweep driven by `driver_pid`, the Ray worker whose task runs it).
    A spawned child names its model on its command line and is its worker's child; a forked one shows its fork
    server's command line, and its output goes to the task's log, which its worker holds open too."""
    for proc in ray_children(driver_pid):
        try:
            if f'"model_name": "{model}"' in " ".join(proc.cmdline()):
                return proc, psutil.Process(proc.ppid())
            for log in [f.path for f in proc.open_files() if f.path.endswith(".log")]:
                with open(log, encoding="utf-8", errors="replace") as handle:
                    if f'"model_name": "{model}"' not in handle.readline().replace('\\"', '"'):  # the log quotes
                        continue
                for other in psutil.Process(driver_pid).children(recursive=True):
                    if other.pid != proc.pid and any(f.path == log for f in other.open_files()):
                        return proc, other
        except (psutil.Error, OSError):  # it ended meanwhile
            continue
    return None


@pytest.mark.integration
@pytest.mark.parametrize("launch", ["spawn", "fork"])
def test_a_lost_ray_worker_runs_its_config_once_more_then_is_a_crash_record(tmp_path, launch):
    """A forked child is not its worker's child: its node's fork server kills it when the worker that asked for
    it hangs up (zygote.abandoned)."""
    parent = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *FAULTS, "-k", "^(hang|sleepy)$",
                               "--executor=ray", "--jobs=2", f"--launch={launch}", f"--output-dirname={tmp_path}"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(2):  # lost once: run again; lost twice: a crash record
        hang, worker = wait_for(lambda: ray_child_of(parent.pid, "hang"), what="the hang child")
        time.sleep(2.0)  # it is in its forward call now
        assert "ray::" in " ".join(worker.cmdline())
        worker.kill()
        wait_for(lambda: not hang.is_running() or hang.status() == psutil.STATUS_ZOMBIE, timeout=30,
                 what="the lost child to die with its worker")
    out, err = parent.communicate(timeout=180)
    assert parent.returncode == 1, err  # a crash record: the sweep went on, its answer is bad news
    records = {r["model"]["model_name"]: r for r in read_jsonl(tmp_path / "results.jsonl")}
    assert records["sleepy"]["status"] == "ok" and records["sleepy"]["environment"]["executor"]["retries"] == 0
    assert records["sleepy"]["environment"]["launch"] == launch
    lost = records["hang"]
    assert lost["status"] == "crash" and lost["error"]["type"] == "ExecutorLost"
    assert "Ray worker running this config was lost" in lost["error"]["message"]
    assert lost["environment"]["executor"]["retries"] == 1
    assert (tmp_path / lost["error"]["log"]).exists()
    wait_for(lambda: not ray_children(parent.pid), timeout=20, what="no process left")


@pytest.mark.integration
def test_sigkill_of_the_parent_with_two_children_running_leaves_nothing_and_resume_completes(tmp_path):
    # Spawned: the test finds each child by its own command line (a forked child shows its fork server's;
    # test_failures.py and test_fork_server.py kill forked sweeps).
    args = [*FAULTS, "-k", "^sleepy$", "--repeat=6", "--jobs=2", "--batch-size=1", "--batch-size=2",
            "--batch-size=3", "--batch-size=4", "--launch=spawn", f"--output-dirname={tmp_path}"]
    parent = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *args], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: len([p for p in processes_mentioning(str(tmp_path)) if "--model-config" in " ".join(p.cmdline())])
             == 2, what="two children running")
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    wait_for(lambda: not processes_mentioning(str(tmp_path)), timeout=15, what="the children to die with the parent")
    results = tmp_path / "results.jsonl"
    before = read_jsonl(results) if results.exists() else []
    assert len(before) < 4
    run_runner(*args, check_rc=0)
    after = read_jsonl(results)
    assert sorted(r["requested_batch_size"] for r in after) == [1, 2, 3, 4]  # each config exactly once
    assert after[: len(before)] == before and all(r["status"] == "ok" for r in after)


@pytest.mark.integration
def test_ctrl_c_stops_every_running_child(tmp_path):
    parent = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *FAULTS, "-k", "^(hang|sleepy)$",
                               "--jobs=2", "--repeat=100", "--launch=spawn",  # children found by their command line
                               f"--output-dirname={tmp_path}"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: child_of(tmp_path, "hang") and child_of(tmp_path, "sleepy"), what="both children")
    parent.send_signal(signal.SIGINT)
    _, err = parent.communicate(timeout=60)
    assert parent.returncode == 130 and "Resume with:" in err and "Traceback" not in err
    assert processes_mentioning(str(tmp_path)) == []
    assert not (tmp_path / "results.jsonl").exists() or read_jsonl(tmp_path / "results.jsonl") == []


@pytest.mark.integration
def test_a_repeated_sweep_reuses_the_probe_answer_and_a_device_change_asks_again(tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, **{user_cache.CACHE_ENV: str(cache)})
    args = ["--accelerator=cpu", "--xla=None", "--dynamo=inductor", "--test=eval", "-k", "^mlp$", "--dry-run",
            "--timestamp=1", f"--output-dirname={tmp_path / 'out'}"]
    first = run_runner(*args, env=env, check_rc=0)
    entries = sorted(cache.iterdir())
    assert len(entries) == 1 and "inductor" in json.loads(entries[0].read_text())["dynamo_backends"]
    second = run_runner(*args, env=env, check_rc=0)
    assert second.stdout == first.stdout and sorted(cache.iterdir()) == entries
    run_runner(*args, env=dict(env, CUDA_VISIBLE_DEVICES=""), check_rc=0)
    assert len(list(cache.iterdir())) == 2  # another device setting: probed again, cached apart
