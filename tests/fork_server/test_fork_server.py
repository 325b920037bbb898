"""--launch=fork: children forked from a fork server that has imported torch (benchmarks/fork_server/__init__.py).
A forked child's record equals a spawned child's (eager, Inductor, XLA); faults in forked children leave the
server and the sweep intact (tests/runner/test_failures.py's sweep); a killed server is started again and its
config re-run once; threads and cores are what was asked; nothing one config does is seen by the next; which
configs must be spawned instead."""

import os
import signal
import subprocess

import psutil
import pytest

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.process_env import child_environment
from benchmarks.config.feature_options import DiagnosticsOptions
from benchmarks.config.run_options import RunOptions
from benchmarks.fork_server import client
from benchmarks.runner import forked_launch
from helpers import PYTHON, ROOT, XLA, call_runner, forked_configs, processes_mentioning, read_jsonl, run_runner, \
    wait_for

PROBE_MODEL = ROOT / "tests" / "fixtures" / "fork_probe" / "state_probe.py"
FAULTS = ["--launch=fork", "--suite-name=faults", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=1",
          "--warmup=1", "--subprocess-timeout=15", "--subprocess-memory-limit=1G"]
ENTRY = [PYTHON, str(ROOT / "experiment_runner.py")]


def spec_of(experiment, options=RunOptions(), extra_env=None):
    env = child_environment(experiment, options, dict(os.environ), {"suite_name": "dummy", "model_name": "mlp"})
    env.update(extra_env or {})
    return client.server_spec(experiment, options, env, ENTRY + ["--repeat=1"], ENTRY)


# ---------------------------------------------------------------- which configs fork (fast)


def test_eager_and_xla_configs_each_have_their_server_and_thread_settings_do_not_matter():
    eager = spec_of(ExperimentConfig("cpu", None, None, "eval"))
    inductor = spec_of(ExperimentConfig("cpu", None, "inductor", "train"), extra_env={
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"})  # a --jobs grant
    xla = spec_of(ExperimentConfig("cpu", "PJRT", None, "eval"))
    assert eager is not None and eager == inductor and eager.kind == "torch"
    assert xla is not None and xla.kind == "xla" and ("PJRT_DEVICE", "CPU") in xla.env


def test_a_servers_log_name_tells_its_allocator_policy_apart_and_the_default_adds_nothing():
    eager = ExperimentConfig("cpu", None, None, "eval")
    assert client.server_variant(eager) == "" and client.server_variant(eager.with_(allocator="glibc")) == ""
    assert client.server_variant(eager.with_(allocator="jemalloc")) == "allocator-jemalloc"
    assert client.ServerSpec("torch", (), (), variant="allocator-jemalloc").name == "torch-allocator-jemalloc"


def test_configs_whose_environment_acts_before_import_torch_are_spawned():
    xla = ExperimentConfig("cpu", "PJRT", None, "eval")
    assert spec_of(xla.with_(xla_flags="--xla_cpu_use_thunk_runtime=false")) is None  # read at torch_xla's import
    dump = RunOptions(diagnostics=DiagnosticsOptions(dump_hlo=True))
    assert spec_of(xla, dump) is None  # --dump-hlo: a per-config XLA_FLAGS
    assert spec_of(ExperimentConfig("cpu", None, None, "eval"), extra_env={"LD_PRELOAD": "libx.so"}) is None
    experiment = ExperimentConfig("cpu", None, None, "eval")
    env = child_environment(experiment, RunOptions(), dict(os.environ))
    assert client.server_spec(experiment, RunOptions(), env, ["python", "other.py"], ENTRY) is None


def test_a_server_preloads_dynamo_and_inductor_only_when_its_sweep_needs_them():
    eval_eager, train_eager = ExperimentConfig("cpu", None, None, "eval"), ExperimentConfig("cpu", None, None, "train")
    # every config counts its roofline's work (FakeTensorMode imports dynamo) unless --no-roofline
    assert client.preloads_for([eval_eager]) == (client.DYNAMO, client.FLOP_COUNTER)
    assert client.preloads_for([eval_eager], counts_work=False) == ()
    assert client.preloads_for([eval_eager, train_eager], counts_work=False) == (client.DYNAMO,)
    openxla = ExperimentConfig("cpu", "PJRT", "openxla", "eval")
    assert client.preloads_for([openxla], counts_work=False) == (client.DYNAMO,)
    assert client.preloads_for([openxla]) == (client.DYNAMO, client.FLOP_COUNTER)
    for backend in ("inductor", "aot_inductor"):  # on the CPU, the server probes the CPU for Inductor's code too
        assert client.preloads_for([eval_eager, ExperimentConfig("cpu", None, backend, "eval")], counts_work=False) == (
            client.DYNAMO, client.INDUCTOR, client.CPU_VEC_ISA_PROBE)
        assert client.preloads_for([ExperimentConfig("cuda", None, backend, "eval")]) == (
            client.DYNAMO, client.FLOP_COUNTER, client.INDUCTOR)


COUNT_AFTER_PRELOADS = """
import importlib, sys, torch
from benchmarks.fork_server import client
for name in client.PRELOAD["torch"] + client.preloads_for([], counts_work=True):
    importlib.import_module(name)
before = set(sys.modules)
from benchmarks.child import work_count
module = torch.nn.Linear(8, 8)
flops, _, missed = work_count.counted_flops(lambda: module(torch.randn(2, 8)), fake=True)
print(flops, sorted(name for name in set(sys.modules) - before if name.split(".")[0] == "torch"))
"""


@pytest.mark.integration
def test_a_roofline_count_after_the_servers_preloads_imports_no_more_of_torch():
    # The count runs in every child after its timed runs; what it would import there (dynamo, sympy: about 850
    # modules, most of an eager child's seconds) is imported once by the server instead.
    result = subprocess.run([PYTHON, "-c", COUNT_AFTER_PRELOADS], capture_output=True, text=True, cwd=ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    flops, imported = result.stdout.split(" ", 1)
    assert int(flops) == 2 * 2 * 8 * 8 and imported.strip() == "[]", result.stdout


def test_a_bad_launch_value_is_one_line_and_exit_2(tmp_path):
    result = call_runner("--launch=vfork", "-k", "^mlp$", f"--output-dirname={tmp_path / 'out'}")
    assert result.returncode == 2 and "--launch: invalid choice: 'vfork'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


@pytest.mark.process  # how a forked process ends
def test_a_forked_child_ends_as_an_interpreter_would_without_tearing_its_modules_down(tmp_path):
    """zygote.exit_now: the child's threads finish (an idle thread pool, as Inductor leaves, is stopped), its
    atexit functions run, a file it never closed is flushed, a dead weak proxy is passed over, and the status is
    the one asked for."""
    script = f"""
import atexit, concurrent.futures, os, sys, threading, time, weakref
from benchmarks.fork_server import zygote
class Gone: pass
dead = weakref.proxy(Gone())  # a weak proxy whose object is gone (Inductor's leave such): isinstance raises on it
pid = os.fork()
if pid == 0:
    left_open = open({str(tmp_path / 'left_open.txt')!r}, "w")
    left_open.write("buffered, never closed")
    atexit.register(lambda: open({str(tmp_path / 'atexit.txt')!r}, "w").write("ran"))
    threading.Thread(target=lambda: (time.sleep(0.3), open({str(tmp_path / 'thread.txt')!r}, "w").write("done"))).start()
    concurrent.futures.ThreadPoolExecutor(1).submit(time.sleep, 0.1)  # its idle worker waits to be told to stop
    zygote.exit_now(zygote.exit_code(SystemExit(3)))
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""
    result = subprocess.run([PYTHON, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.stdout.strip() == "3", result.stderr
    assert (tmp_path / "left_open.txt").read_text() == "buffered, never closed"
    assert (tmp_path / "atexit.txt").read_text() == "ran" and (tmp_path / "thread.txt").read_text() == "done"


# ---------------------------------------------------------------- real sweeps


def without_timings(record: dict) -> dict:
    """A record with what differs between two runs of one config left out: timings, memory, the sweep's facts, and
    where its rerun writes (under each sweep's own output)."""
    # the calibrated block's size is measured too (how many calls make one sample last its target)
    kept = {k: v for k, v in record.items() if k not in ("run_seconds", "environment", "iterations_per_run",
                                                            "timing_block")}
    kept["timing_block_how"] = (record.get("timing_block") or {}).get("how")
    kept["diagnostics"] = {k: v for k, v in record["diagnostics"].items() if k != "cpu_vec_isa"}  # where it was probed
    kept["rerun"] = record["rerun"].replace("/spawn/", "/").replace("/fork/", "/")
    kept["metrics"] = {name: len(values) for name, values in record["metrics"].items()}
    if kept.get("dynamo_stats"):  # compile seconds are timings; their phases are not
        kept["dynamo_stats"] = {name: sorted(value) if name.startswith("compile_seconds") else value
                                for name, value in record["dynamo_stats"].items()}
    if kept.get("error"):
        kept["error"] = dict(kept["error"], log=None)
    if kept.get("roofline"):  # the counts are the config's; the rates, fractions and the count's time are timings
        kept["roofline"] = {k: v for k, v in record["roofline"].items()
                            if k in ("flops_per_iteration", "bytes_per_iteration", "bytes_detail", "arithmetic_intensity",
                                     "dtype", "how", "why_not")}
        kept["metrics"].pop("fraction_of_attainable", None)  # left out where a lucky run beat the ceilings
    return kept


@pytest.mark.integration
def test_forked_records_equal_spawned_records_for_eager_inductor_and_xla(tmp_path):
    args = ["-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--xla=PJRT", "--dynamo=None", "--dynamo=inductor",
            "--test=eval", "--repeat=1", "--warmup=1", "--verify", "--timestamp=1"]
    run_runner(*args, "--launch=spawn", f"--output-dirname={tmp_path / 'spawn'}", check_rc=0)
    forked = run_runner(*args, "--launch=fork", f"--output-dirname={tmp_path / 'fork'}", check_rc=0)
    spawned, fork = read_jsonl(tmp_path / "spawn/results.jsonl"), read_jsonl(tmp_path / "fork/results.jsonl")
    configs = [(r["experiment"]["xla"], r["experiment"]["dynamo"]) for r in fork]
    # PJRT + inductor: dropped; every XLA config where torch-xla can't run (another torch than 2.9)
    assert configs == [(None, None), (None, "inductor")] + ([("PJRT", None)] if XLA else [])
    assert [r["environment"]["launch"] for r in spawned] == ["spawn"] * len(configs)
    assert [r["environment"]["launch"] for r in fork] == ["fork"] * len(configs)
    assert all(r["status"] == "ok" and r["verification_code"] == "PASS" for r in fork)
    assert [without_timings(r) for r in fork] == [without_timings(r) for r in spawned]
    # Inductor's probe of the CPU: once in the fork server, which its child inherits; in a spawned child's setup
    probes = {launch: [r["diagnostics"].get("cpu_vec_isa") for r in records]
              for launch, records in (("fork", fork), ("spawn", spawned))}
    assert probes["fork"][0] is None and probes["fork"][1]["probed"] == "fork server"
    assert probes["fork"][1]["seconds"] == 0 and probes["fork"][1]["isa"] == probes["spawn"][1]["isa"]
    assert probes["spawn"][1]["probed"] == "setup" and probes["spawn"][1]["seconds"] > 0
    assert "fork server (torch) started" in forked.stderr and ("fork server (xla) started" in forked.stderr) == XLA


# Faults in forked children leave the server and the sweep intact: tests/runner/test_failures.py, whose sweep of every
# fault is forked from one server (the same sweep here was a second run of it).


def fork_server_of(runner_pid: int):
    for process in processes_mentioning("benchmarks.fork_server.zygote"):
        if f"--parent-pid={runner_pid}" in process.cmdline():
            return process
    return None


@pytest.mark.integration
def test_a_killed_server_is_started_again_and_its_config_runs_once_more(tmp_path):
    runner = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *FAULTS, "-k", "^sleepy$", "--repeat=6",
                               f"--output-dirname={tmp_path}"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    server = wait_for(lambda: fork_server_of(runner.pid), 180, "the fork server")
    child = wait_for(lambda: forked_configs(server), 180, "its child")[0]  # the config's child, forked
    server.send_signal(signal.SIGKILL)
    _, stderr = runner.communicate(timeout=300)
    assert runner.returncode == 0, stderr
    assert not psutil.pid_exists(child.pid) or child.status() == psutil.STATUS_ZOMBIE  # it died with its server
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "ok" and record["environment"]["launch"] == "fork"
    assert stderr.count("fork server (torch) started") == 2 and "starting a new fork server" in stderr
    log = (tmp_path / record["error"]["log"] if record.get("error") else tmp_path / "logs/sleepy/cpu-eager-eval.log")
    assert "[fork server] the fork server died" in log.read_text()
    assert processes_mentioning(str(tmp_path)) == [] and fork_server_of(runner.pid) is None


def probe_sweep(tmp_path, *args):
    out = tmp_path / "seen.jsonl"
    env = dict(os.environ, STATE_PROBE_OUT=str(out))
    run_runner("--launch=fork", "--suite-name=files", f"--model-file={PROBE_MODEL}", "--accelerator=cpu", "--xla=None",
               "--dynamo=None", "--test=eval", "--repeat=1", "--warmup=0", f"--output-dirname={tmp_path / 'out'}",
               *args, env=env, check_rc=0)
    return read_jsonl(out), read_jsonl(tmp_path / "out/results.jsonl")


@pytest.mark.integration
def test_nothing_one_forked_config_does_is_seen_by_the_next_and_pinning_holds(tmp_path):
    seen, results = probe_sweep(tmp_path, "--batch-size=1", "--batch-size=2", "--batch-size=3", "--cpu-affinity=1",
                                "--no-roofline")
    assert [r["environment"]["launch"] for r in results] == ["fork"] * 3 and len(seen) == 3
    assert len({s["pid"] for s in seen}) == 3 and len({s["ppid"] for s in seen}) == 1  # three forks of one server
    assert all(s["leaks"] == [] for s in seen), seen  # every config changed them all; none saw another's
    assert all(s["cores"] == [1] and s["threads"] == 1 for s in seen), seen  # pinned as asked, threads to match
    assert all(s["preloaded"] == [] for s in seen)  # eager inference, no roofline count: its server imported no dynamo


@pytest.mark.integration
def test_a_training_sweeps_server_has_imported_dynamo_before_each_child(tmp_path):
    seen, results = probe_sweep(tmp_path, "--batch-size=1", "--test=train")  # and eval: the probe's default
    assert [(r["experiment"]["test"], r["environment"]["launch"], r["status"]) for r in results] == [
        ("eval", "fork", "ok"), ("train", "fork", "ok")]
    # A train step's optimizer, and every roofline count, would import dynamo in each child (the count the FLOP
    # counter too); the sweep's server imported them once.
    assert [s["preloaded"] for s in seen] == [["torch._dynamo", "torch.utils.flop_counter"]] * 2


@pytest.mark.integration
def test_forked_children_of_a_parallel_sweep_get_their_cores_and_threads(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 cores")
    seen, results = probe_sweep(tmp_path, "--batch-size=1", "--batch-size=2", "--jobs=2")
    assert [r["environment"]["launch"] for r in results] == ["fork"] * 2
    for observed in seen:
        record = next(r for r in results if r["environment"]["cpu_affinity"] == observed["cores"])
        assert record["environment"]["executor"]["cores"] == observed["cores"] and len(observed["cores"]) == 1
        assert observed["threads"] == 1 and observed["omp"] == "1" and observed["leaks"] == []


@pytest.mark.integration
def test_a_forked_config_that_crashes_at_once_still_says_which_cores_it_had(tmp_path):
    # It may end before the launcher can read its affinity back: its fork server set the cores in it first.
    core = sorted(os.sched_getaffinity(0))[-1]
    run_runner(*FAULTS, "-k", "^segfault$", f"--cpu-affinity={core}", f"--output-dirname={tmp_path}", check_rc=1)
    [record] = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "crash" and record["environment"]["launch"] == "fork"
    assert record["environment"]["cpu_affinity"] == [core]


def test_only_a_forked_childs_cores_are_known_when_it_ended_before_they_could_be_read():
    from benchmarks.runner.launcher import cores_it_had

    assert cores_it_had([1], [1], "spawn") == [1]
    assert cores_it_had(None, [1, 0], "fork") == [0, 1]  # its fork server pinned it before it ran
    assert cores_it_had(None, [1], "spawn") is None  # a spawned child that quick was never pinned
    assert cores_it_had(None, None, "fork") is None  # nothing asked, nothing read


# ---------------------------------------------------------------- CUDA in forked children

CUDA_PROBE = ROOT / "tests" / "fixtures" / "fork_probe" / "cuda_fork_probe.py"


def probe_server(tmp_path, kind: str, preloads: tuple, extra_env=None):
    """A real fork server of `kind` with the sweep's `preloads`, whose children run the CUDA probe entry point."""
    env = client.before_import(dict(os.environ, **(extra_env or {})))
    if kind == "xla":
        env["PJRT_DEVICE"] = "CPU"
    spec = client.ServerSpec(kind, tuple(sorted(env.items())), (PYTHON, str(CUDA_PROBE)))
    name = f"{kind}-{'-'.join(p.rsplit('.', 1)[-1] for p in preloads) or 'plain'}"
    return client.ForkServer(spec, str(tmp_path / f"server-{name}.log"), preloads), name, preloads


def forked_on(server, request):
    return forked_launch.run_forked(request, lambda spec, replacing: server, server)


def probe_request(tmp_path, name: str, uses_cuda: bool = True):
    from benchmarks.runner import launcher

    return launcher.ChildRequest(argv=[PYTHON, str(CUDA_PROBE)], env=dict(os.environ),
                                 log_path=str(tmp_path / f"child-{name}.log"), timeout=300, uses_cuda=uses_cuda)


@pytest.mark.integration
def test_a_child_forked_after_every_preload_the_sweeps_use_may_still_use_cuda(tmp_path):
    # Inductor's import asks torch.cuda.is_available(); asked of the CUDA runtime, that marks every later fork
    # bad ("Cannot re-initialize CUDA in forked subprocess"), even on a machine without a GPU.
    preload_sets = {client.preloads_for([ExperimentConfig("cpu", None, dynamo, test)], counts_work)
                    for dynamo, test, counts_work in [(None, "eval", False), (None, "eval", True),
                                                      (None, "train", True), ("inductor", "eval", True)]}
    assert preload_sets == {(), (client.DYNAMO, client.FLOP_COUNTER),
                            (client.DYNAMO, client.FLOP_COUNTER, client.INDUCTOR, client.CPU_VEC_ISA_PROBE)}
    kinds = ("torch", "xla") if XLA else ("torch",)  # an XLA server only where torch-xla runs beside this torch
    servers = [probe_server(tmp_path, kind, preloads) for kind in kinds for preloads in sorted(preload_sets)]
    try:
        for server, name, preloads in servers:
            result = forked_on(server, probe_request(tmp_path, name))
            assert result.launch == "fork" and result.launch_reason is None, (name, result)
            assert result.record["bad_fork"] is False, (name, (tmp_path / f"server-{name}.log").read_text())
            # what the server imported is what the child finds; the variables set for the imports are put back
            modules = {name.partition(":")[0] for name in preloads}  # "module:function": the module, then its call
            assert set(result.record["preloaded"]) >= modules | ({"torch_xla"} if server.spec.kind == "xla" else set())
            assert result.record["isa_probed"] == (client.CPU_VEC_ISA_PROBE in preloads)
            assert result.record["nvml_check"] == os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
            assert result.record["visible"] == os.environ.get("CUDA_VISIBLE_DEVICES")
    finally:
        for server, _, _ in servers:
            server.stop()


@pytest.mark.integration
def test_a_server_whose_forks_cant_use_cuda_has_its_cuda_configs_spawned_and_says_why(tmp_path):
    # A preload that asks the CUDA runtime itself, as Inductor's import did: the server's check finds its forks
    # bad, refuses CUDA configs (each is spawned, its record says why) and still forks the others.
    server, name, _ = probe_server(tmp_path, "torch", ("asks_cuda_runtime",),
                                {"PYTHONPATH": str(CUDA_PROBE.parent)})
    try:
        cuda = forked_on(server, probe_request(tmp_path, "cuda"))
        cpu = forked_on(server, probe_request(tmp_path, "cpu", uses_cuda=False))
    finally:
        server.stop()
    assert cuda.launch == "spawn" and cuda.record["bad_fork"] is False  # a fresh interpreter: CUDA usable
    assert "asked the CUDA runtime" in cuda.launch_reason and cuda.launch_reason.endswith("spawned instead")
    assert "[fork server] the fork server's imports asked the CUDA runtime" in (tmp_path / "child-cuda.log").read_text()
    assert cpu.launch == "fork" and cpu.record["bad_fork"] is True  # the check was right: its forks are bad
    assert "CUDA configs are spawned" in (tmp_path / f"server-{name}.log").read_text()


@pytest.mark.integration
def test_a_torch_without_the_bad_fork_check_has_its_cuda_configs_spawned_and_says_why(tmp_path):
    # torch._C._cuda_isInBadFork is torch's private API: a torch without it leaves the server unable to tell whether
    # its forks may use CUDA, so it spawns its CUDA configs, each record saying why, and still forks the others.
    server, name, _ = probe_server(tmp_path, "torch", ("no_bad_fork_check",), {"PYTHONPATH": str(CUDA_PROBE.parent)})
    try:
        cuda = forked_on(server, probe_request(tmp_path, "cuda"))
        cpu = forked_on(server, probe_request(tmp_path, "cpu", uses_cuda=False))
    finally:
        server.stop()
    assert cuda.launch == "spawn" and "has no torch._C._cuda_isInBadFork" in cuda.launch_reason
    assert cpu.launch == "fork"
    assert "so the fork server can't tell whether its forks may use CUDA; CUDA configs are spawned" in \
        (tmp_path / f"server-{name}.log").read_text()


def test_a_config_spawned_instead_of_forked_says_why_in_its_record(tmp_path):
    from benchmarks.runner import launcher, result_records
    from benchmarks.runner.plan import Config

    config = Config({"suite_name": "dummy", "model_name": "mlp"}, ExperimentConfig("cuda", None, None, "eval"))
    options = RunOptions(output_dirname=str(tmp_path))
    why = "the fork server's imports asked the CUDA runtime for its devices; spawned instead"
    for reason, launch in [(why, "spawn"), (None, "fork")]:
        result = launcher.ChildResult(record=None, returncode=-9, launch=launch, launch_reason=reason)
        record = result_records.child_record(config, options, result, str(tmp_path / "x.log"), {})
        assert record["environment"]["launch"] == launch
        assert record["environment"].get("launch_reason") == reason  # only a config spawned instead has one
