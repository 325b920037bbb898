"""Scratch directories under the temp directory: a killed sweep's (its fork server's socket, its child's compile
cache) are collected when the next sweep starts, a live owner's never; empty directories under --artifacts-uri
go once their files came home (benchmarks/plumbing/scratch_dirs.py, docs/architecture.md "Scratch").
The Ray parts (core locks, node scratch, a dead worker's scratch) are in tests/runner/test_ray_cluster.py."""

import os
import signal
import subprocess
import sys

import psutil
import pytest

from benchmarks.plumbing import scratch_dirs
from benchmarks.runner.ray import artifact_shipping
from helpers import PYTHON, ROOT, forked_configs, read_jsonl, run_runner, wait_for


def scratch_in(temp: str) -> list:
    return sorted(name for name in os.listdir(temp) if name.startswith("ptbench-"))


def kinds(temp) -> set:
    """The kinds of scratch in `temp` (ptbench-<kind>-<pid>-<random>)."""
    return {kind for name in scratch_in(str(temp)) for kind in scratch_dirs.OWNED_KINDS
            if name.startswith(f"ptbench-{kind}-")}


@pytest.mark.process  # a process that has ended
def test_only_scratch_whose_owner_is_gone_is_stale(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    host = __import__("socket").gethostname()
    mine = tmp_path / f"ptbench-fork-server-{os.getpid()}-abc"
    gone = tmp_path / f"ptbench-compile-cache-{dead_pid}-def"
    old_style = tmp_path / "ptbench-fork-server-xyz12345"  # no owner in its name: never guessed at
    sweeps = tmp_path / f"ptbench-cores-{os.getuid()}"
    live_sweep = sweeps / scratch_dirs.sweep_id_of(host, os.getpid(), 1.5)
    dead_sweep = sweeps / scratch_dirs.sweep_id_of(host, dead_pid, 2.5)
    foreign = sweeps / scratch_dirs.sweep_id_of("another-host", dead_pid, 3.5)  # its driver can't be checked here
    for path in (mine, gone, old_style, live_sweep, dead_sweep, foreign):
        path.mkdir(parents=True)
    (gone / "inductor").mkdir()
    assert sorted(scratch_dirs.stale(str(tmp_path))) == sorted([str(gone), str(dead_sweep)])
    assert sorted(scratch_dirs.collect_stale(str(tmp_path))) == sorted([str(gone), str(dead_sweep)])
    assert mine.exists() and old_style.exists() and live_sweep.exists() and foreign.exists()
    assert not gone.exists() and not dead_sweep.exists()


@pytest.mark.integration
@pytest.mark.parametrize("killed", ["parent", "child"])
def test_a_killed_sweeps_or_childs_scratch_is_collected(tmp_path, killed):
    """SIGKILL the parent, or the child, while the fork server runs a child with a cold compile cache. A killed
    parent: the child dies with it, its cache stays behind (the server removes its own socket's directory as it
    goes) and the next sweep removes it. A killed child: its sweep removes its cache when it sees it end."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp))
    out = tmp_path / "out"
    args = ["--suite-name=faults", "--accelerator=cpu", "--xla=None", "--dynamo=aot_eager", "--test=eval",
            "--compile-cache=cold", "--repeat=1", "--warmup=0", f"--output-dirname={out}"]
    said = tmp_path / "stderr.txt"
    with open(said, "wb") as stderr:
        parent = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *args, "-k", "^hang$"], cwd=ROOT,
                                  env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        wait_for(lambda: {"fork-server", "compile-cache"} <= kinds(temp) or parent.poll() is not None, timeout=300,
                 what="the fork server's socket and the child's compile cache")
    finally:
        if parent.poll() is None and not {"fork-server", "compile-cache"} <= kinds(temp):
            parent.kill()
    assert parent.poll() is None, f"the sweep ended (exit {parent.returncode}): {said.read_text()[-2000:]}"
    if killed == "child":
        [server] = [p for p in psutil.Process(parent.pid).children() if "zygote" in " ".join(p.cmdline())]
        [child] = forked_configs(server)
        child.kill()
        assert parent.wait(timeout=120) == 1  # the child's crash record; its sweep has ended
        [record] = read_jsonl(out / "results.jsonl")
        assert record["status"] == "crash"
        assert scratch_in(str(temp)) == []
        return
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    # The server and the child die with the parent; what they made stays, and each one's owner is gone.
    wait_for(lambda: set(scratch_dirs.stale(str(temp))) == {str(temp / n) for n in scratch_in(str(temp))},
             timeout=60, what="the owners of what was left to be gone")
    assert kinds(temp) == {"compile-cache"}

    run_runner(*args, "-k", "^elementwise_chain$", "--launch=spawn", env=env, check_rc=0)
    assert [r["status"] for r in read_jsonl(out / "results.jsonl")] == ["ok"]
    assert scratch_in(str(temp)) == []  # collected at the start; the new sweep's own child removed its cache


def test_empty_directories_under_the_artifacts_uri_go_once_their_files_came_home(tmp_path, monkeypatch):
    monkeypatch.setattr(artifact_shipping, "INLINE_LIMIT", 10)
    shared, out = tmp_path / "shared", tmp_path / "out"
    for attempt, size in (("1-0", 100), ("2-0", 200)):
        node = tmp_path / f"node-{attempt}"
        (node / "mlp" / "hlo").mkdir(parents=True)
        (node / "mlp" / "hlo" / "module.txt").write_bytes(b"x" * size)
        remote = artifact_shipping.remote_root(str(shared), "host-1-2.5", attempt)
        shipment = artifact_shipping.pack(str(node), 10**6, str(shared), remote, "10.0.0.7")
        assert set(shipment["remote"]) == {"mlp/hlo/module.txt"}
        if attempt == "1-0":
            artifact_shipping.unpack(shipment, str(out), str(shared))
            assert artifact_shipping.prune_remote(str(shared), remote)  # fetched: its directories are empty
            assert not os.path.exists(remote)
    sweep_root = artifact_shipping.sweep_remote_root(str(shared), "host-1-2.5")
    # A lost attempt's file (never fetched) keeps its directory, and the sweep's.
    assert not artifact_shipping.prune_remote(str(shared), sweep_root)
    assert (shared / "host-1-2.5" / "2-0" / "mlp" / "hlo" / "module.txt").exists()
