"""The text of the experiment key `inductor_config` (--inductor-config KEY=VALUE, repeatable): a setting parsed and
held to the record's limits, its value as typed, the key's canonical text and the settings it holds. The core's as
much as compile_options' (benchmarks/features/compile_options/): the accuracy rule reads freezing from it, the CPU
and CUDA profiles their settings."""

from __future__ import annotations

import json
from typing import Optional

from benchmarks.plumbing import value_limits


def parse_setting(text: str) -> tuple:
    """`KEY=VALUE` -> (key, value as JSON-ish text); ValueError with one line otherwise."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key or not value:
        raise ValueError(f"--inductor-config wants KEY=VALUE, not {text[:80]!r}")
    found = value_limits.value_problem(key) or value_limits.value_problem(python_value(value))  # the record's limits
    if found:
        raise ValueError(f"--inductor-config {key[:80]}: {found}")
    return key, value


def python_value(text: str):
    """An Inductor setting's value as typed on the command line: True/False, a number, else the string."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # nested past the parser's reach: text (a long one, refused by its length)
        return text


def config_text(settings) -> Optional[str]:
    """The experiment key's canonical text: `key=value` pairs sorted by key, comma-joined (None for none).
    A later setting of a key wins."""
    merged = dict(settings)
    return ",".join(f"{k}={merged[k]}" for k in sorted(merged)) or None


def settings_of(text: Optional[str]) -> dict:
    """The experiment key's text -> {key: Python value}."""
    if not text:
        return {}
    return dict((k, python_value(v)) for k, v in (parse_setting(part) for part in text.split(",")))
