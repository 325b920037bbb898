"""history bisect on a generated git repository of a model file whose forward gets 15% slower at one commit
of 12, with one commit that does not build: found exactly, the skip made, the user's checkout untouched,
and a re-run resumes from its state without running anything again."""

import json
import subprocess

import pytest

from helpers import run_tool

# Integration: a real sweep per commit, and a verdict that rests on measured time (a 40 vs 46 ms forward): real
# time on a loaded machine is this test's subject, which the unit tier never depends on.
pytestmark = pytest.mark.integration

COMMITS = 12
SLOW_AT = 7  # the first bad commit (0-based: commit 0 is the good end, commit 11 the bad one)
BROKEN_AT = 5  # does not build: the first commit the search tries
# The forward's time is mostly a fixed sleep, so the 15% step stands clear of the timing noise of a loaded
# machine (CPU-bound work on 2 shared cores varies by 20% and more between processes).
MODEL = '''import time

import torch
from torch import nn

DELAY = {delay}


class Delay(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        time.sleep(DELAY)
        return self.fc(x)


def create_model(batch_size, **_):
    return Delay(), (torch.randn(batch_size, 8),)
{broken}'''


def git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    path = tmp_path_factory.mktemp("user_repo")
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    for index in range(COMMITS):
        delay = 0.046 if index >= SLOW_AT else 0.040
        broken = "\nthis line is not python\n" if index == BROKEN_AT else ""
        (path / "delaymodel.py").write_text(MODEL.format(delay=delay, broken=broken))
        (path / "notes.txt").write_text(f"commit {index}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"commit {index}")
    (path / "notes.txt").write_text("work in progress, not committed\n")  # the user's checkout is dirty
    return path


def test_bisect_finds_the_first_slow_commit_skips_the_broken_one_and_resumes(repo, tmp_path):
    commits = git(repo, "rev-list", "--reverse", "HEAD").split()
    before = (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "worktree", "list"),
              (repo / "notes.txt").read_text(), sorted(p.name for p in (repo / ".git").iterdir()))
    args = ["bisect", "--repo", repo, "--good", commits[0], "--bad", "main", "--setup", "python -m py_compile delaymodel.py",
            "--rounds", "2", "--max-rounds", "6", "--output-dirname", tmp_path / "out", "--",
            "--suite-name=files", "--search-dir=.", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
            "--repeat=10", "--warmup=1"]
    done = run_tool("history.py", *args, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"first bad commit: {commits[SLOW_AT]} commit {SLOW_AT}" in done.stdout
    state = json.loads((tmp_path / "out" / "bisect" / "state.json").read_text())
    verdicts = {commits.index(c): v["verdict"] for c, v in state["verdicts"].items()}
    assert verdicts[BROKEN_AT] == "skip" and "--setup exited" in state["verdicts"][commits[BROKEN_AT]]["evidence"]
    assert verdicts[SLOW_AT] == "bad" and all(v == "good" for i, v in verdicts.items() if i < SLOW_AT and i != BROKEN_AT)
    assert all(v == "bad" for i, v in verdicts.items() if i > SLOW_AT)
    slow = state["verdicts"][commits[SLOW_AT]]
    assert 1.05 < slow["vs_good"] < 1.30, slow
    # The user's repository: same HEAD, same uncommitted change, no worktree added, nothing new in .git.
    after = (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "worktree", "list"),
             (repo / "notes.txt").read_text(), sorted(p.name for p in (repo / ".git").iterdir()))
    assert after == before
    # Everything it ran stays in the output directory; a re-run resumes from it and starts no child.
    assert (tmp_path / "out" / "bisect" / "runs" / commits[SLOW_AT][:12] / "results.jsonl").exists()
    results = sorted((tmp_path / "out" / "bisect" / "runs").glob("*/results.jsonl"))
    sizes = [p.stat().st_size for p in results]
    again = run_tool("history.py", *args, timeout=600)
    assert again.returncode == 0 and f"first bad commit: {commits[SLOW_AT]}" in again.stdout, again.stderr
    assert [p.stat().st_size for p in results] == sizes
