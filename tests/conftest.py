"""Shared helpers: run the real tools as subprocesses, read what they wrote."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.fixture
def out_dir(tmp_path):
    return tmp_path / "out"


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


@pytest.fixture(params=["compiled", "python"])
def analyzer_reader(request, monkeypatch):
    """Runs a test with each of result_analyzer.py's readers: the compiled one (benchmarks/analyzer/_jsonl_scan.c, built
    by `make env`) and the pure-Python one it falls back to. Worker processes are forked, so they inherit it."""
    from benchmarks.analyzer import compiled_reader

    if request.param == "python":
        monkeypatch.setattr(compiled_reader, "module", None)  # as on a machine without a C compiler
    else:
        assert compiled_reader.module is not None, "the compiled reader is not built: run `make env`"
    return request.param
