#!/usr/bin/env python3
"""Golden-file tests of aggregate.py, in the style of upstream PyTorch/XLA's test/benchmarks.

Each `<accel>.<test>.<report>[.<suffix>].test` file names a run of the real CLI:
    aggregate.py --format=csv --accelerator=<accel> --test=<test> --report=<report> ARGS -- FILES
and holds its expected stdout, after optional directive lines at the top:
    # ARGS: <more arguments, shell-quoted; a later --format=tab wins>
    # FILES: <inputs relative to this directory: files, globs, directories> (default: every *.jsonl here)
    # EXIT: <expected exit status> (default 0)
    # STDERR: <text that stderr must contain> (repeatable)
stderr must never hold a traceback.

    run_golden.py               run them all (what `make test-golden` does)
    run_golden.py -k latest     only those whose name contains "latest"
    run_golden.py --update F..  rewrite the expected stdout of F (check the result by hand!)
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import glob
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # tests/aggregate/golden/
AGGREGATE = os.path.join(ROOT, "aggregate.py")
NAME = re.compile(r"^(?P<accel>[^.]+)\.(?P<test>[^.]+)\.(?P<report>[^.]+)(?:\.(?P<suffix>[^.]+))?\.test$")
DIRECTIVES = ("# ARGS: ", "# FILES: ", "# EXIT: ", "# STDERR: ")


@dataclasses.dataclass
class Case:
    path: str
    argv: list
    exit: int
    stderr: list
    header: list  # the directive lines, kept by --update
    expected: str


def cases(pattern: str = "") -> list:
    return sorted(p for p in glob.glob(os.path.join(HERE, "*.test")) if pattern in os.path.basename(p))


def parse(path: str, python: str = sys.executable) -> Case:
    match = NAME.match(os.path.basename(path))
    if not match:
        raise ValueError(f"{path}: name is not <accel>.<test>.<report>[.<suffix>].test")
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines(keepends=True)
    header = []
    while lines and lines[0].startswith(DIRECTIVES):
        header.append(lines.pop(0))
    args, files, status, needles = [], None, 0, []
    for line in header:
        key, _, value = line.rstrip("\n").partition(": ")
        if key == "# ARGS":
            args += shlex.split(value)
        elif key == "# FILES":
            files = shlex.split(value)
        elif key == "# EXIT":
            status = int(value)
        else:
            needles.append(value)
    if files is None:
        files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, "*.jsonl")))
    # As upstream's Makefile: the files last; `--` keeps a final `--backends a b` from taking them.
    argv = [python, AGGREGATE, "--format=csv", f"--accelerator={match['accel']}", f"--test={match['test']}",
            f"--report={match['report']}", *args, *([] if "--" in args else ["--"]), *files]
    return Case(path, argv, status, needles, header, "".join(lines))


def run(case: Case) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(case.argv, cwd=HERE, env=env, capture_output=True, text=True, timeout=120)


def check(case: Case, run=run) -> tuple:
    """(ok, explanation); `run(case)` gives the CLI's CompletedProcess (the unit tests run it in their process)."""
    result = run(case)
    problems = []
    if result.returncode != case.exit:
        problems.append(f"exit status {result.returncode}, expected {case.exit}")
    if "Traceback" in result.stderr:
        problems.append("stderr holds a traceback")
    for needle in case.stderr:
        if needle not in result.stderr:
            problems.append(f"stderr lacks {needle!r}")
    if result.stdout != case.expected:
        diff = difflib.unified_diff(case.expected.splitlines(keepends=True), result.stdout.splitlines(keepends=True),
                                    "expected", "actual")
        problems.append("stdout differs:\n" + "".join(diff))
    if not problems:
        return True, ""
    command = " ".join(shlex.quote(a) for a in case.argv[1:])
    return False, (f"{os.path.basename(case.path)}: " + "; ".join(problems)
                   + f"\n  command (in {HERE}): python {command}\n  stderr:\n{result.stderr}")


def update(case: Case) -> None:
    result = run(case)
    with open(case.path, "w", encoding="utf-8") as handle:
        handle.write("".join(case.header) + result.stdout)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", default="", help="run only tests whose file name contains this")
    parser.add_argument("--update", action="store_true", help="rewrite expected stdout (review the diff!)")
    parser.add_argument("files", nargs="*", help="test files (default: all)")
    options = parser.parse_args(argv)
    paths = [os.path.abspath(f) for f in options.files] or cases(options.k)
    failed = 0
    for path in paths:
        case = parse(path)
        if options.update:
            update(case)
            print(f"  UPDATED {os.path.basename(path)}")
            continue
        ok, explanation = check(case)
        print(f"  {'PASS' if ok else 'FAIL'} {os.path.basename(path)}")
        if not ok:
            failed += 1
            print(explanation)
    if not options.update:
        print(f"{len(paths) - failed} passed, {failed} failed")
    return 1 if failed or not paths else 0


if __name__ == "__main__":
    sys.exit(main())
