#!/usr/bin/env python3
"""The unit tier's wall time as CI runs it: a fresh tree of a commit (git archive: no __pycache__), the
environment's PYTHONDONTWRITEBYTECODE=1, `pytest -n 2 --dist loadfile -m "not integration" tests`, with this
interpreter. With --vs, another commit's tree is timed in the same run, the two alternating round by round, so a
busy machine weighs on both alike; each line says the load average it started at. Target: under 30 s on a quiet
machine (load below 0.5)."""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIER = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile", "-m", "not integration",
        "tests"]


def fresh_tree(ref: str, into: Path) -> Path:
    """The commit's files under `into` (what a clone holds), with the compiled reader this checkout built, if any
    (CI's `make env` builds it)."""
    archive = into / "tree.tar"
    if ref.startswith("-"):  # git would read it as an option (--output=PATH writes anywhere)
        raise SystemExit(f"bench-unit-tier: {ref!r} is not a commit (it starts with '-')")
    with open(archive, "wb") as handle:
        done = subprocess.run(["git", "archive", ref], cwd=ROOT,
                              stdout=handle, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"bench-unit-tier: {ref!r} is not a commit here ({' '.join(done.stderr.split())})")
    tree = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    for built in (ROOT / "benchmarks" / "analyzer").glob("_jsonl_scan*.so"):
        shutil.copy2(built, tree / "benchmarks" / "analyzer" / built.name)
    return tree


def time_tier(tree: Path) -> tuple:
    """(wall seconds, pytest's summary line, load average at the start) of one run in a tree without bytecode."""
    for cache in list(tree.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)
    load = os.getloadavg()[0]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *TIER], cwd=tree, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    summary = lines[-1].strip("= ") if lines else f"exit {done.returncode}"
    return seconds, summary, load


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="HEAD", help="the commit to time (default: HEAD)")
    parser.add_argument("--vs", help="another commit timed beside it, alternating")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each (default: 2)")
    args = parser.parse_args(argv)
    refs = [args.ref] + ([args.vs] if args.vs else [])
    scratch = Path(tempfile.mkdtemp(prefix="bench-unit-tier-"))
    try:
        trees = {}
        for number, ref in enumerate(refs):  # folders by number: a ref is text from the command line, never a path
            (scratch / str(number)).mkdir()
            trees[ref] = fresh_tree(ref, scratch / str(number))
        for round_number in range(1, args.rounds + 1):
            for ref, tree in trees.items():
                seconds, summary, load = time_tier(tree)
                print(f"round {round_number}  {ref:<12} {seconds:6.1f} s  load {load:.2f} at start  ({summary})",
                      flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
