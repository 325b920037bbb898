"""aggregate.py's golden files (tests/aggregate/golden/*.test), each run through the real CLI (its main, in this
process; `make test-golden` runs them as processes, through golden/run_golden.py)."""

import os

import pytest

from helpers import GOLDEN, call_tool, load_script

run_golden = load_script("run_golden", GOLDEN)

CASES = run_golden.cases()


def in_process(case):
    return call_tool("aggregate.py", *case.argv[2:], cwd=run_golden.HERE)


def test_there_are_golden_files():
    names = {os.path.basename(p).split(".")[2] for p in CASES}
    assert len(CASES) >= 40
    assert names == {"speedup", "histogram", "latest", "latest_grouped"}


@pytest.mark.parametrize("path", CASES, ids=[os.path.basename(p)[: -len(".test")] for p in CASES])
def test_golden(path):
    ok, explanation = run_golden.check(run_golden.parse(path), in_process)
    assert ok, explanation
