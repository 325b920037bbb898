"""Models a library can build beyond a suite's default list (timm's architectures, transformers' model classes),
named explicitly with -k NAME: the library's names are asked of a child interpreter (the parent never imports
torch), and a name it does not know is refused with its close matches (docs/runner.md, "Any model by name")."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from benchmarks.plumbing.cli_support import UsageError, close_matches

# A -k pattern that is a plain name (optionally anchored): letters, digits, _ . - only; or a rerun's exact name
# (config/rerun_command.exact_filter: ^(?-i:NAME)$, its dots escaped).
PLAIN_NAME = re.compile(r"\^?([A-Za-z0-9_.\-]+)\$?")
EXACT_NAME = re.compile(r"\^\(\?-i:((?:[A-Za-z0-9_\-]|\\\.)+)\)\$")
LIST_TIMEOUT = 300.0


def plain_name(pattern: str):
    """The name a -k pattern spells out, or None for a real regex."""
    match = PLAIN_NAME.fullmatch(pattern)
    if match:
        return match.group(1)
    match = EXACT_NAME.fullmatch(pattern)
    return match.group(1).replace("\\.", ".") if match else None


def names_from_child(code: str, what: str) -> list:
    """The JSON list that `code` prints, run by this interpreter in a child process; UsageError if it can't."""
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=LIST_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise UsageError(f"listing {what} took longer than {LIST_TIMEOUT:.0f} s")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"cannot list {what}: {last}")
    try:
        return list(json.loads(done.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        raise UsageError(f"cannot list {what}: unexpected output {done.stdout[-200:]!r}")


def unknown_name(name: str, known: list, what: str) -> UsageError:
    """The one-line refusal of a name `known` does not hold, naming the closest ones."""
    close = close_matches(name, known)
    hint = f"close matches: {', '.join(close)}" if close else "no close match"
    return UsageError(f"{what} has no model {name!r}; {hint}")
