"""The code under test at one commit, in a checkout of its own: a local clone of the user's repository
under the output directory. The user's repository is only read (rev-parse, rev-list, clone): its working
tree, index, HEAD and .git are never written, so a bisection can't disturb work in progress there.

A checkout found in the output folder is a claim, not a fact (docs/architecture.md, "The rule for state"): it is
used only when it is a real folder inside the bisection's folder (no link on the way), holding a real .git folder
whose marker (MARKER) carries this user's seal of that path (plumbing/state_seal.py), written when this tool cloned
it. Anything else there (a link to the user's repository, a planted clone with hooks) is refused with one line
before git touches it. Every git command runs with hooks and fsmonitor off, without the system's or the user's
config, and with its repository named (GIT_DIR, GIT_WORK_TREE), never found by walking up."""

from __future__ import annotations

import os
import stat
import subprocess

from benchmarks.plumbing import disk_writes, safe_reads, state_seal
from benchmarks.plumbing.safe_paths import PathEscapes, inside

MARKER = "ptbench-checkout"  # in the checkout's .git: the seal of the checkout's real path
# What no repository's config may turn on: hooks, an fsmonitor command, a pager; lazy fetches of promisor remotes.
SAFE_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.pager=cat",
               "-c", "protocol.allow=never", "-c", "protocol.file.allow=always")


class GitError(Exception):
    """A git command that failed: one line for the user."""


def safe_env(git_dir: str = "", work_tree: str = "") -> dict:
    """The environment of every git we start: no system config, no user config, no terminal prompt; the
    repository named when given, so git never looks for one in a parent folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0", GIT_NO_LAZY_FETCH="1")
    if git_dir:
        env.update(GIT_DIR=git_dir, GIT_WORK_TREE=work_tree)
    return env


def git(*args: str, cwd: str, git_dir: str = "", work_tree: str = "") -> str:
    try:
        done = subprocess.run(["git", *SAFE_CONFIG, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                              env=safe_env(git_dir, work_tree), stdin=subprocess.DEVNULL)
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


def _real_folder(path: str) -> bool:
    """Whether `path` is a folder itself, not a link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def owned_checkout(root: str, relative: str = "checkout") -> tuple:
    """(path, whether a checkout of ours is there) for the checkout `relative` under `root`; GitError (one line)
    where something else is there: a link, a folder leading outside, a folder this tool did not clone."""
    path = os.path.join(root, relative)
    try:
        resolved = inside(root, relative)
    except PathEscapes as escape:
        raise GitError(f"{path} leads outside {root} (to {escape.resolved}): git is never run there; remove it") from None
    if not os.path.lexists(path):
        return path, False
    git_dir = os.path.join(path, ".git")
    if _real_folder(path) and resolved == os.path.realpath(path) and _real_folder(git_dir):
        try:
            claimed = safe_reads.read_regular(os.path.join(git_dir, MARKER), 4096, follow_links=False).decode()
        except (OSError, ValueError):
            claimed = ""
        if state_seal.sealed(resolved.encode(), claimed.strip()):
            return path, True
    raise GitError(f"{path} is not a checkout this tool made (a link, or a folder without its seal): git is never "
                   "run there; remove it or use another --output-dirname")


def checkout(repo: str, directory: str, commit: str) -> None:
    """`directory` (from owned_checkout) holds exactly `commit`'s tree (cloned from `repo` the first time; cleaned
    every time)."""
    root, name = os.path.split(os.path.abspath(directory))
    directory, ours = owned_checkout(root, name)
    git_dir = os.path.join(directory, ".git")
    if not ours:
        os.makedirs(root, exist_ok=True)
        git("clone", "--quiet", "--no-checkout", "--no-hardlinks", os.path.abspath(repo), directory, cwd=root)
        disk_writes.write_text(os.path.join(git_dir, MARKER), state_seal.seal(os.path.realpath(directory).encode()))
    else:  # commits made in the user's repository since the clone
        git("fetch", "--quiet", os.path.abspath(repo), "+refs/heads/*:refs/remotes/origin/*", cwd=directory,
            git_dir=git_dir, work_tree=directory)
    git("checkout", "--quiet", "--force", "--detach", commit, cwd=directory, git_dir=git_dir, work_tree=directory)
    git("clean", "-fdxq", cwd=directory, git_dir=git_dir, work_tree=directory)  # what the previous setup built
