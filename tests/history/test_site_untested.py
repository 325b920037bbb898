"""history's site says what it did not do (issue 60): with too few runs for the change-point test, a config's page
says "not tested: N runs, M needed", never "no change point: within its noise" (2 runs and a 160x step had said
that); a config run without --verify is "not checked", never "pass", in its status and its line's pass rate, as
aggregate.py says of the same records. Real records: make bench's sweep (tests/fixtures/resume/make-bench.jsonl),
a second run of it 160x slower and without --verify."""

import json
import re

import pytest

from helpers import ROOT, call_tool

MAKE_BENCH = ROOT / "tests" / "fixtures" / "resume" / "make-bench.jsonl"
STEP = 160


def unverified(record: dict) -> dict:
    """The record as a sweep without --verify writes it: no verification or accuracy keys."""
    out = {k: v for k, v in record.items() if not k.startswith(("verification", "accuracy"))}
    return {**out, "verify": False}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("untested")
    first = [json.loads(line) for line in MAKE_BENCH.read_text().splitlines()]
    second = []
    for record in first:
        metrics = {k: ([v * STEP for v in values] if k in ("total_time", "per_iter_time") else values)
                   for k, values in record["metrics"].items()}
        second.append(unverified({**record, "timestamp": record["timestamp"] + 86400, "metrics": metrics}))
    results = tmp / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in first + second))
    db = tmp / "history.sqlite"
    call_tool("history.py", "ingest", results, "--db", db, check_rc=0)
    built = call_tool("history.py", "site", "--db", db, "-o", tmp / "site", check_rc=0)
    return tmp / "site", built.stdout


def test_a_config_with_two_runs_is_not_tested_not_unchanged(built):
    site, summary = built
    assert "0 series tested for changes" in summary
    page = (site / "config" / "1.html").read_text()
    assert "No change point" not in page and "within its noise" not in page
    assert re.search(r"Not tested: 2 runs, 11 needed: a change needs 11 runs or more", page)
    suite = next((site / "suite").glob("dummy-eager-eval-*.html")).read_text()
    assert "not tested: 2 runs, 11 needed" in suite and "no change point between them" not in suite


def test_unverified_configs_are_not_checked_never_pass(built):
    site, _ = built
    suite = next((site / "suite").glob("dummy-inductor-eval-*.html")).read_text()
    statuses = re.findall(r'data-status-newest="([^"]*)" data-status-baseline="([^"]*)"', suite)
    assert statuses and set(statuses) == {("not checked", "pass")}, statuses
    assert "pass &rarr; not checked" in suite
    index = (site / "index.html").read_text()
    cells = re.findall(r'<td[^>]*data-metric="pass_rate"[^>]*>([^<]*)', index)
    assert cells and set(cells) == {"not checked"}, cells  # the newest run checked nothing: no pass rate
