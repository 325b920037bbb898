"""Test helpers: run the real tools as subprocesses, read what they wrote, find processes left behind.
Imported by test modules (`from helpers import ...`); fixtures live in conftest.py."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def run_tool(script: str, *args, timeout: float = 600, env=None, check_rc=None) -> subprocess.CompletedProcess:
    """Run a top-level tool (experiment_runner.py, result_analyzer.py, aggregate.py) for real."""
    result = subprocess.run([PYTHON, str(ROOT / script), *map(str, args)], capture_output=True, text=True,
                            timeout=timeout, cwd=ROOT, env=env)
    if check_rc is not None:
        assert result.returncode == check_rc, f"exit {result.returncode}\nSTDOUT:\n{result.stdout}\nSTDERR:\n{result.stderr}"
    return result


def run_runner(*args, **kwargs) -> subprocess.CompletedProcess:
    return run_tool("experiment_runner.py", *args, **kwargs)


def read_jsonl(path) -> list:
    """Every valid record of a results file (torn or invalid lines are skipped)."""
    out = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def by_model(records: list) -> dict:
    return {r["model"]["model_name"]: r for r in records}


def processes_mentioning(text: str) -> list:
    """Live processes whose command line contains `text` (to prove nothing was left behind)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.pid != os.getpid() and text in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def wait_for(predicate, timeout=120, what="it"):
    """`predicate()`'s first true value, asked every 0.2 s; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"waited {timeout} s for {what}")


def ray_children(driver_pid: int) -> list:
    """The running children of a Ray sweep whose driver is `driver_pid`, on any node of this machine (each writes
    under a scratch directory named after its driver's host and pid: runner/ray_task.py): spawned ones (their
    own command line), and forked ones (their node's fork server's command line, whose log is in that scratch
    directory; the server itself is left out: a child's parent is a server)."""
    import psutil

    found = []
    for process in processes_mentioning(f"-{driver_pid}-"):
        try:
            command = " ".join(process.cmdline())
            if "ptbench-ray-" not in command:
                continue
            if "--model-config" in command or (
                    "benchmarks.child.zygote" in command and "benchmarks.child.zygote" in " ".join(process.parent().cmdline())):
                found.append(process)
        except (psutil.Error, AttributeError):  # gone meanwhile, or its parent is
            continue
    return found


def fill_disk(directory, leave: int = 0):
    """Fill the file system of `directory` with a filler file, leaving about `leave` bytes free; returns its path
    (remove it to give the space back)."""
    stats = os.statvfs(directory)
    free = stats.f_bavail * stats.f_frsize
    filler = Path(directory) / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, b"x" * max(0, free - leave))
    except OSError:  # the last page was taken by metadata: full is full
        pass
    finally:
        os.close(fd)
    return filler
