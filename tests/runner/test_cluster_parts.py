"""The pieces of --executor=ray that run without a cluster: cores held per node, files shipped home from a
node, where a cluster token is found, and --cores-per-job's split (docs/parallel.md)."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from benchmarks.plumbing.cli_support import UsageError
from benchmarks.plumbing.safe_paths import PathEscapes, inside
from benchmarks.runner.job_resources import ResourceError, split_cores
from benchmarks.runner.ray import artifact_shipping, join, node_cores
from helpers import ROOT, call_runner, usable_cores, wait_for


@pytest.fixture
def sweep_id(tmp_path):
    return f"test-{os.getpid()}-{tmp_path.name}"


@pytest.mark.process  # another process holds cores, then is killed
def test_tasks_of_a_sweep_hold_disjoint_cores_and_a_killed_holder_frees_them(sweep_id):
    first = node_cores.take(sweep_id, 2, [0, 1, 2, 3])
    second = node_cores.take(sweep_id, 2, [0, 1, 2, 3])
    assert first.cores == [0, 1] and second.cores == [2, 3]
    assert node_cores.take(sweep_id, 1, [0, 1, 2, 3], deadline=0) is None  # all held: it would wait
    assert node_cores.take("another-sweep-" + sweep_id, 1, [0, 1, 2, 3]).cores == [0]  # other sweeps don't count
    first.release()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from benchmarks.runner.ray import node_cores
        held = node_cores.take({sweep_id!r}, 2, [0, 1, 2, 3])
        print(held.cores, flush=True)
        time.sleep(600)
        """)], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "[0, 1]"
    assert node_cores.take(sweep_id, 1, [0, 1, 2, 3], deadline=0) is None
    holder.send_signal(signal.SIGKILL)  # a worker killed from outside: the kernel drops its locks
    holder.wait()
    again = wait_for(lambda: node_cores.take(sweep_id, 2, [0, 1, 2, 3], deadline=0), timeout=5, what="free cores")
    assert again.cores == [0, 1]
    assert node_cores.take(sweep_id, 5, [0, 1, 2, 3]) is None  # more than the node has: never
    again.release()
    second.release()


def make_files(root, sizes: dict) -> None:
    for rel, size in sizes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)


def test_files_come_home_inline_through_the_uri_or_are_named_when_left_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(artifact_shipping, "INLINE_LIMIT", 100)
    node, out, shared = tmp_path / "node", tmp_path / "out", tmp_path / "shared"
    make_files(node, {"mlp/output-a.pt": 50, "mlp/hlo-a/module.txt": 300, "mlp/trace-a.json": 900})
    remote = artifact_shipping.remote_root(str(shared), "host-1-2.5", "3-0")
    shipment = artifact_shipping.pack(str(node), 1000, str(shared), remote, "10.0.0.7")
    assert set(shipment["inline"]) == {"mlp/output-a.pt"} and set(shipment["remote"]) == {"mlp/hlo-a/module.txt"}
    [left] = shipment["left_behind"]  # 50 + 300 shipped: 900 more would pass the 1000-byte cap
    assert left["path"] == "mlp/trace-a.json" and left["bytes"] == 900 and "--artifacts-max-size" in left["why"]
    assert left["where"] == f"10.0.0.7:{node / 'mlp' / 'trace-a.json'}" and (node / "mlp" / "trace-a.json").exists()
    assert not (node / "mlp" / "output-a.pt").exists()  # what travelled is gone from the node
    notes = artifact_shipping.unpack(shipment, str(out), str(shared))
    assert notes == [left]
    assert (out / "mlp" / "output-a.pt").stat().st_size == 50
    assert (out / "mlp" / "hlo-a" / "module.txt").stat().st_size == 300
    assert not list(shared.rglob("*.txt"))  # fetched, then removed from the shared location
    artifact_shipping.clean(str(node))
    assert node.exists()  # a file was left behind there: the directory stays

    plain = tmp_path / "plain"
    make_files(plain, {"big.bin": 500})
    nowhere = artifact_shipping.pack(str(plain), 10**6, None, None, "10.0.0.8")
    assert "no --artifacts-uri" in nowhere["left_behind"][0]["why"]


def test_a_shipped_file_never_lands_outside_the_output_directory(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    notes = artifact_shipping.unpack({"inline": {"../escaped.txt": b"no", "ok/fine.txt": b"yes"}}, str(out), None)
    assert not (tmp_path / "escaped.txt").exists() and (out / "ok" / "fine.txt").read_bytes() == b"yes"
    assert len(notes) == 1 and notes[0]["path"] == "../escaped.txt" and "outside" in notes[0]["why"]
    with pytest.raises(PathEscapes):
        inside(str(out), "/etc/passwd")


def test_a_shipped_file_that_can_not_be_written_is_left_behind_and_the_others_land(tmp_path):
    out = tmp_path / "out"
    (out / "taken.txt").mkdir(parents=True)  # a directory where the file should go
    notes = artifact_shipping.unpack({"inline": {"taken.txt": b"no", "ok/fine.txt": b"yes"}}, str(out), None)
    assert (out / "ok" / "fine.txt").read_bytes() == b"yes"
    assert len(notes) == 1 and notes[0]["path"] == "taken.txt" and "IsADirectoryError" in notes[0]["why"]


def test_only_a_plain_host_and_port_is_checked_before_ray_joins():
    for address in ("auto", "ray://127.0.0.1:10001", "127.0.0.1"):  # Ray's to understand
        join.check_reachable(address)
    import socket

    with socket.socket(socket.AF_INET6) as probe:  # a free IPv6 port: nothing answers there
        probe.bind(("::1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(UsageError, match=r"cannot reach the Ray cluster at \[::1\]:\d+: Connection refused"):
        join.check_reachable(f"[::1]:{port}")


def test_a_cluster_token_is_found_where_ray_looks_for_it(tmp_path):
    home = tmp_path / "home"
    environ = {"HOME": str(home)}
    assert join.token_source(environ) is None and join.ask_for_token_mode(environ) is None
    assert "RAY_AUTH_MODE" not in environ
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text("a" * 32)
    assert join.ask_for_token_mode(environ) == str(home / ".ray" / "auth_token")
    assert environ["RAY_AUTH_MODE"] == "token"
    explicit = {"RAY_AUTH_TOKEN": "b" * 32, "RAY_AUTH_MODE": "disabled"}
    assert join.ask_for_token_mode(explicit) == "$RAY_AUTH_TOKEN" and explicit["RAY_AUTH_MODE"] == "disabled"


def test_cores_per_job_sets_the_size_of_each_group():
    assert split_cores([0, 1, 2, 3], 2, size=1) == [(0,), (1,)]
    assert split_cores([0, 1, 2, 3], 1, size=3) == [(0, 1, 2)]
    with pytest.raises(ResourceError, match="--jobs 2 with --cores-per-job 3 needs 6 CPU cores"):
        split_cores([0, 1, 2, 3], 2, size=3)


def test_dry_run_shows_cores_per_job_and_refuses_more_than_the_machine(tmp_path):
    cores = usable_cores()[:2]
    common = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "-k", "^mlp$", "--dry-run",
              f"--cpu-affinity={','.join(map(str, cores))}", f"--output-dirname={tmp_path}"]
    shown = call_runner(*common, "--cores-per-job=1", check_rc=0)
    assert f"{len(cores)} job(s), cores per job: {'; '.join(map(str, cores))}" in shown.stdout
    refused = call_runner(*common, f"--cores-per-job={len(cores) + 1}", check_rc=2)
    assert refused.stderr.strip() == (f"experiment_runner.py: error: --cores-per-job {len(cores) + 1} is more than the "
                                      f"{len(cores)} CPU core(s) this sweep may use ({','.join(map(str, cores))})")


def test_an_artifacts_uri_that_cannot_work_is_one_line_and_exit_2(tmp_path):
    assert artifact_shipping.check_uri(str(tmp_path / "shared")) is None  # a directory every node mounts
    refused = call_runner("--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "-k", "^mlp$",
                         "--executor=ray", "--artifacts-uri=nosuchproto://bucket/dir",
                         f"--output-dirname={tmp_path / 'out'}", check_rc=2)
    assert refused.stderr.strip() == ("experiment_runner.py: error: --artifacts-uri nosuchproto://bucket/dir: "
                                      "Protocol not known: nosuchproto")
    assert not (tmp_path / "out").exists()
