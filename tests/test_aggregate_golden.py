"""aggregate.py's golden files (tests/aggregate/*.test), each run through the real CLI in a subprocess.

The selected cases start together on a small thread pool (each is its own process), and every test
waits for its own result, so `make test` stays quick on a busy machine.
"""

import concurrent.futures
import importlib.util
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("aggregate_run_golden",
                                               os.path.join(HERE, "aggregate", "run_golden.py"))
run_golden = sys.modules["aggregate_run_golden"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_golden)

CASES = run_golden.cases()


@pytest.fixture(scope="session")
def golden_results(request):
    selected = [item.callspec.params["path"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_golden" and hasattr(item, "callspec")]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2)))
    futures = {path: pool.submit(run_golden.check, run_golden.parse(path)) for path in selected}
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


def test_there_are_golden_files():
    names = {os.path.basename(p).split(".")[2] for p in CASES}
    assert len(CASES) >= 40
    assert names == {"speedup", "histogram", "latest", "latest_grouped"}


@pytest.mark.parametrize("path", CASES, ids=[os.path.basename(p)[: -len(".test")] for p in CASES])
def test_golden(path, golden_results):
    ok, explanation = golden_results[path].result(timeout=300)
    assert ok, explanation
