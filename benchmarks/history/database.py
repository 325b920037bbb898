"""The history database: one SQLite file (the standard library's; no server, no new dependency).

SQLite, not DuckDB: a history is small (runs x configs, a few numbers and samples each), written a file at
a time and read a series at a time, which SQLite does in milliseconds; it ships with Python, so `history`
needs no new pinned package, and its UNIQUE constraints make ingestion idempotent in one statement.

Tables: runs (a run is its timestamp, host and the code's commit; and the torch it ran), configs (a config's key and
labels), measurements (one per record: its run, config, status, accuracy, samples, their median and figures, and a
generate run's LLM figures; the record's digest is unique, so a record is stored once however often its file is
ingested). See docs/history.md.

The schema's version is PRAGMA user_version (and meta.schema_version, which version 1 wrote); connect()
upgrades an older database in place, in one transaction (MIGRATIONS), so every older file opens.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import statistics

from benchmarks.plumbing.cli_support import UsageError
from benchmarks.results import record_check

SCHEMA_VERSION = 4

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, timestamp REAL NOT NULL, host TEXT NOT NULL, commit_sha TEXT NOT NULL, torch TEXT,
    UNIQUE (timestamp, host, commit_sha));
CREATE TABLE IF NOT EXISTS configs (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, suite TEXT, model TEXT, backend TEXT, test TEXT,
    precision TEXT, accelerator TEXT, accelerator_model TEXT, batch_size TEXT);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY, digest TEXT NOT NULL UNIQUE,
    run_id INTEGER NOT NULL REFERENCES runs(id), config_id INTEGER NOT NULL REFERENCES configs(id),
    round INTEGER NOT NULL, status TEXT NOT NULL, verification TEXT, samples TEXT, compile_s REAL,
    peak_memory REAL, graph_breaks INTEGER, source TEXT, accuracy TEXT, median_s REAL, figures TEXT);
"""
# Indexes (after any migration: they name version 2's columns). By run: the site reads whole runs.
INDEXES = """
CREATE INDEX IF NOT EXISTS measurements_by_config ON measurements (config_id, run_id);
CREATE INDEX IF NOT EXISTS measurements_by_run ON measurements (run_id);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs (timestamp, id);
"""


def _median(samples) -> object:
    values = sorted(json.loads(samples)) if samples else []
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def _to_2(connection: sqlite3.Connection) -> None:
    """1 -> 2: peak_rss held the device's peak memory (else the host's), never only the RSS: peak_memory; a
    record's accuracy (unknown for version 1's rows) and its samples' median (the site reads it without the
    samples)."""
    connection.execute("ALTER TABLE measurements RENAME COLUMN peak_rss TO peak_memory")
    if "accuracy" not in {row[1] for row in connection.execute("PRAGMA table_info(measurements)")}:
        connection.execute("ALTER TABLE measurements ADD COLUMN accuracy TEXT")
    connection.execute("ALTER TABLE measurements ADD COLUMN median_s REAL")
    connection.create_function("samples_median", 1, _median, deterministic=True)
    connection.execute("UPDATE measurements SET median_s = samples_median(samples) WHERE samples IS NOT NULL")


def _to_3(connection: sqlite3.Connection) -> None:
    """2 -> 3: a run's torch (its records' environment.torch; unknown for the runs stored before)."""
    connection.execute("ALTER TABLE runs ADD COLUMN torch TEXT")


def _to_4(connection: sqlite3.Connection) -> None:
    """3 -> 4: a generate run's figures (JSON {metric: median over its timed runs}: time to first token, decode time
    per token, decode tokens per second, ...; null for other records, and unknown for the rows stored before until
    their files are ingested again: fill_figures)."""
    connection.execute("ALTER TABLE measurements ADD COLUMN figures TEXT")


# version -> the step from the one before it.
MIGRATIONS = {2: _to_2, 3: _to_3, 4: _to_4}

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
    """The history database at `path`, upgraded to SCHEMA_VERSION. `create` (ingest): a new or empty file becomes
    one. Anything else that is not a history database (another program's SQLite file, a results file) is a
    DatabaseError and is left byte for byte as it was: nothing is written to it."""
    if os.path.islink(path):  # the default OUTPUT/history.sqlite of a folder from elsewhere may be one: never followed
        raise DatabaseError(f"{path} is a symbolic link: a history database is never opened through one (it could "
                            "lead out of the folder or into another history); name the file itself with --db")
    if not create and not os.path.exists(path):
        raise DatabaseError(f"no history database at {path} (make one with `history ingest RESULTS --db {path}`)")
    if create:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    connection = None
    try:
        with writing(path):
            connection = sqlite3.connect(path)
            foreign = _not_ours(connection, path, create)
            if foreign:
                raise DatabaseError(foreign)
            _upgrade(connection, path)
    except sqlite3.DatabaseError as exc:
        if connection is not None:
            connection.close()
        raise DatabaseError(f"{path} is not a history database ({exc})") from None
    except DatabaseError:
        connection.close()
        raise
    return connection


OWN_TABLES = frozenset({"runs", "configs", "measurements"})


def _not_ours(connection: sqlite3.Connection, path: str, create: bool):
    """Why the file is not a history database this command may use, or None: ours has our tables (and a version);
    a file without any table is new (ingest's to make, never show's); one with other tables is another program's."""
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    version = schema_version(connection)
    if version > SCHEMA_VERSION or (version and OWN_TABLES <= tables):  # a newer one: _upgrade says so
        return None
    if not tables:
        return None if create else (f"{path} holds no history yet (make it with `history ingest RESULTS --db {path}`)")
    return (f"{path} is not a history database (its tables: {', '.join(sorted(tables)[:5])}"
            f"{', ...' if len(tables) > 5 else ''}); nothing was written to it: name another --db")


def schema_version(connection: sqlite3.Connection) -> int:
    """The file's schema version: 0 for a new (empty) file."""
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version:
        return version
    has_meta = connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    found = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() if has_meta else None
    return int(found[0]) if found else 0  # version 1 kept it in meta only


def _upgrade(connection: sqlite3.Connection, path: str) -> None:
    """Create a new file's tables, or bring an older file's up to SCHEMA_VERSION (one transaction)."""
    version = schema_version(connection)
    if version > SCHEMA_VERSION:
        raise DatabaseError(f"{path}: history schema {version} is newer than this tool's ({SCHEMA_VERSION}): "
                            "update ptbench-matrix")
    if version == SCHEMA_VERSION:
        return
    with connection:
        if version == 0:
            connection.executescript(SCHEMA)
        else:
            for step in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[step](connection)
        connection.executescript(INDEXES)
        connection.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def run_id(connection: sqlite3.Connection, timestamp: float, host: str, commit: str, torch: str = "") -> int:
    """The run's id (made on first use); `torch`, its records' torch, is kept from the first record that names one."""
    connection.execute("INSERT OR IGNORE INTO runs (timestamp, host, commit_sha, torch) VALUES (?, ?, ?, ?)",
                       (timestamp, host, commit, torch or None))
    found = connection.execute("SELECT id FROM runs WHERE timestamp = ? AND host = ? AND commit_sha = ?",
                               (timestamp, host, commit)).fetchone()[0]
    if torch:
        connection.execute("UPDATE runs SET torch = ? WHERE id = ? AND torch IS NULL", (torch, found))
    return found


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
    run = run_id(connection, view.timestamp, view.host, view.commit, view.torch)
    config = config_id(connection, view.config_key, view.labels)
    cursor = connection.execute(
        "INSERT OR IGNORE INTO measurements (digest, run_id, config_id, round, status, verification, samples, "
        "compile_s, peak_memory, graph_breaks, source, accuracy, median_s, figures) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?)",
        (view.digest, run, config, view.round, view.status, view.verification,
         None if view.samples is None else json.dumps(view.samples), view.compile_s, view.peak_memory,
         view.graph_breaks, source, view.accuracy, None if not view.samples else statistics.median(view.samples),
         _figures_text(view.figures)))
    return cursor.rowcount == 1


def _figures_text(figures) -> object:
    return None if not figures else json.dumps(figures, sort_keys=True)


def fill_figures(connection: sqlite3.Connection, view) -> bool:
    """A record stored before schema 4 (no figures kept) gains its generation figures when its file is ingested
    again; nothing else of it changes. True when the row was filled in."""
    if not view.figures:
        return False
    cursor = connection.execute("UPDATE measurements SET figures = ? WHERE digest = ? AND figures IS NULL",
                                (_figures_text(view.figures), view.digest))
    return cursor.rowcount == 1


# The runs a page or table can show: a timestamp a date can show (record_check's range). A database filled before
# ingest refused the others (issue #52) may hold such a run: it is left out, not a crash of every later command.
SHOWN_RUNS = (f"r.timestamp BETWEEN {record_check.FIRST_TIMESTAMP!r} AND {record_check.LAST_TIMESTAMP!r}")


def configs(connection: sqlite3.Connection) -> list:
    """(id, key, labels dict) of every config."""
    rows = connection.execute(f"SELECT id, key, {', '.join(LABEL_COLUMNS)} FROM configs ORDER BY id").fetchall()
    return [(row[0], row[1], dict(zip(LABEL_COLUMNS, row[2:]))) for row in rows]


def measurements(connection: sqlite3.Connection, config: int) -> list:
    """A config's measurements with their runs, oldest run first: dicts of the columns."""
    cursor = connection.execute(
        "SELECT r.id, r.timestamp, r.host, r.commit_sha, m.round, m.status, m.verification, m.accuracy, m.samples, "
        "m.compile_s, m.peak_memory, m.graph_breaks, m.figures FROM measurements m JOIN runs r ON r.id = m.run_id "
        f"WHERE m.config_id = ? AND {SHOWN_RUNS} ORDER BY r.timestamp, r.id, m.round", (config,))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def counts(connection: sqlite3.Connection) -> dict:
    return {table: connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("runs", "configs", "measurements")}
