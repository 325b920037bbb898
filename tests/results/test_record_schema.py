"""The record declared in code (benchmarks/results/record_schema.py): the writer's check, its strict mode, the docs
generated from it, and the readers' one validation built from it."""

import json
import logging
import os
from pathlib import Path

import pytest

from benchmarks.results import record_check, record_schema

ROOT = Path(__file__).resolve().parents[2]
RESUME = ROOT / "tests" / "fixtures" / "resume"


def stored_records() -> list:
    """Records our writer wrote (the resume fixtures: two real sweeps)."""
    return [json.loads(line) for path in sorted(RESUME.glob("*.jsonl")) for line in path.read_text().splitlines()]


def a_record(**changes) -> dict:
    record = stored_records()[0]
    record.update(changes)
    return record


def test_the_tests_run_in_strict_mode():
    # tests/conftest.py turns it on for every test and every process a test starts (inherited environment)
    assert os.environ.get(record_check.STRICT_ENV) == "1" and record_check.strict()


@pytest.mark.process  # what a process the tests start inherits
def test_a_process_the_tests_start_is_strict_too():
    import subprocess
    import sys

    found = subprocess.run([sys.executable, "-c", "from benchmarks.results import record_check; "
                            "print(record_check.strict())"], capture_output=True, text=True, cwd=ROOT, check=True)
    assert found.stdout.strip() == "True"


def test_every_stored_record_of_our_writer_breaks_nothing():
    found = [(r["model"]["model_name"], record_check.writer_problems(r)) for r in stored_records()]
    assert len(found) > 100 and [f for f in found if f[1]] == []


@pytest.mark.parametrize("changes, reason", [
    ({"speed_of_light": 299792458}, "speed_of_light is not declared"),
    ({"warnings": "one line, not a list"}, "warnings is str, not a list of text"),
    ({"run_seconds": "3.2"}, "every reader refuses it: run_seconds is text, not a number"),
    ({"cudagraphs": "yes"}, "cudagraphs is str, not true/false"),
])
def test_an_undeclared_key_or_a_mistyped_value_fails_the_strict_mode(changes, reason):
    with pytest.raises(record_check.RecordSchemaError, match=reason):
        record_check.written(a_record(**changes), logging.getLogger("test"))


def test_a_mistyped_nested_key_fails_the_strict_mode():
    record = a_record()
    record["experiment"]["channels_last"] = "on"
    record["environment"]["launch"] = 1
    with pytest.raises(record_check.RecordSchemaError) as raised:
        record_check.written(record, logging.getLogger("test"))
    assert "experiment.channels_last is str, not true/false" in str(raised.value)
    assert "environment.launch is int, not text" in str(raised.value)


def test_a_users_sweep_keeps_the_record_with_a_warning(monkeypatch, caplog):
    monkeypatch.delenv(record_check.STRICT_ENV)
    record = a_record(speed_of_light=299792458)
    with caplog.at_level(logging.WARNING):
        kept = record_check.written(record, logging.getLogger("test"))
    assert kept["speed_of_light"] == 299792458  # nothing lost
    assert kept["warnings"][-1] == "record schema: speed_of_light is not declared (a core key in " \
                                   "benchmarks/results/record_schema.py, a feature's in the RECORD_KEYS of " \
                                   "benchmarks/features/<name>/__init__.py)"
    assert kept["warnings"][-1] in caplog.text
    assert record_check.problem(kept) is None  # the readers take it


def test_a_good_record_is_written_as_it_is():
    record = a_record()
    assert record_check.written(dict(record), logging.getLogger("test")) == record


def test_every_experiment_key_is_declared():
    from benchmarks.config import experiment_config

    declared = [key.name for key in record_schema.EXPERIMENT.fields]
    assert declared == list(experiment_config.EXPERIMENT_KEYS + experiment_config.OWN_KEYS)


def test_the_readers_validation_is_the_schemas_door_keys():
    door = [key.name for key in record_schema.SCHEMA if key.door]
    assert list(record_check.CHECKS) == door
    assert set(record_check.REQUIRED) <= set(door)


def test_the_docs_table_is_generated_from_the_schema():
    docs = (ROOT / "docs" / "record-schema.md").read_text(encoding="utf-8")
    assert docs == record_schema.markdown(), \
        "docs/record-schema.md is stale: python -m benchmarks.results.record_schema --write-docs"
    for key in record_schema.SCHEMA:
        assert f"| `{key.name}` |" in docs


def test_the_markdown_flag_prints_the_table(capsys):
    assert record_schema.main(["--markdown"]) == 0
    assert capsys.readouterr().out == record_schema.markdown()
    assert record_schema.main(["--bogus"]) == 2
