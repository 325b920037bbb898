"""Fixtures shared by the test modules (helpers are in helpers.py), and the test tiers: tests marked
`integration` start real sweeps or children (`make test-fast` leaves them out)."""

import pytest


@pytest.fixture
def out_dir(tmp_path):
    return tmp_path / "out"


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
