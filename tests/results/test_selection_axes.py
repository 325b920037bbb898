"""The selection flags select, in every tool that selects records (aggregate.py, compare.py, history.py), by an
on/off axis (--channels-last) and a valued one (--precision), on real records: tests/fixtures/selection/axes.jsonl,
the runner's 16 records of one tiny sweep (README there). A value that matches nothing is one line naming the
selection, exit 1 (each tool's "nothing to report")."""

import csv
import io
import json
import re

import pytest

from helpers import ROOT, call_tool

AXES_FILE = ROOT / "tests" / "fixtures" / "selection" / "axes.jsonl"
BOTH_BACKENDS = {"eager", "aot_eager"}


def test_the_fixture_holds_every_combination():
    found = {(r["model"]["model_name"], r["experiment"]["dynamo"] or "eager", r["experiment"]["channels_last"],
              r["experiment"]["precision"]) for r in map(json.loads, AXES_FILE.read_text().splitlines())}
    assert found == {(m, b, c, p) for m in ("mlp", "cnn") for b in BOTH_BACKENDS for c in (True, False)
                     for p in ("fp32", "bf16")}


def aggregate_columns(*flags) -> set:
    """The (backend label, model) pairs of aggregate's --report=latest CSV: what it reports on."""
    result = call_tool("aggregate.py", AXES_FILE, "--report=latest", "--format=csv", *flags, check_rc=0)
    rows = list(csv.reader(io.StringIO(result.stdout)))
    header = rows[0]
    found = set()
    for index, name in enumerate(header):
        if name.startswith("ModelName("):
            found |= {(name[len("ModelName("):-1], row[index]) for row in rows[1:] if row[index]}
    return found


def test_aggregate_selects_by_an_on_off_and_a_valued_axis():
    everything = aggregate_columns()
    assert len(everything) == 16  # 8 backend labels x 2 models
    assert aggregate_columns("--channels-last=on", "--precision=bf16") == {
        (label, model) for label in ("Eager[channels-last,bf16]", "aot_eager[channels-last,bf16]")
        for model in ("mlp", "cnn")}
    assert aggregate_columns("--channels-last=off", "--precision=fp32", "-k", "mlp") == {
        ("Eager", "mlp"), ("aot_eager", "mlp")}
    # a switch given alone is on; two values of one axis keep both
    assert aggregate_columns("--channels-last", "--precision=fp32", "--precision=bf16") == {
        (label, model) for label in ("Eager[channels-last]", "aot_eager[channels-last]", "Eager[channels-last,bf16]",
                                     "aot_eager[channels-last,bf16]") for model in ("mlp", "cnn")}


def compare_rows(*flags) -> list:
    """(model, backend, channels_last, precision) of compare's rows: the sweep's records paired with themselves."""
    result = call_tool("compare.py", AXES_FILE, AXES_FILE, "--format=json", *flags)
    assert result.returncode == 0, result.stderr
    return sorted((row["model_name"], row["experiment"]["dynamo"] or "eager", row["experiment"]["channels_last"],
                   row["experiment"]["precision"]) for row in json.loads(result.stdout)["rows"])


def test_compare_selects_by_an_on_off_and_a_valued_axis():
    assert len(compare_rows()) == 16
    assert compare_rows("--channels-last=on", "--precision=bf16") == sorted(
        (m, b, True, "bf16") for m in ("mlp", "cnn") for b in BOTH_BACKENDS)
    assert compare_rows("--channels-last=off", "--precision=fp32", "--backend=aot_eager") == [
        ("cnn", "aot_eager", False, "fp32"), ("mlp", "aot_eager", False, "fp32")]


@pytest.fixture(scope="module")
def history_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("history") / "history.sqlite"
    call_tool("history.py", "ingest", AXES_FILE, "--db", db, check_rc=0)
    return db


def history_configs(db, *flags) -> list:
    result = call_tool("history.py", "show", "--db", db, "--format=csv", *flags, check_rc=0)
    return sorted({(row["model"], row["backend"]) for row in csv.DictReader(io.StringIO(result.stdout))})


def test_history_selects_by_an_on_off_and_a_valued_axis(history_db):
    assert len(history_configs(history_db)) == 16
    # Before: history's configs knew only their precision, so --channels-last matched nothing at all.
    assert history_configs(history_db, "--channels-last=on", "--precision=bf16") == sorted(
        (m, b) for m in ("mlp", "cnn") for b in ("eager[channels-last,bf16]", "aot_eager[channels-last,bf16]"))
    assert history_configs(history_db, "--channels-last=off", "--precision=fp32") == sorted(
        (m, b) for m in ("mlp", "cnn") for b in ("eager", "aot_eager"))


@pytest.mark.parametrize("tool", ["aggregate.py", "compare.py", "history.py"])
def test_a_value_that_matches_nothing_says_so_in_one_line(tool, history_db):
    args = {"aggregate.py": [AXES_FILE], "compare.py": [AXES_FILE, AXES_FILE],
            "history.py": ["show", "--db", history_db]}[tool]
    result = call_tool(tool, *args, "--channels-last=on", "--precision=fp16")
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(r"match(es)? the selection \(.*--precision=fp16", lines[0]), result.stderr
    assert "--channels-last=on" in lines[0]
