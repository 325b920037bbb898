"""One sweep per results file (docs/runner.md, "One sweep per results file"): the lock itself against another
process that holds it, then real parents on one results file: the second exits 2 naming the holder, or waits
with --wait and records no duplicate; a SIGKILLed parent's lock is taken over; --dry-run takes no lock."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest

from benchmarks.runner.results_lock import LockBusy, ResultsLock
from helpers import PYTHON, ROOT, processes_mentioning, read_jsonl, run_runner, wait_for

HOLD = """
import sys, time
from benchmarks.runner.results_lock import ResultsLock
lock = ResultsLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(float(sys.argv[2]))
lock.release()
"""


def holder(results, seconds):
    """Another process that holds the lock of `results` for `seconds` (killed at the test's end if need be)."""
    proc = subprocess.Popen([PYTHON, "-c", HOLD, str(results), str(seconds)], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.process  # another process holds the lock
def test_a_second_holder_is_refused_and_told_who_holds_it(tmp_path):
    results = tmp_path / "results.jsonl"
    other = holder(results, 30)
    try:
        with pytest.raises(LockBusy) as caught:
            ResultsLock(str(results)).acquire()
        message = str(caught.value)
        assert f"pid {other.pid}" in message and socket.gethostname() in message and "started 20" in message
        assert caught.value.holder["pid"] == other.pid
    finally:
        other.kill()
        other.wait()


@pytest.mark.process  # another process holds the lock
def test_a_waiting_holder_gets_it_when_the_other_lets_go_and_the_file_goes_with_the_last(tmp_path):
    results = tmp_path / "results.jsonl"
    other = holder(results, 1.0)
    waited = []
    lock = ResultsLock(str(results), wait=True, on_wait=waited.append).acquire()
    other.wait()
    assert [w["pid"] for w in waited] == [other.pid]
    assert lock.previous is None  # it was released, not taken over
    assert json.loads((tmp_path / "results.jsonl.lock").read_text())["pid"] == os.getpid()
    lock.release()
    assert not (tmp_path / "results.jsonl.lock").exists()


@pytest.mark.process  # another process holds the lock, then is killed
def test_a_killed_holders_lock_is_taken_over_and_says_whose_it_was(tmp_path):
    results = tmp_path / "results.jsonl"
    other = holder(results, 60)
    other.send_signal(signal.SIGKILL)
    other.wait()
    with ResultsLock(str(results)) as lock:
        assert lock.previous["pid"] == other.pid


# ---------------------------------------------------------------- real parents (integration)

SLEEPY = ["--suite-name=faults", "-k", "sleepy", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
          "--test=train", "--repeat=2", "--warmup=1"]


def start_parent(out, *extra, stderr=subprocess.DEVNULL):
    return subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *SLEEPY, f"--output-dirname={out}", *extra],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, text=True)


def lock_holder(out):
    try:
        return json.loads((out / "results.jsonl.lock").read_text()) or None
    except (OSError, ValueError):
        return None


def config_keys(records):
    return [(r["model"]["model_name"], r["experiment"]["test"]) for r in records]


@pytest.mark.integration
def test_a_second_parent_exits_2_naming_the_holder_and_a_waiting_one_adds_no_duplicate(tmp_path):
    first = start_parent(tmp_path)
    try:
        held = wait_for(lambda: lock_holder(tmp_path), 60, "the first parent's lock")
        assert held["pid"] == first.pid
        second = run_runner(*SLEEPY, f"--output-dirname={tmp_path}", check_rc=2, timeout=60)
        assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
        assert f"pid {first.pid} on host {socket.gethostname()}, started {held['started']}" in second.stderr
        assert "--wait" in second.stderr
        with open(tmp_path / "waiter.err", "w") as err:
            waiter = start_parent(tmp_path, "--wait", stderr=err)
            wait_for(lambda: "waiting for" in (tmp_path / "waiter.err").read_text(), 60, "the waiter to wait")
            assert first.poll() is None, "the first parent was still running while the other waited"
            assert first.wait(120) == 0
            assert waiter.wait(120) == 0
    finally:
        first.kill()
    keys = config_keys(read_jsonl(tmp_path / "results.jsonl"))
    assert sorted(keys) == [("sleepy", "eval"), ("sleepy", "train")]  # each once: the waiter resumed, ran nothing
    assert f"pid {first.pid}" in (tmp_path / "waiter.err").read_text()
    assert not (tmp_path / "results.jsonl.lock").exists()


@pytest.mark.integration
def test_a_sigkilled_parents_lock_is_taken_over_and_the_sweep_completes_once(tmp_path):
    first = start_parent(tmp_path)
    held = wait_for(lambda: lock_holder(tmp_path), 60, "the first parent's lock")
    wait_for(lambda: [p for p in processes_mentioning(str(tmp_path)) if p.pid != first.pid], 60, "its child")
    first.send_signal(signal.SIGKILL)
    first.wait()
    wait_for(lambda: not processes_mentioning(str(tmp_path)), 15, "the orphaned child to go")
    second = run_runner(*SLEEPY, f"--output-dirname={tmp_path}", check_rc=0, timeout=120)
    assert f"took over the lock on {tmp_path / 'results.jsonl'} from pid {held['pid']}" in second.stderr
    assert sorted(config_keys(read_jsonl(tmp_path / "results.jsonl"))) == [("sleepy", "eval"), ("sleepy", "train")]


@pytest.mark.integration
def test_dry_run_takes_no_lock(tmp_path):
    """While another process holds the results file's lock, a dry run still lists the configs and exits 0; the
    holder's lock file is left as it was (it still names the holder) and no results file is written."""
    results = tmp_path / "results.jsonl"
    other = holder(results, 60)
    try:
        held = (tmp_path / "results.jsonl.lock").read_text()
        assert json.loads(held)["pid"] == other.pid
        result = run_runner(*SLEEPY, f"--output-dirname={tmp_path}", "--dry-run", check_rc=0, timeout=60)
        commands = [line for line in result.stdout.splitlines() if "--experiment-config=" in line]
        tests = sorted(json.loads(line.rpartition("--experiment-config=")[2].rstrip("'"))["test"] for line in commands)
        assert tests == ["eval", "train"] and all('"model_name": "sleepy"' in line for line in commands), result.stdout
        assert "2 to run" in result.stdout and "another sweep" not in result.stderr
        assert (tmp_path / "results.jsonl.lock").read_text() == held and other.poll() is None
        assert not results.exists()
    finally:
        other.kill()
        other.wait()


@pytest.mark.integration
def test_a_sweep_refused_the_results_file_never_starts_ray(tmp_path):
    """The lock comes before the executor starts: --executor=ray on a held results file is refused without starting
    a Ray instance (Ray makes its session directory under RAY_TMPDIR as it starts: there is none) or a fork server."""
    (tmp_path / "out").mkdir()
    other = holder(tmp_path / "out" / "results.jsonl", 120)
    ray_tmp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    try:
        result = run_runner(*SLEEPY, f"--output-dirname={tmp_path / 'out'}", "--executor=ray", check_rc=2,
                            timeout=120, env={**os.environ, "RAY_TMPDIR": ray_tmp})
        assert result.stderr.count("\n") == 1 and f"pid {other.pid}" in result.stderr, result.stderr
        assert "another sweep" in result.stderr
        assert os.listdir(ray_tmp) == []  # no <RAY_TMPDIR>/ray/session_*
        assert not (tmp_path / "out" / "logs").exists()
    finally:
        other.kill()
        other.wait()
        shutil.rmtree(ray_tmp, ignore_errors=True)
