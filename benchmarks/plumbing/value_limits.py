"""The limits every value from outside is held to, records and side inputs alike (docs/architecture.md, "The
record"): results/record_check.py checks a record's keys with them, and `checked_json` holds a config given as JSON
on a command line (--model-config, --experiment-config, --model-params; --inductor-config's values through
`value_problem`) to the same, so no input takes a value no record could keep. Standard library only."""

from __future__ import annotations

import json
import math
from typing import Optional

# Numbers beyond this are no measurement, count or size (2**63: a 64-bit counter's end): past it, sums of a few
# samples overflow, SQLite keeps no integer and orjson writes none.
MAX_MAGNITUDE = 2.0 ** 63
# Containers nested deeper than this are refused (a record's deepest, dynamo's per-phase counters in metrics, is
# 4): deeper is someone's attempt at the recursion limit.
MAX_DEPTH = 16
# Text longer than this is no name, flag or message of ours (a model name is a file's or a class's; an error message
# is cut at 500): a 200,000-character name would pass into every table, CSV cell and database row.
MAX_TEXT = 4096
NOT_UNICODE = "text that is not Unicode (a lone surrogate)"


def shown_number(value) -> str:
    """A number in a few characters: an integer too large for a float (or for str) by its size."""
    if isinstance(value, int) and abs(value) > 10 ** 300:
        return f"an integer of {value.bit_length()} bits"
    return f"{value:.6g}" if isinstance(value, float) or abs(value) > 10 ** 6 else str(value)


def number_problem(value, nan_ok: bool = False) -> Optional[str]:
    """Why `value` (a number) is no usable number: infinite, NaN (unless `nan_ok`: a sample not measured) or
    beyond MAX_MAGNITUDE."""
    if isinstance(value, float):
        if math.isnan(value):
            return None if nan_ok else "NaN"
        if math.isinf(value):
            return f"{value} (not finite)"
    if abs(value) > MAX_MAGNITUDE:
        return f"{shown_number(value)} (beyond {MAX_MAGNITUDE:.3g})"
    return None


def not_unicode(value: str) -> bool:
    """Text with a lone surrogate (Python's json reads one; no page, table or database can hold it)."""
    if value.isascii():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def text_problem(value: str) -> Optional[str]:
    if len(value) > MAX_TEXT:
        return f"text of {len(value)} characters (at most {MAX_TEXT})"
    return NOT_UNICODE if not_unicode(value) else None


def value_problem(value, path: str = "", depth: int = 0) -> Optional[str]:
    """Why a JSON value is one no record could keep, as `where: what` (where: `key.inner[index]`, none for the value
    itself): text past MAX_TEXT (keys too), a number not finite or past MAX_MAGNITUDE, containers nested past
    MAX_DEPTH; None when it is fine."""
    found = None
    if isinstance(value, str):
        found = text_problem(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        found = number_problem(value)
    elif isinstance(value, (list, dict)):
        if depth >= MAX_DEPTH:
            found = f"nested deeper than {MAX_DEPTH}"
        else:
            return _container_problem(value, path, depth)
    return f"{path}: {found}" if found and path else found


def _container_problem(value, path: str, depth: int) -> Optional[str]:
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        if isinstance(key, str) and text_problem(key):
            return f"{path or 'a key'}: a key of {text_problem(key)}"
        where = f"{path}.{key}".lstrip(".") if isinstance(value, dict) else f"{path}[{key}]"
        found = value_problem(child, where, depth + 1)
        if found:
            return found
    return None


def checked_json(text: str):
    """The JSON value in `text` (a flag's), held to the limits above; ValueError with one line (to follow the
    flag's name: "is not valid JSON: ...", "holds batch_size: 1e+29 (beyond ...)") for text that is not JSON, nested
    past what the parser takes, or holding a value past them."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"is nested deeper than {MAX_DEPTH}") from None
    except ValueError as exc:
        raise ValueError(f"is not valid JSON: {exc}") from None
    found = value_problem(value)
    if found:
        raise ValueError(f"holds {found}")
    return value
