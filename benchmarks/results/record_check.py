"""One validation of a record, at the door of every reader: `problem(record)` is None for a record the tools can
use, else the one-line reason it is unusable (history ingest, the runner's resume, aggregate, compare and the
analyzer skip such a record with that reason; docs/architecture.md, "The record").

A results file is untrusted input (a CI artifact, a teammate's file): a value of the wrong type, a number no
float arithmetic survives (inf, 1e308: its sum overflows) or a timestamp no date can show would otherwise reach
code that trusts the record, and break a report, or a history database for good.

Tolerant of what old and upstream PyTorch/XLA records legitimately hold: a key may be missing or null (each
tool says what it needs beyond this, e.g. aggregate's "no timestamp"); a metric may be null, a bare number, an
object of counters, or hold text or NaN among its samples (an old run's way to say "not measured": each tool
reports such a metric as having no data, the record stays). Unknown keys are never looked at.

The writer's check (`written`, where the parent and a config run by hand write a record) is stricter: every
top-level key and metric declared, every declared key of its type, and a record the readers take; in a user's sweep a
problem is a warning in the record's `warnings` and the log (the record is written all the same), with
BENCHMARKS_STRICT_RECORDS=1 (the tests) it raises RecordSchemaError.

The keys checked, and how, are the record's declared schema (record_schema.py: the keys declared `door`, by
their type): CHECKS, key -> check(value) -> reason or None, is built from it; a check runs only when its key is
present and not null.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Callable, Optional

from benchmarks.config import record_key
from benchmarks.plumbing import value_limits
from benchmarks.results import metric_catalog, record_schema

# The limits (numbers within +-MAX_MAGNITUDE, nesting to MAX_DEPTH, text to MAX_TEXT characters) are those every side
# input is held to as well: plumbing/value_limits.py, one set for all.
MAX_MAGNITUDE, MAX_DEPTH, MAX_TEXT = value_limits.MAX_MAGNITUDE, value_limits.MAX_DEPTH, value_limits.MAX_TEXT
# A timestamp a date can show: 1970-01-01 .. 9999-12-31 UTC (datetime's last year).
FIRST_TIMESTAMP = 0.0
LAST_TIMESTAMP = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc).timestamp()

Check = Callable[[object], Optional[str]]


def _kind(value) -> str:
    """What a JSON value is, in the user's words."""
    if value is None:
        return "null"
    return {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


_number_problem, _shown = value_limits.number_problem, value_limits.shown_number


def _numbers_problem(value, nan_ok: bool = False, depth: int = 0, samples: bool = False) -> Optional[str]:
    """The first unusable number anywhere inside `value` (lists and objects, up to MAX_DEPTH), or too deep;
    `samples`: a text that reads as a number counts as one (the statistics read "1e308" as a sample). A resume
    reads millions of records: an ordinary number costs one comparison here."""
    kind = type(value)
    if kind is list or kind is dict:
        if depth >= MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH}"
        if kind is dict and not "".join(value).isascii() and any(map(_not_unicode, value)):  # keys are labels too
            return NOT_UNICODE
        for child in (value.values() if kind is dict else value):
            child_kind = type(child)
            if (child_kind is float or child_kind is int) and -MAX_MAGNITUDE <= child <= MAX_MAGNITUDE:  # NaN, inf fail
                continue
            if child_kind is str and not samples:
                if not child.isascii() and _not_unicode(child):
                    return NOT_UNICODE
                continue
            if child is None or child_kind is bool:
                continue
            found = _numbers_problem(child, nan_ok, depth + 1, samples)
            if found:
                return found
        return None
    if kind is int or kind is float:
        return _number_problem(value, nan_ok)
    if kind is str and samples:
        try:
            number = float(value)
        except (ValueError, OverflowError):
            return None  # text: each tool's "not a list of numbers"
        found = _number_problem(number, nan_ok)
        return f"{value[:20]!r}, read as {found}" if found else None
    return None


# ---------------------------------------------------------------- one check per kind of value


_not_unicode, NOT_UNICODE = value_limits.not_unicode, value_limits.NOT_UNICODE


def text(value) -> Optional[str]:
    if not isinstance(value, str):
        return f"is {_kind(value)}, not text"
    if len(value) > MAX_TEXT:
        return f"is text of {len(value)} characters (at most {MAX_TEXT})"
    return f"is {NOT_UNICODE}" if _not_unicode(value) else None


def flag(value) -> Optional[str]:
    return None if isinstance(value, bool) else f"is {_kind(value)}, not true/false"


def count(value) -> Optional[str]:
    """A whole number >= 0 (repeat, warm-up runs, a round's index, a batch size)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"is {value:g}, not a whole number" if isinstance(value, float) else f"is {_kind(value)}, not a whole number"
    if value < 0 or value > MAX_MAGNITUDE:
        return f"is {_shown(value)}, not a count"
    return None


def texts(value) -> Optional[str]:
    """A list of text (gpu_names)."""
    if not isinstance(value, list):
        return f"is {_kind(value)}, not a list"
    return next((f"holds {found[3:]}" for item in value if (found := text(item))), None)


def listed(value) -> Optional[str]:
    return None if isinstance(value, list) else f"is {_kind(value)}, not a list"


def number(value) -> Optional[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"is {_kind(value)}, not a number"
    found = _number_problem(value)
    return f"is {found}" if found else None


def timestamp(value) -> Optional[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"is {_kind(value)}, not a number"
    if not FIRST_TIMESTAMP <= value <= LAST_TIMESTAMP:  # NaN too
        return f"is {_shown(value)}, not a time between the years 1970 and 9999"
    return None


def fields(checks: dict, numbers: bool = False) -> Check:
    """An object whose keys in `checks` (present and not null) pass their checks; with `numbers`, every number
    anywhere in it is usable too."""

    def check(value) -> Optional[str]:
        if not isinstance(value, dict):
            return f"is {_kind(value)}, not an object"
        for key, inner in checks.items():
            item = value.get(key)
            if item is not None:
                found = inner(item)
                if found:
                    return f".{key} {found}"
        if numbers:
            found = _numbers_problem(value)
            if found:
                return f"holds {found}"
        return None

    return check


def metrics(value) -> Optional[str]:
    """An object of metric -> samples (upstream's analyzer reads each as a numeric array): the error text is text;
    a NaN sample is one not measured; an infinite or huge one is refused (a mean over it overflows)."""
    if not isinstance(value, dict):
        return f"is {_kind(value)}, not an object"
    error = value.get("error")
    found = text(error) if error is not None else None
    if found:
        return f".error {found}"
    for name, samples in value.items():
        found = _numbers_problem(samples, nan_ok=True, samples=name != "error")
        if found:
            return f".{name} holds {found}"
    return None


def door_check(key) -> Check:
    """The check every reader applies to a declared key (record_schema.py, `door`): its type's, and for an object
    the checks of its own door keys (and, with `numbers`, every number inside it usable)."""
    if key.type == "object":
        return fields({inner.name: door_check(inner) for inner in key.fields if inner.door}, numbers=key.numbers)
    return TYPE_CHECKS[key.type]


TYPE_CHECKS = {"text": text, "flag": flag, "count": count, "number": number, "timestamp": timestamp,
               "texts": texts, "list": listed, "metrics": metrics}

# key -> its check, for a key present and not null: the schema's keys declared `door`.
CHECKS = {key.name: door_check(key) for key in record_schema.SCHEMA if key.door}
# Keys a record must have: without them it names nothing to place (every tool's "no model or experiment").
REQUIRED = ("model", "experiment")


def key_problem(key: str, value) -> Optional[str]:
    """The reason one key's value makes its record unusable (None: fine, or a key no check is about)."""
    check = CHECKS.get(key)
    if check is None or value is None:
        return None
    found = check(value)
    if not found:
        return None
    return f"{key}{found}" if found.startswith(".") else f"{key} {found}"


def problem(record) -> Optional[str]:
    """None for a usable record, else why it is not (one line, to be shown after the file and line)."""
    if not isinstance(record, dict):
        return "not a JSON object"
    if any(not isinstance(record.get(key), dict) for key in REQUIRED):
        return "no model or experiment"
    for key, value in record.items():
        found = key_problem(key, value) if key in CHECKS else None
        if found:
            return found
    return None


# ---------------------------------------------------------------- the writer's check

# 1 in the environment: a record that breaks the schema raises instead of being written with a warning
# (tests/conftest.py sets it for every test and every process the tests start).
STRICT_ENV = "BENCHMARKS_STRICT_RECORDS"


class RecordSchemaError(ValueError):
    """A record its writer was about to write breaks the schema (strict mode)."""


_IS = {
    "text": lambda v: isinstance(v, str),
    "flag": lambda v: isinstance(v, bool),
    "count": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "timestamp": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "texts": lambda v: isinstance(v, list) and all(isinstance(item, str) for item in v),
    "list": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "metrics": lambda v: isinstance(v, dict),
    "any": lambda v: True,
}


def is_type(type_: str, value) -> bool:
    """Whether `value` is of a declared type ("text", "list", "text|object", ...)."""
    return any(_IS[kind](value) for kind in type_.split("|"))


def type_words(type_: str) -> str:
    return " or ".join(record_key.TYPES[kind] for kind in type_.split("|"))


def _typed(key, value, path: str, found: list) -> None:
    if value is None:
        return
    if not is_type(key.type, value):
        wanted = type_words(key.type)
        found.append(f"{path} is {type(value).__name__}, not {wanted}")
        return
    if key.fields and isinstance(value, dict):
        for inner in key.fields:
            _typed(inner, value.get(inner.name), f"{path}.{inner.name}", found)


# Where a key is declared: the place an undeclared one is to be added (results/record.py names the same).
SCHEMA_FILE = "benchmarks/results/record_schema.py"
CATALOG_FILE = "benchmarks/results/metric_catalog.py"
FEATURE_FILE = "benchmarks/features/{}/__init__.py"
UNDECLARED_KEY = (f"a core key in {SCHEMA_FILE}, a feature's in the RECORD_KEYS of "
                  f"{FEATURE_FILE.format('<name>')}")


def undeclared_where(feature: Optional[str]) -> str:
    """Where to declare an undeclared top-level key: the RECORD_KEYS of the feature whose code set it, where that is
    known (results/record.py's Record.undeclared_by), else either place."""
    if not feature:
        return UNDECLARED_KEY
    return f"set by the code of feature {feature}: declare it in the RECORD_KEYS of {FEATURE_FILE.format(feature)}"


def type_problems(key, value, path: str) -> list:
    """Where `value` (at `path`) is not of declared `key`'s type, nested declared keys included."""
    found = []
    _typed(key, value, path, found)
    return found


def writer_problems(record: dict) -> list:
    """What breaks the schema in a record about to be written: a record the readers refuse, an undeclared
    top-level key or metric, a declared key of the wrong type. Empty for a good record."""
    refused = problem(record)
    found = [f"every reader refuses it: {refused}"] if refused else []
    owners = getattr(record, "undeclared_by", None) or {}  # a Record's: which feature's code set an undeclared key
    for name, value in record.items():
        key = record_schema.BY_NAME.get(name)
        if key is None:
            found.append(f"{name} is not declared ({undeclared_where(owners.get(name))})")
        else:
            _typed(key, value, name, found)
    metrics = record.get("metrics")
    for name in metrics if isinstance(metrics, dict) else ():
        declared = metric_catalog.get(name)
        if declared is None or not declared.in_record:
            found.append(f"metrics.{name} is not declared ({CATALOG_FILE})")
    return found


def strict() -> bool:
    return os.environ.get(STRICT_ENV) == "1"


def written(record: dict, log) -> dict:
    """`record` as it will be written: in strict mode a schema problem raises RecordSchemaError; otherwise it is
    logged and kept in the record's `warnings` (a user's sweep never loses a record)."""
    found = writer_problems(record)
    if found:
        line = "record schema: " + "; ".join(found)
        if strict():
            raise RecordSchemaError(line)
        log.warning("%s", line)
        if isinstance(record.setdefault("warnings", []), list):  # a mistyped `warnings` is kept as it is
            record["warnings"].append(line)
    return record
