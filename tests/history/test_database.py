"""history's database schema (fast tier): a database written by an older history.py (schema 1, made by main at
a18bfba: tests/fixtures/history/schema1.sql; schema 3, made by main at bec98c6: schema3.sql) opens and is upgraded in
place, its rows and figures kept (peak_rss renamed peak_memory, the samples' median filled in; schema 3's run torch
added, unknown; schema 4's generation figures added, unknown until the records are ingested again); a newer schema than
the tool's is refused in one line."""

import csv
import io
import json
import sqlite3
import statistics

import pytest

from benchmarks.history import database
from helpers import ROOT, call_tool
from test_generation_figures import COLUMNS, QWEN, expected, forward_record, generation_record, write

SCHEMA_1 = ROOT / "tests" / "fixtures" / "history" / "schema1.sql"
SCHEMA_3 = ROOT / "tests" / "fixtures" / "history" / "schema3.sql"


def old_database(tmp_path, schema=SCHEMA_1):
    path = tmp_path / "old.sqlite"
    connection = sqlite3.connect(path)
    connection.executescript(schema.read_text())
    connection.close()
    return path


def columns(connection, table):
    return [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]


def test_a_schema_1_database_is_upgraded_with_its_rows_and_figures(tmp_path):
    path = old_database(tmp_path)
    before = sqlite3.connect(path)
    old = before.execute("SELECT id, peak_rss, samples, compile_s FROM measurements ORDER BY id").fetchall()
    before.close()
    assert len(old) == 13 and any(peak is not None for _, peak, _, _ in old)
    connection = database.connect(str(path), create=False)
    assert database.schema_version(connection) == database.SCHEMA_VERSION == 4
    assert "torch" in columns(connection, "runs")  # 3: a run's torch, unknown for the runs stored before
    assert {row[0] for row in connection.execute("SELECT torch FROM runs")} == {None}
    names = columns(connection, "measurements")
    assert "peak_rss" not in names and {"peak_memory", "accuracy", "median_s", "figures"} <= set(names)
    new = connection.execute("SELECT id, peak_memory, median_s, compile_s FROM measurements ORDER BY id").fetchall()
    assert [(i, peak, c) for i, peak, _, c in new] == [(i, peak, c) for i, peak, _, c in old]
    for (_, _, samples, _), (_, _, median, _) in zip(old, new):
        assert median == (statistics.median(json.loads(samples)) if samples else None)
    indexes = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"measurements_by_run", "measurements_by_config", "runs_by_time"} <= indexes
    connection.close()
    again = database.connect(str(path), create=False)  # upgraded once: opening again changes nothing
    assert again.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 13
    again.close()


def test_the_tools_read_an_upgraded_database(tmp_path):
    path = old_database(tmp_path)
    shown = call_tool("history.py", "show", "--db", path, "--format=csv", check_rc=0)
    assert "peak_mib" in shown.stdout.splitlines()[0]
    # And ingesting into it adds the new columns' values.
    added = call_tool("history.py", "ingest", ROOT / "tests" / "fixtures" / "analyzer" / "dynamo.jsonl", "--db", path,
                     check_rc=0)
    assert "added" in added.stdout
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT COUNT(*) FROM measurements WHERE accuracy IS NOT NULL").fetchone()[0] > 0
    assert connection.execute("SELECT COUNT(*) FROM runs WHERE torch IS NOT NULL").fetchone()[0] > 0
    connection.close()


def test_a_schema_3_database_is_upgraded_shows_its_rows_and_gains_figures_when_ingested_again(tmp_path):
    path = old_database(tmp_path, SCHEMA_3)
    before = sqlite3.connect(path)
    assert before.execute("PRAGMA user_version").fetchone()[0] == 3
    old = before.execute("SELECT id, digest, samples, median_s, compile_s, peak_memory FROM measurements "
                         "ORDER BY id").fetchall()
    before.close()
    connection = database.connect(str(path), create=False)
    assert database.schema_version(connection) == 4 and "figures" in columns(connection, "measurements")
    assert connection.execute("SELECT id, digest, samples, median_s, compile_s, peak_memory FROM measurements "
                              "ORDER BY id").fetchall() == old
    assert {row[0] for row in connection.execute("SELECT figures FROM measurements")} == {None}  # not kept by 3
    connection.close()
    # Its rows show as they did, the generation columns empty.
    rows = list(csv.DictReader(io.StringIO(call_tool("history.py", "show", "--db", path, "--format=csv",
                                                     check_rc=0).stdout)))
    assert len(rows) == 4 and all(row["median_ms"] for row in rows)
    assert all(row[column] == "" for row in rows for column in COLUMNS)
    # Its records ingested again: nothing added, the generate runs' figures filled in.
    records = [generation_record(0), generation_record(0, backend="inductor", level=0.5), forward_record(0),
               generation_record(1)]
    again = call_tool("history.py", "ingest", write(tmp_path / "v3.jsonl", records), "--db", path, check_rc=0)
    assert "0 record(s) added, 4 already in the database (3 given their generation figures)" in again.stdout
    rows = list(csv.DictReader(io.StringIO(call_tool("history.py", "show", "--db", path, "--format=csv",
                                                     check_rc=0).stdout)))
    qwen = [row for row in rows if row["model"] == QWEN and row["backend"].startswith("eager")]
    assert [row["commit"] for row in qwen] == ["c00", "c01"]
    assert float(qwen[0]["decode_tokens_per_s"]) == pytest.approx(expected(records[0])["decode_tokens_per_s"])
    assert all(row[column] == "" for row in rows if row["model"] == "mlp" for column in COLUMNS)
    once_more = call_tool("history.py", "ingest", tmp_path / "v3.jsonl", "--db", path, check_rc=0)
    assert "0 record(s) added, 4 already in the database, 0 skipped" in once_more.stdout


def test_a_newer_schema_is_refused_in_one_line(tmp_path):
    path = tmp_path / "new.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA user_version = 99")
    connection.close()
    done = call_tool("history.py", "detect", "--db", path)
    assert done.returncode == 2 and "newer than this tool's" in done.stderr and done.stderr.count("\n") == 1


def test_a_new_database_has_the_current_schema(tmp_path):
    connection = database.connect(str(tmp_path / "fresh.sqlite"))
    assert connection.execute("PRAGMA user_version").fetchone()[0] == database.SCHEMA_VERSION
    assert connection.execute("SELECT value FROM meta").fetchone()[0] == str(database.SCHEMA_VERSION)
    connection.close()
