"""What our tools find in an output folder is a claim, not a fact (issue #61, findings 1, 2, 3 and 9), with real
links, real git repositories and real hooks: bisect runs git only in a checkout it made itself (a link to the user's
repository, or a planted clone whose hooks and fsmonitor would run a command, is refused in one line, exit 2, before
git touches it); the scripts suite never runs a file a discovery cache entry names; history site ignores a state
file it did not seal (a planted empty list of change points hides no slowdown)."""

import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT, call_tool, nightly_record


def git(*args, cwd):
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def user_repo(tmp_path):
    """The user's repository: two commits, then work in progress (an uncommitted edit, an untracked and an ignored
    file) that `checkout --force` and `clean -fdx` would destroy."""
    repo = tmp_path / "mine"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / ".gitignore").write_text("build/\n")
    (repo / "code.py").write_text("v = 1\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "one", cwd=repo)
    (repo / "code.py").write_text("v = 2\n")
    git("commit", "-qam", "two", cwd=repo)
    (repo / "code.py").write_text("v = 3  # my uncommitted work\n")
    (repo / "notes.txt").write_text("untracked\n")
    (repo / "build").mkdir()
    (repo / "build" / "cache.bin").write_text("ignored\n")
    return repo


def bisect(repo, out, check_rc=None):
    return call_tool("history.py", "bisect", "--repo", repo, "--good", "HEAD~1", "--bad", "HEAD", "--setup", "exit 1",
                     "--output-dirname", out, "--", "--suite-name=dummy", check_rc=check_rc)


def work_in_progress(repo) -> tuple:
    return ((repo / "code.py").read_text(), (repo / "notes.txt").exists(), (repo / "build" / "cache.bin").exists(),
            git("rev-parse", "--abbrev-ref", "HEAD", cwd=repo))


def test_a_checkout_that_links_to_the_users_repository_is_refused_and_their_work_kept(user_repo, tmp_path):
    out = tmp_path / "artifact"
    (out / "bisect").mkdir(parents=True)
    os.symlink(user_repo, out / "bisect" / "checkout")
    before = work_in_progress(user_repo)
    result = bisect(user_repo, out)
    assert work_in_progress(user_repo) == before == ("v = 3  # my uncommitted work\n", True, True, "main")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "checkout" in result.stderr and "Traceback" not in result.stderr


def test_a_planted_checkout_with_hooks_and_fsmonitor_runs_nothing(user_repo, tmp_path):
    out = tmp_path / "artifact"
    planted = out / "bisect" / "checkout"
    planted.parent.mkdir(parents=True)
    git("clone", "-q", str(user_repo), str(planted), cwd=tmp_path)
    ran = tmp_path / "PWNED"
    hook = planted / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    monitor = tmp_path / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {ran}.fsmonitor\n")
    monitor.chmod(0o755)
    git("config", "core.fsmonitor", str(monitor), cwd=planted)
    result = bisect(user_repo, out)
    assert not ran.exists() and not (tmp_path / "PWNED.fsmonitor").exists()
    assert result.returncode == 2 and "not a checkout this tool made" in result.stderr and result.stderr.count("\n") == 1


def test_a_checkout_this_tool_made_is_used_again(user_repo, tmp_path):
    out = tmp_path / "out"
    first = bisect(user_repo, out)
    assert first.returncode == 1 and "does not build" in first.stderr  # --setup exit 1: the good end is a skip
    assert (out / "bisect" / "checkout" / "code.py").read_text() == "v = 1\n"
    (out / "bisect" / "state.json").unlink()
    again = bisect(user_repo, out)
    assert again.returncode == 1 and "does not build" in again.stderr, again.stderr  # not refused: ours
    assert work_in_progress(user_repo)[0] == "v = 3  # my uncommitted work\n"


def test_the_bisect_folder_that_links_outside_is_refused(user_repo, tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, out / "bisect")
    result = bisect(user_repo, out)
    assert not os.listdir(elsewhere)  # no clone, no state, no run written there
    assert result.returncode == 2 and "outside" in result.stderr and result.stderr.count("\n") == 1


# ------------------------------------------------------------------ 3: the script-discovery cache names no file

SCRIPT = "import torch\nfrom benchmarks.suites import scripts\n"


def test_a_planted_discovery_entry_naming_another_script_is_ignored(tmp_path):
    """The cache key hashes public facts (the example's content, its arguments, torch's version): an entry planted
    under it names the script the sweep would run. Now the script is always the one asked about, and an entry
    without this user's seal is discovered again."""
    from benchmarks.suites import script_discovery

    script, evil = tmp_path / "example.py", tmp_path / "evil.py"
    script.write_text("print('an example')\n")
    evil.write_text("open('PWNED', 'w')\n")
    out = tmp_path / "out"
    cache = script_discovery.cache_file(str(out), str(script), None)
    os.makedirs(os.path.dirname(cache))
    planted = {"script": str(evil), "script_args": None, "status": "finished", "timeout_seconds": 60.0,
               "models": [{"name": "m", "class": "M", "inputs": []}], "message": None, "seconds": 0.1, "log": None}
    with open(cache, "w") as handle:
        json.dump(planted, handle)
    found = script_discovery.discover(str(script), None, str(out), 120)
    assert found.script == str(script) and not found.cached and found.models == []  # discovered again, for real


def test_a_sealed_entry_for_another_script_is_not_taken_for_this_one(tmp_path):
    """Our own entry copied under another script's name: the script it names is not the one asked about."""
    from benchmarks.plumbing import state_seal
    from benchmarks.suites import script_discovery

    script, other = tmp_path / "example.py", tmp_path / "other.py"
    script.write_text("print('an example')\n")
    data = {"script": str(other), "script_args": None, "status": "finished", "timeout_seconds": 60.0,
            "models": [{"name": "m", "class": "M", "inputs": []}], "message": None, "seconds": 0.1, "log": None}
    cache = tmp_path / "entry.json"
    cache.write_text(json.dumps({**data, "seal": state_seal.seal(script_discovery.canonical(data))}))
    assert script_discovery.load_cached(str(cache), str(script), None, 60) is None
    data["script"] = str(script)
    cache.write_text(json.dumps({**data, "seal": state_seal.seal(script_discovery.canonical(data))}))
    assert script_discovery.load_cached(str(cache), str(script), None, 60).script == str(script)


# ------------------------------------------------------------------ 9: the site's change points

STATE = ".history-site.json"


def test_a_planted_empty_list_of_change_points_hides_no_slowdown(tmp_path):
    nightly = tmp_path / "nightly"
    for run in range(12):
        (nightly / f"{run:02d}").mkdir(parents=True)
        found = nightly_record("mlp", run)
        found["metrics"]["per_iter_time"] = [v * (1.5 if run >= 6 else 1.0) for v in found["metrics"]["per_iter_time"]]
        (nightly / f"{run:02d}" / "results.jsonl").write_text(json.dumps(found) + "\n")
    db, out = tmp_path / "history.sqlite", tmp_path / "site"
    call_tool("history.py", "ingest", nightly, "--db", db, check_rc=0)
    call_tool("history.py", "site", "--db", db, "-o", out, check_rc=0)
    pages = sorted((out / "config").glob("*.html"))
    assert pages and "class=\"change\"" in pages[0].read_text()  # the slowdown is on the config's page
    state = json.loads((out / STATE).read_text())
    planted = {"version": 1, "pages": state["pages"], "detections": {key: [] for key in state["detections"]}}
    (out / STATE).write_text(json.dumps(planted))
    pages[0].unlink()  # a page the planted state lists as unchanged: written again all the same
    victim = out / "config" / "mine.html"  # a page the planted list names: an unsealed list removes nothing
    victim.write_text("the user's\n")
    planted["pages"]["config/mine.html"] = "0" * 64
    (out / STATE).write_text(json.dumps(planted))
    call_tool("history.py", "site", "--db", db, "-o", out, check_rc=0)
    assert "class=\"change\"" in pages[0].read_text() and victim.read_text() == "the user's\n"
