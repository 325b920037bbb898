"""The history database: one SQLite file (the standard library's; no server, no new dependency).

SQLite, not DuckDB: a history is small (runs x configs, a few numbers and samples each), written a file at
a time and read a series at a time, which SQLite does in milliseconds; it ships with Python, so `history`
needs no new pinned package, and its UNIQUE constraints make ingestion idempotent in one statement.

Tables: runs (a run is its timestamp, host and the code's commit), configs (a config's key and labels),
measurements (one per record: its run, config, status, samples and figures; the record's digest is unique,
so a record is stored once however often its file is ingested). See docs/history.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3

from benchmarks.common.cli_support import UsageError

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, timestamp REAL NOT NULL, host TEXT NOT NULL, commit_sha TEXT NOT NULL,
    UNIQUE (timestamp, host, commit_sha));
CREATE TABLE IF NOT EXISTS configs (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, suite TEXT, model TEXT, backend TEXT, test TEXT,
    precision TEXT, accelerator TEXT, accelerator_model TEXT, batch_size TEXT);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY, digest TEXT NOT NULL UNIQUE,
    run_id INTEGER NOT NULL REFERENCES runs(id), config_id INTEGER NOT NULL REFERENCES configs(id),
    round INTEGER NOT NULL, status TEXT NOT NULL, verification TEXT, samples TEXT, compile_s REAL,
    peak_rss REAL, graph_breaks INTEGER, source TEXT, accuracy TEXT);
CREATE INDEX IF NOT EXISTS measurements_by_config ON measurements (config_id, run_id);
"""

LABEL_COLUMNS = ("suite", "model", "backend", "test", "precision", "accelerator", "accelerator_model", "batch_size")


class DatabaseError(UsageError):
    """A database file that can't be opened or isn't a history database: bad input, one line for the user."""


class DatabaseFull(DatabaseError):
    """SQLite could not write the database (a full disk, a quota, an I/O error): it rolled the transaction back, so
    the file holds what it held before; one line naming it, exit 2 (docs/history.md)."""


def disk_full(exc: sqlite3.Error) -> bool:
    """SQLite's "database or disk is full" (SQLITE_FULL) or an I/O error (SQLITE_IOERR and its extended codes)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR)
    return "database or disk is full" in str(exc) or "disk I/O error" in str(exc)


@contextlib.contextmanager
def writing(path: str):
    """Writes to the database at `path`: a refusal of the disk is DatabaseFull naming it."""
    try:
        yield
    except sqlite3.Error as exc:
        if not disk_full(exc):
            raise
        raise DatabaseFull(f"cannot write {path}: {exc}; the database is as it was before this transaction (what "
                           "earlier ones added is kept): free some space and run the same command again") from None


def connect(path: str, create: bool = True) -> sqlite3.Connection:
    if not create and not os.path.exists(path):
        raise DatabaseError(f"no history database at {path} (make one with `history ingest RESULTS --db {path}`)")
    if create:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    try:
        with writing(path):
            connection = sqlite3.connect(path)
            _open(connection, path)
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"{path} is not a history database ({exc})") from None
    return connection


def _open(connection: sqlite3.Connection, path: str) -> None:
    """The schema in place (created in a new file), and its version checked."""
    connection.executescript(SCHEMA)
    found = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if found is None:
        connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        connection.commit()
    elif found[0] != str(SCHEMA_VERSION):
        raise DatabaseError(f"{path}: history schema {found[0]}, this tool reads {SCHEMA_VERSION}")
    add_accuracy_column(connection)


def add_accuracy_column(connection: sqlite3.Connection) -> None:
    """A database made before measurements had `accuracy` (the record's verdict) gets the column, empty: its rows'
    verdict is derived from their status and verification code when read (series._accuracy). An addition, so the
    schema version stays."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(measurements)")}
    if "accuracy" not in columns:
        connection.execute("ALTER TABLE measurements ADD COLUMN accuracy TEXT")
        connection.commit()


def run_id(connection: sqlite3.Connection, timestamp: float, host: str, commit: str) -> int:
    connection.execute("INSERT OR IGNORE INTO runs (timestamp, host, commit_sha) VALUES (?, ?, ?)",
                       (timestamp, host, commit))
    return connection.execute("SELECT id FROM runs WHERE timestamp = ? AND host = ? AND commit_sha = ?",
                              (timestamp, host, commit)).fetchone()[0]


def stored_run(connection: sqlite3.Connection, digest: str):
    """(timestamp, host, commit) of the run that holds the record of this digest, or None when it isn't stored."""
    return connection.execute("SELECT r.timestamp, r.host, r.commit_sha FROM measurements m JOIN runs r "
                              "ON r.id = m.run_id WHERE m.digest = ?", (digest,)).fetchone()


def config_id(connection: sqlite3.Connection, key: str, labels) -> int:
    values = [getattr(labels, name) for name in LABEL_COLUMNS]
    connection.execute(f"INSERT OR IGNORE INTO configs (key, {', '.join(LABEL_COLUMNS)}) VALUES "
                       f"(?{', ?' * len(LABEL_COLUMNS)})", [key, *values])
    return connection.execute("SELECT id FROM configs WHERE key = ?", (key,)).fetchone()[0]


def add_measurement(connection: sqlite3.Connection, view, source: str) -> bool:
    """Store one record's view; False when the database already holds that record."""
    run = run_id(connection, view.timestamp, view.host, view.commit)
    config = config_id(connection, view.config_key, view.labels)
    cursor = connection.execute(
        "INSERT OR IGNORE INTO measurements (digest, run_id, config_id, round, status, verification, accuracy, "
        "samples, compile_s, peak_rss, graph_breaks, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (view.digest, run, config, view.round, view.status, view.verification, view.accuracy,
         None if view.samples is None else json.dumps(view.samples), view.compile_s, view.peak_rss,
         view.graph_breaks, source))
    return cursor.rowcount == 1


def configs(connection: sqlite3.Connection) -> list:
    """(id, key, labels dict) of every config."""
    rows = connection.execute(f"SELECT id, key, {', '.join(LABEL_COLUMNS)} FROM configs ORDER BY id").fetchall()
    return [(row[0], row[1], dict(zip(LABEL_COLUMNS, row[2:]))) for row in rows]


def measurements(connection: sqlite3.Connection, config: int) -> list:
    """A config's measurements with their runs, oldest run first: dicts of the columns."""
    cursor = connection.execute(
        "SELECT r.id, r.timestamp, r.host, r.commit_sha, m.round, m.status, m.verification, m.accuracy, m.samples, "
        "m.compile_s, m.peak_rss, m.graph_breaks FROM measurements m JOIN runs r ON r.id = m.run_id "
        "WHERE m.config_id = ? ORDER BY r.timestamp, r.id, m.round", (config,))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def counts(connection: sqlite3.Connection) -> dict:
    return {table: connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("runs", "configs", "measurements")}
