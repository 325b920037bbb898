"""The code under test at one commit, in a checkout of its own: a local clone of the user's repository
under the output directory. The user's repository is only read (rev-parse, rev-list, clone): its working
tree, index, HEAD and .git are never written, so a bisection can't disturb work in progress there."""

from __future__ import annotations

import os
import subprocess


class GitError(Exception):
    """A git command that failed: one line for the user."""


def git(*args: str, cwd: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitError(f"git {' '.join(args)}: {exc}") from None
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise GitError(f"git {' '.join(args)} in {cwd}: {message}")
    return done.stdout.strip()


def resolve(repo: str, rev: str) -> str:
    return git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", cwd=repo)


def commits_between(repo: str, good: str, bad: str) -> list:
    """good, then every commit on the ancestry path from good to bad, oldest first, bad last."""
    try:
        git("merge-base", "--is-ancestor", good, bad, cwd=repo)
    except GitError:
        raise GitError(f"the good commit {good[:12]} is not an ancestor of the bad one {bad[:12]}") from None
    path = git("rev-list", "--reverse", "--ancestry-path", f"{good}..{bad}", cwd=repo).split()
    return [good] + path


def subject(repo: str, commit: str) -> str:
    return git("log", "-1", "--format=%s", commit, cwd=repo)


def checkout(repo: str, directory: str, commit: str) -> None:
    """`directory` holds exactly `commit`'s tree (cloned from `repo` the first time; cleaned every time)."""
    if not os.path.isdir(os.path.join(directory, ".git")):
        os.makedirs(os.path.dirname(os.path.abspath(directory)), exist_ok=True)
        git("clone", "--quiet", "--no-checkout", os.path.abspath(repo), os.path.abspath(directory), cwd=repo)
    else:  # commits made in the user's repository since the clone
        git("fetch", "--quiet", os.path.abspath(repo), "+refs/heads/*:refs/remotes/origin/*", cwd=directory)
    git("checkout", "--quiet", "--force", "--detach", commit, cwd=directory)
    git("clean", "-fdxq", cwd=directory)  # what the previous commit's setup built
