"""--executor=ray on clusters as users run them: a head started with `ray start --head` (token auth), a stale
cluster file, and a simulated multi-node cluster (ray.cluster_utils.Cluster: nodes with their own resources on
this machine): configs spread over nodes, cores pinned and disjoint, artifacts home, a node removed mid-sweep,
a killed driver (docs/parallel.md)."""

import os
import re
import signal
import subprocess
import tempfile
import time

import psutil
import pytest

from helpers import PYTHON, ROOT, processes_mentioning, ray_children, read_jsonl, run_runner, wait_for

pytestmark = pytest.mark.integration

EAGER = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=1", "--warmup=0"]
SLEEPY = ["--suite-name=faults", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--warmup=0",
          "--subprocess-timeout=300", "-k", "^sleepy$"]
# the ray of the tests' own environment (a venv on another torch has its own), else the repository's .venv's
RAY = os.path.join(os.path.dirname(PYTHON), "ray") if os.path.exists(os.path.join(os.path.dirname(PYTHON), "ray")) \
    else str(ROOT / ".venv" / "bin" / "ray")


def short_dir(prefix: str) -> str:
    """Ray's socket paths must stay short: its temp directories go directly under /tmp."""
    return tempfile.mkdtemp(prefix=prefix, dir="/tmp")


def stop_head(temp_dir: str) -> None:
    """Stop the Ray instance whose processes name `temp_dir` (`ray stop` would stop every instance on the
    machine, other sweeps' too)."""
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if temp_dir in " ".join(proc.info["cmdline"] or []):
                proc.kill()
        except psutil.Error:
            continue


def executor_of(record: dict) -> dict:
    return record["environment"]["executor"]


# ---------------------------------------------------------------- joining a real cluster


@pytest.fixture(scope="module")
def token_head(tmp_path_factory):
    """A head started as a user starts it, where Ray's token already exists (~/.ray/auth_token, as the
    first local Ray instance leaves it): Ray turns token authentication on."""
    home = tmp_path_factory.mktemp("home")
    temp_dir = short_dir("rayhead")
    env = dict(os.environ, HOME=str(home))
    env.pop("RAY_AUTH_MODE", None)
    subprocess.run([RAY, "get-auth-token", "--generate"], env=env, check=True, capture_output=True, timeout=120)
    port = 46000 + os.getpid() % 1000
    started = subprocess.run([RAY, "start", "--head", f"--port={port}", f"--temp-dir={temp_dir}", "--num-cpus=1",
                              "--include-dashboard=false", "--disable-usage-stats"], env=env, capture_output=True,
                             text=True, timeout=300)
    assert started.returncode == 0, started.stderr
    assert "Token authentication is enabled" in started.stderr + started.stdout
    yield f"127.0.0.1:{port}", env
    stop_head(temp_dir)


def test_a_token_cluster_is_joined_with_the_token_and_a_missing_or_wrong_one_is_one_line(token_head, tmp_path):
    address, env = token_head
    run_runner(*EAGER, "-k", "^mlp$", "--executor=ray", f"--ray-address={address}", f"--output-dirname={tmp_path}",
               env=env, check_rc=0)
    assert [r["status"] for r in read_jsonl(tmp_path / "results.jsonl")] == ["ok"]
    too_big = run_runner(*EAGER, "-k", "^mlp$", "--executor=ray", f"--ray-address={address}", "--cores-per-job=2",
                         f"--output-dirname={tmp_path / 'too-big'}", env=env, check_rc=2)
    assert too_big.stderr.strip().splitlines()[-1] == ("experiment_runner.py: error: --cores-per-job 2 is more than "
                                                       "any node of the Ray cluster offers (at most 1 CPU)")
    elsewhere = dict(env, HOME=str(tmp_path / "no-token-here"))
    missing = run_runner(*EAGER, "-k", "^mlp$", "--executor=ray", f"--ray-address={address}",
                         f"--output-dirname={tmp_path / 'missing'}", env=elsewhere, check_rc=2)
    assert missing.stderr.strip().splitlines()[-1].startswith(
        f"experiment_runner.py: error: the Ray cluster at {address} requires a token and none was found here")
    assert "Traceback" not in missing.stderr and "gcs_client" not in missing.stderr  # Ray's retries kept quiet
    wrong = run_runner(*EAGER, "-k", "^mlp$", "--executor=ray", f"--ray-address={address}",
                       f"--output-dirname={tmp_path / 'wrong'}", env=dict(elsewhere, RAY_AUTH_TOKEN="0" * 32),
                       check_rc=2)
    assert f"the Ray cluster at {address} refused the token from $RAY_AUTH_TOKEN" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "missing" / "results.jsonl").exists() and not (tmp_path / "wrong" / "results.jsonl").exists()


def test_a_stale_cluster_file_does_not_stop_a_sweep_starting_its_own_ray(tmp_path):
    ray_tmp = short_dir("raytmp")
    os.makedirs(os.path.join(ray_tmp, "ray"))
    with open(os.path.join(ray_tmp, "ray", "ray_current_cluster"), "w") as handle:
        handle.write("127.0.0.1:9")  # a head killed without `ray stop`: its address stays in the file
    try:
        run_runner(*EAGER, "-k", "^mlp$", "--executor=ray", f"--output-dirname={tmp_path}",
                   env=dict(os.environ, RAY_TMPDIR=ray_tmp), check_rc=0)
    finally:
        stop_head(ray_tmp)
    assert [r["status"] for r in read_jsonl(tmp_path / "results.jsonl")] == ["ok"]


# ---------------------------------------------------------------- a simulated cluster of two nodes


# The simulated cluster runs without token authentication; a driver on a machine where a token exists would ask
# for token mode (runner/ray/join.py), in which Ray starts its tasks but none of its actors (the nodes' fork servers).
CLUSTER_ENV = dict(os.environ, RAY_AUTH_MODE="disabled")


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    temp_dir = short_dir("raysim")
    simulated = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "temp_dir": temp_dir})
    nodes = [simulated.add_node(num_cpus=1) for _ in range(2)]
    simulated.wait_for_nodes()
    yield simulated, nodes
    simulated.shutdown()
    stop_head(temp_dir)


def test_a_sweep_spreads_over_nodes_pins_disjoint_cores_brings_artifacts_home_and_never_retries_a_crash(
        cluster, tmp_path):
    simulated, _ = cluster
    result = run_runner(*SLEEPY[:-1], "^(sleepy|segfault)$", "--repeat=4", "--batch-size=1", "--batch-size=2",
                        "--save-output", "--cores-per-job=1", "--executor=ray", f"--ray-address={simulated.address}",
                        f"--output-dirname={tmp_path}", env=CLUSTER_ENV, check_rc=1)
    records = read_jsonl(tmp_path / "results.jsonl")
    assert len(records) == 4, result.stderr
    sleepy = [r for r in records if r["model"]["model_name"] == "sleepy"]
    crashed = [r for r in records if r["model"]["model_name"] == "segfault"]
    assert [r["status"] for r in sleepy] == ["ok", "ok"]
    # A child that crashed by itself is its config's answer: never run again.
    assert all(r["status"] == "crash" and r["error"]["type"] == "SIGSEGV" and executor_of(r)["retries"] == 0
               for r in crashed)
    assert len({executor_of(r)["node_id"] for r in records}) == 2  # both nodes ran configs, and the records say which
    for record in records:
        facts = executor_of(record)
        assert len(facts["cores"]) == 1 and facts["node_ip"]
    for record in sleepy:
        assert record["environment"]["cpu_affinity"] == executor_of(record)["cores"]  # the child's own reading
        assert executor_of(record)["artifacts_left_behind"] == []
        for path in record["artifacts"]["output"]:
            assert (tmp_path / path).is_file()  # written on a node, present on the driver
    beside = [r for r in records if executor_of(r)["running_beside_at_start"]]
    assert beside and {c for r in records for c in executor_of(r)["cores"]} == {0, 1}  # both cores held at once
    # --launch=fork (the default): each node forked its children from its own fork server, whose log came home.
    assert all(r["environment"]["launch"] == "fork" for r in records)
    assert len(list((tmp_path / "logs").glob("fork-server-torch-node-*.log"))) == 2
    assert "children forked from each node's fork servers" in result.stderr
    assert result.stderr.count("1 fork server(s) started there") == 2  # one per node, for all of its tasks' workers


def test_a_node_removed_mid_sweep_has_its_config_run_again_elsewhere_once(cluster, tmp_path):
    simulated, nodes = cluster
    args = [*SLEEPY, "--repeat=8", "--batch-size=1", "--batch-size=2", "--batch-size=3", "--executor=ray",
            f"--ray-address={simulated.address}", f"--output-dirname={tmp_path}"]
    driver = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *args], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=CLUSTER_ENV)
    wait_for(lambda: len(ray_children(driver.pid)) == 2, timeout=180, what="a child on each node")
    time.sleep(1.0)
    simulated.remove_node(nodes[1])
    nodes[1] = simulated.add_node(num_cpus=1)  # the next tests' cluster has two nodes again
    _, err = driver.communicate(timeout=400)
    assert driver.returncode == 0, err
    records = read_jsonl(tmp_path / "results.jsonl")
    assert sorted(r["requested_batch_size"] for r in records) == [1, 2, 3]  # each config exactly once
    assert all(r["status"] == "ok" for r in records)
    retried = [r for r in records if executor_of(r)["retries"]]
    assert len(retried) == 1 and "was lost" in executor_of(retried[0])["lost_before"]
    assert sweep_scratch(driver.pid) == []  # the removed node's too (its fork servers' directory: one machine here)


def test_a_killed_driver_leaves_no_child_on_any_node(cluster, tmp_path):
    simulated, _ = cluster
    driver = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *SLEEPY[:-1], "^hang$", "--repeat=1",
                               "--batch-size=1", "--batch-size=2", "--executor=ray",
                               f"--ray-address={simulated.address}", f"--output-dirname={tmp_path}"], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=CLUSTER_ENV)
    children = wait_for(lambda: len(ray_children(driver.pid)) == 2 and ray_children(driver.pid), timeout=180,
                        what="a child on each node")
    assert all("benchmarks.fork_server.zygote" in " ".join(c.cmdline()) for c in children)  # forked by each node's server
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    wait_for(lambda: not ray_children(driver.pid), timeout=60, what="every child to be gone")
    wait_for(lambda: not processes_mentioning(f"-{driver.pid}-"), timeout=60, what="every node's fork server to be gone")
    # Its scratch on the nodes (core locks, the tasks' output scratch) stays: no one was left to remove it...
    assert {os.path.basename(os.path.dirname(p)) for p in sweep_scratch(driver.pid)} == {
        f"ptbench-cores-{os.getuid()}", f"ptbench-ray-{os.getuid()}"}
    # ...until the next sweep starts (or ends) on the cluster.
    run_runner(*EAGER, "-k", "^mlp$", "--executor=ray", f"--ray-address={simulated.address}",
               f"--output-dirname={tmp_path / 'next'}", env=CLUSTER_ENV, check_rc=0)
    assert sweep_scratch(driver.pid) == []


def sweep_scratch(driver_pid: int) -> list:
    """The scratch directories on this machine's nodes of the sweep whose driver is `driver_pid`."""
    found = []
    for kind in ("cores", "ray"):
        root = os.path.join(tempfile.gettempdir(), f"ptbench-{kind}-{os.getuid()}")
        if os.path.isdir(root):
            found += [os.path.join(root, n) for n in os.listdir(root) if f"-{driver_pid}-" in n]
    return sorted(found)


def test_a_task_whose_worker_was_killed_runs_again_on_another_node_and_leaves_no_scratch(cluster, tmp_path):
    """The worker of a running task killed on a live node while the other node is busy: the retry waits for that
    other node rather than go back to the one it was lost on (which is free at once), and when the sweep ends
    no scratch of it is left on any node: core locks, the dead task's output scratch, the sweep's directory
    (spawned children: no fork server cleans up after them)."""
    simulated, _ = cluster
    driver = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *SLEEPY, "--repeat=8", "--batch-size=1",
                               "--batch-size=2", "--launch=spawn", "--executor=ray",
                               f"--ray-address={simulated.address}", f"--output-dirname={tmp_path}"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=CLUSTER_ENV)
    children = wait_for(lambda: len(ray_children(driver.pid)) == 2 and ray_children(driver.pid), timeout=180,
                        what="a child on each node")
    worker = children[0].parent()  # the Ray worker running that task (a spawned child's parent)
    killed_on = re.search(r"--node_id=(\w+)", " ".join(worker.parent().cmdline())).group(1)  # its node's raylet
    worker.kill()
    _, err = driver.communicate(timeout=400)
    assert driver.returncode == 0, err
    records = read_jsonl(tmp_path / "results.jsonl")
    assert sorted(r["requested_batch_size"] for r in records) == [1, 2] and all(r["status"] == "ok" for r in records)
    [retried] = [executor_of(r) for r in records if executor_of(r)["retries"]]
    assert "was lost" in retried["lost_before"]
    assert retried["lost_on"] == killed_on and retried["node_id"] != killed_on  # the other node ran it
    assert sweep_scratch(driver.pid) == []
