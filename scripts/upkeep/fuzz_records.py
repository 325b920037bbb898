#!/usr/bin/env python3
"""The shared record validation (benchmarks/results/record_check.py) and every tool's reader, fed mutated records
for a bounded time.

A results file may come from anywhere (issue #52): a record may hold any value of any type. This starts from real
records (tests/fixtures/analyzer, aggregate's golden files) and mutates each, seeded: a value replaced by a hostile
one (a wrong type, NaN, inf, 1e308, integers beyond 64 bits, deep nesting, a wrong container, a lone surrogate), a
key dropped, a value wrapped in a list. Each round writes one file of mutated records and a few good ones, and
runs, in this process, aggregate.py (a table and the HTML page), compare.py, result_analyzer.py (both readers),
and history.py ingest (a new database), show, detect and site. A record may be refused with its reason and a tool
may say "nothing to report" (exit 1); any other end (exit 3, a traceback) is a failure: its file is kept under
output/fuzz-records/ and named.

Exit status 0 when clean, 1 on a failure. The seed is printed; the same seed gives the same files.
tests/security/test_sec_records.py runs a few rounds of it.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib
import io
import json
import logging
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAILURES_DIR = ROOT / "output" / "fuzz-records"
BASE_FILES = (ROOT / "tests" / "fixtures" / "analyzer" / "ours.jsonl",
              ROOT / "tests" / "aggregate" / "golden" / "ours_cpu.jsonl",
              ROOT / "tests" / "aggregate" / "golden" / "upstream_v100.jsonl")
DEFAULT_SECONDS = 30.0
DEFAULT_SEED = 52
RECORDS_PER_FILE = 250
MAINS = {"aggregate.py": "benchmarks.aggregate.cli", "compare.py": "benchmarks.compare.cli",
         "result_analyzer.py": "benchmarks.analyzer.cli", "history.py": "benchmarks.history.cli"}

HOSTILE_VALUES = [None, True, 0, -1, 1.5, float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 1e300,
                  2 ** 63, 2 ** 64, 10 ** 30, -(10 ** 400), "", "x", "1e308", "<script>", "\u0000", "\ud800x", [],
                  [1, 2], [[1]], {}, {"a": 1}, {"total_time": [1]}, [None], [float("inf")], [1e308, 1e308]]


def hostile(rng: random.Random):
    return copy.deepcopy(rng.choice(HOSTILE_VALUES))  # a copy: a later change never reaches the table


def nested(rng: random.Random, depth: int):
    value = hostile(rng)
    for _ in range(depth):
        value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def paths(value, prefix=()):
    """Every path to a value inside a record, to pick one to mutate."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, prefix + (index,))


def mutate(record: dict, rng: random.Random) -> dict:
    """One to three random changes to a copy of a valid record."""
    record = copy.deepcopy(record)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(list(paths(record))[1:])
        parent = record
        for step in path[:-1]:
            parent = parent[step]
        action = rng.random()
        if action < 0.6:
            parent[path[-1]] = hostile(rng) if rng.random() < 0.8 else nested(rng, rng.randint(1, 40))
        elif action < 0.8 and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = [parent[path[-1]]]
    return record


def base_records() -> list:
    return [json.loads(line) for path in BASE_FILES for line in path.read_text().splitlines()[:6]]


def fuzzed_records(count: int, seed: int) -> list:
    rng = random.Random(seed)
    bases = base_records()
    return [mutate(rng.choice(bases), rng) for _ in range(count)]


def dump(record: dict) -> str:
    try:
        return json.dumps(record)  # Python's json writes NaN and Infinity, as a results file may hold them
    except (ValueError, RecursionError):
        return "{}"


def write_file(path: Path, seed: int, count: int = RECORDS_PER_FILE) -> Path:
    """`count` mutated records and three good ones (three runs of one config), one per line."""
    good = base_records()[0]
    lines = [dump(record) for record in fuzzed_records(count, seed)]
    lines += [json.dumps(dict(good, timestamp=1700000000.0 + 86400 * day)) for day in range(3)]
    path.write_text("\n".join(lines) + "\n")
    return path


def tool_runs(path: Path, work: Path) -> list:
    """(tool, argv) of every reader over `path`."""
    db = work / "history.sqlite"
    quick = ["--permutations=99", "--alpha=0.05"]
    return [("aggregate.py", [path, "--accelerator=all", "--format=table"]),
            ("aggregate.py", [path, "--accelerator=all", "--format=html", "-o", work / "report.html"]),
            ("compare.py", [path, path]),
            ("result_analyzer.py", [path, "-o", work / "python.csv", "--reader=python"]),
            ("result_analyzer.py", [path, "-o", work / "auto.csv"]),
            ("history.py", ["ingest", path, "--db", db]),
            ("history.py", ["show", "--db", db]),
            ("history.py", ["detect", "--db", db, *quick]),
            ("history.py", ["site", "--db", db, "-o", work / "site", *quick])]


def run_tool(tool: str, argv: list) -> tuple:
    """(exit status, stderr) of a tool's main(argv) run in this process, its output captured."""
    main = importlib.import_module(MAINS[tool]).main
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(arg) for arg in argv])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except Exception as exc:  # noqa: BLE001 (any escape is the failure this looks for)
                code = 3
                print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    return code or 0, err.getvalue()


def check_validation(seed: int, count: int = 3000) -> list:
    """Problems of the validation itself: an exception, or a reason that is no one line."""
    from benchmarks.results import record_check

    found = []
    for number, record in enumerate(fuzzed_records(count, seed), start=1):
        try:
            why = record_check.problem(record)
        except Exception as exc:  # noqa: BLE001
            found.append(f"record {number}: record_check raised {type(exc).__name__}: {exc}")
            continue
        if why is not None and (not isinstance(why, str) or "\n" in why):
            found.append(f"record {number}: reason {why!r} is not one line")
    return found


def run_round(seed: int, work: Path) -> list:
    """One file of mutated records through every tool: the failures, one line each."""
    path = write_file(work / "fuzzed.jsonl", seed)
    failures = check_validation(seed, 500)
    for tool, argv in tool_runs(path, work):
        code, stderr = run_tool(tool, argv)
        if code not in (0, 1) or "Traceback" in stderr or "internal error" in stderr:
            last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
            failures.append(f"{tool} {' '.join(map(str, argv[1:]))}: exit {code}: {last}")
    return failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fuzz_records.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS,
                        help=f"how long to feed the tools files (default {DEFAULT_SECONDS:.0f}; one round at least)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"the first round's seed (default {DEFAULT_SEED})")
    args = parser.parse_args(argv)
    if args.seconds <= 0:
        parser.error("--seconds must be positive")
    print(f"fuzz_records.py: seed {args.seed}, {args.seconds:g} s", flush=True)
    logging.disable(logging.WARNING)  # the tools' own warnings (skipped records) are expected by the thousand
    deadline, seed, rounds = time.monotonic() + args.seconds, args.seed, 0
    try:
        while True:
            work = Path(tempfile.mkdtemp(prefix="fuzz-records-"))
            try:
                failures = run_round(seed, work)
                if failures:
                    FAILURES_DIR.mkdir(parents=True, exist_ok=True)
                    kept = FAILURES_DIR / f"seed-{seed}.jsonl"
                    shutil.copy(work / "fuzzed.jsonl", kept)
                    print("\n".join(f"fuzz_records.py: seed {seed}: {line}" for line in failures), file=sys.stderr)
                    print(f"fuzz_records.py: the input is kept in {kept}", file=sys.stderr)
                    return 1
            finally:
                shutil.rmtree(work, ignore_errors=True)
            rounds += 1
            seed += 1
            if time.monotonic() >= deadline:
                break
    finally:
        logging.disable(logging.NOTSET)
    print(f"fuzz_records.py: {rounds} round(s) of {RECORDS_PER_FILE} mutated records, every tool clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
