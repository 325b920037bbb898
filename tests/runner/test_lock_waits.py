"""A timed-out child that was waiting for a file lock says which file and who held it (runner/lock_waits.py):
under --compile-cache=shared a neighbour hung while compiling the same kernel keeps the cache's lock
(docs/runner.md, "--compile-cache")."""

import fcntl
import os
import subprocess

import pytest

from benchmarks.runner import lock_waits
from helpers import PYTHON, read_jsonl, run_runner, wait_for

WAIT_FOR_LOCK = "import fcntl, sys; fcntl.flock(open(sys.argv[1], 'a'), fcntl.LOCK_EX)"


def test_waiters_are_matched_to_their_locks_holder_by_the_lines_id():
    text = ("1: FLOCK  ADVISORY  WRITE 100 00:2e:555 0 EOF\n"
            "1: -> FLOCK  ADVISORY  WRITE 200 00:2e:555 0 EOF\n"
            "2: POSIX  ADVISORY  WRITE 300 08:01:77 0 EOF\n"
            "3: -> POSIX  ADVISORY  WRITE 400 08:01:88 0 EOF\n"  # its holder's line is not there: nothing said
            "a line of another shape\n")
    assert lock_waits.parse(text)[:2] == [("1:", False, 100, 555), ("1:", True, 200, 555)]
    [found] = lock_waits.waits({200, 300, 400}, text)
    assert (found["pid"], found["holder"]) == (200, 100)
    assert lock_waits.waits({100, 300}, text) == []  # holders wait for nothing


@pytest.mark.process  # a process blocked on a lock this test holds
def test_a_process_waiting_for_a_lock_is_seen_with_the_file_and_its_holder(tmp_path):
    path = str(tmp_path / "kernel.lock")
    with open(path, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiter = subprocess.Popen([PYTHON, "-c", WAIT_FOR_LOCK, path])
        try:
            wait_for(lambda: lock_waits.waits(lock_waits.tree(waiter.pid)), timeout=30)
            [found] = lock_waits.waits(lock_waits.tree(waiter.pid))
            assert found["pid"] == waiter.pid and found["holder"] == os.getpid() and found["path"] == path
            assert f"waiting for the file lock {path} held by pid {os.getpid()} (" in lock_waits.describe([found])
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
            waiter.wait(timeout=30)
    assert lock_waits.waits(lock_waits.tree(waiter.pid)) == []  # gone


@pytest.mark.integration
def test_a_config_timed_out_waiting_for_a_lock_names_the_file_and_the_holder(tmp_path):
    path = str(tmp_path / "kernel.lock")
    env = dict(os.environ, BENCHMARKS_FAULTS_LOCK=path)
    with open(path, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # this test is the hung neighbour
        run_runner("--suite-name=faults", "-k", "^waits_for_a_lock$", "--accelerator=cpu", "--xla=None",
                   "--dynamo=None", "--test=eval", "--repeat=1", "--warmup=0", "--subprocess-timeout=20",
                   f"--output-dirname={tmp_path / 'out'}", env=env, check_rc=1)
    [record] = read_jsonl(tmp_path / "out/results.jsonl")
    assert record["status"] == "timeout"
    assert f"; waiting for the file lock {path} held by pid {os.getpid()} (" in record["error"]["message"]
    [wait] = record["error"]["lock_waits"]
    assert wait["holder"] == os.getpid() and wait["path"] == path and wait["holder_is"]


@pytest.mark.integration
def test_a_shared_cache_config_timed_out_polling_a_lock_names_the_locks_holder(tmp_path):
    # Inductor's cache locks poll (filelock): no waiter in /proc/locks, so the shared cache's locks directory
    # is searched for a lock held outside the child, as a hung neighbour holds one.
    locks = tmp_path / "inductor-cache" / "locks"
    locks.mkdir(parents=True)
    path = str(locks / "kernel.lock")
    env = dict(os.environ, BENCHMARKS_FAULTS_LOCK=path, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor-cache"))
    with open(path, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        run_runner("--suite-name=faults", "-k", "^polls_for_a_lock$", "--accelerator=cpu", "--xla=None",
                   "--dynamo=aot_eager", "--compile-cache=shared", "--test=eval", "--repeat=1", "--warmup=0",
                   "--subprocess-timeout=30", f"--output-dirname={tmp_path / 'out'}", env=env, check_rc=1)
    [record] = read_jsonl(tmp_path / "out/results.jsonl")
    message = record["error"]["message"]
    assert record["status"] == "timeout" and ", in _poll_until_acquired (filelock/" in message
    assert f"; waiting for the file lock {path} held by pid {os.getpid()} (" in message
    [wait] = record["error"]["lock_waits"]
    assert wait["holder"] == os.getpid() and wait["path"] == path and wait["pid"] is None


def test_a_held_lock_outside_the_child_is_found_by_its_file(tmp_path):
    (tmp_path / "a.lock").write_text("")
    inode = os.stat(tmp_path / "a.lock").st_ino
    text = f"1: FLOCK  ADVISORY  WRITE 100 00:2e:{inode} 0 EOF\n2: FLOCK  ADVISORY  WRITE 200 00:2e:{inode + 1} 0 EOF\n"
    [found] = lock_waits.held_in(str(tmp_path), mine={300}, text=text)
    assert (found["holder"], found["path"]) == (100, str(tmp_path / "a.lock"))
    assert lock_waits.held_in(str(tmp_path), mine={100}, text=text) == []  # the child's own lock
    assert lock_waits.held_in(str(tmp_path / "missing"), mine=set(), text=text) == []


class _TimedOut:
    """A child that never ends until its group is killed (launcher.kill_group is replaced: nothing real is killed)."""

    pid = os.getpid()  # a process psutil can watch
    killed = False

    def ended_within(self, seconds) -> bool:
        return self.killed


def _wait_past_the_timeout(monkeypatch, tmp_path, shared: bool, hung_in: str, waits: list):
    """launcher.wait_for on a child past its timeout, lock_waits' readings and the child's stacks replaced: the result
    and what happened, in order."""
    import time

    from benchmarks.runner import launcher

    events, child = [], _TimedOut()
    monkeypatch.setattr(lock_waits, "tree", lambda pid: {pid})
    monkeypatch.setattr(lock_waits, "waits", lambda tree: events.append("waits") or list(waits))
    monkeypatch.setattr(lock_waits, "inductor_lock_dir", lambda env: "/cache/locks")
    monkeypatch.setattr(lock_waits, "held_in", lambda where, tree: events.append(f"held_in {where}") or [{"holder": 7}])
    monkeypatch.setattr(launcher, "ask_for_stacks", lambda child: events.append("stacks"))
    monkeypatch.setattr(launcher, "where_it_hung", lambda path, offset: events.append(f"where {offset}") or hung_in)
    monkeypatch.setattr(launcher, "kill_group", lambda pid: events.append("kill") or setattr(child, "killed", True))
    request = launcher.ChildRequest(argv=[], env={}, log_path=str(tmp_path / "log"), timeout=0,
                                    shared_compile_cache=shared)
    result = launcher.ChildResult(record=None, returncode=None)
    launcher.wait_for(child, request, result, time.monotonic(), log_offset=12)
    return result, events


def test_a_timeout_is_diagnosed_before_the_kill_and_a_polled_lock_names_the_shared_caches_holders(tmp_path,
                                                                                                 monkeypatch):
    from benchmarks.runner.launcher import POLLED_LOCK

    polled = POLLED_LOCK + "_core/_acquire.py:177)"
    result, events = _wait_past_the_timeout(monkeypatch, tmp_path, shared=True, hung_in=polled, waits=[])
    assert result.timed_out and not result.out_of_memory
    assert (result.hung_in, result.lock_waits) == (polled, [{"holder": 7}])
    assert events == ["waits", "stacks", "where 12", "held_in /cache/locks", "kill"]  # all before the kill
    # a waiter found, or the machine's cache not shared: the holders of the cache's locks are not asked for
    result, events = _wait_past_the_timeout(monkeypatch, tmp_path, shared=True, hung_in=polled, waits=[{"holder": 3}])
    assert result.lock_waits == [{"holder": 3}] and events == ["waits", "stacks", "where 12", "kill"]
    result, events = _wait_past_the_timeout(monkeypatch, tmp_path, shared=False, hung_in=polled, waits=[])
    assert result.lock_waits == [] and "held_in /cache/locks" not in events
