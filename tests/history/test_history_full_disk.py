"""The history database on a full disk (docs/history.md): SQLite's "database or disk is full" is one line naming
the file and exit 2, the database intact (the refused transaction rolled back, earlier ones kept), and the same
ingest completes once there is space. On a real 300 KiB file system the test mounts (skipped where mounting
isn't permitted), and everywhere through SQLite's own page limit (max_page_count), which fails as a full disk."""

import sqlite3

import pytest

from helpers import fill_disk
from test_history import history, stepped, write

from benchmarks.history import database, ingest


def measurement_count(db) -> int:
    connection = sqlite3.connect(db)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return connection.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    finally:
        connection.close()


def test_ingest_on_a_real_full_disk_is_one_line_and_leaves_the_database_intact(small_disk, tmp_path):
    db = small_disk / "history.sqlite"
    first = write(tmp_path / "first.jsonl", stepped(models=("alpha",), runs=2))
    more = write(tmp_path / "more.jsonl", stepped(models=("mlp", "cnn", "vit"), runs=40, step_at=20))
    history("ingest", first, "--db", db, check_rc=0)
    kept = measurement_count(db)
    filler = fill_disk(small_disk)
    refused = history("ingest", more, "--db", db)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and str(db) in refused.stderr and "full" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert measurement_count(db) == kept
    filler.unlink()
    history("ingest", more, "--db", db, check_rc=0)
    assert measurement_count(db) == kept + 120


def test_a_full_database_is_database_full_naming_it_and_rolls_back(tmp_path):
    db = tmp_path / "history.sqlite"
    connection = database.connect(str(db))
    ingest.ingest(connection, [str(write(tmp_path / "first.jsonl", stepped(models=("alpha",), runs=2)))])
    kept = connection.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages}")  # SQLite now answers SQLITE_FULL, as a full disk does
    more = write(tmp_path / "more.jsonl", stepped(models=("mlp", "cnn"), runs=30))
    with pytest.raises(database.DatabaseFull) as caught:
        with database.writing(str(db)):
            ingest.ingest(connection, [str(more)])
    assert str(db) in str(caught.value) and "database or disk is full" in str(caught.value)
    connection.close()
    assert measurement_count(db) == kept
