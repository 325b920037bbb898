"""aggregate.py's golden files (tests/aggregate/*.test), each run through the real CLI (its main, in this process;
`make test-golden` runs them as processes)."""

import importlib.util
import os
import sys

import pytest

from helpers import call_tool

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("aggregate_run_golden",
                                               os.path.join(HERE, "aggregate", "run_golden.py"))
run_golden = sys.modules["aggregate_run_golden"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_golden)

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
