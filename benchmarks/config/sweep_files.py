"""Sweeps as files: `--save-sweep FILE` writes a sweep's flags as TOML (one key per flag, named as the flag is, each
with its help as a comment), `--sweep FILE` runs it; a flag given on the command line overrides the file's.

A sweep file is untrusted input, like a results file: it is data (TOML, read by tomllib; nothing in it runs), each
key must be one of experiment_runner.py's flags (an unknown one is refused with the close matches, as a mistyped flag
is), each value of the flag's kind, and every value then goes through the flag's own parsing and checks. What would
reach outside the sweep is the command line's to give, never a shared file's: where results are written
(--output-dirname, --output-basename), files and directories read or run (--model-file, --script, --search-dir,
--batch-size-file, --golden ...), a cluster or URI to contact, one config by hand. Bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import textwrap
from typing import Optional

from benchmarks.plumbing.cli_support import UsageError, close_matches, write_file

MAX_BYTES = 1 << 20
# Flags a file never holds: the file's own, the sweep's time (a sweep run again is a new sweep), and what reaches
# outside the sweep (PATHS; and below, every flag that names a file, directory, host or URI).
OWN = ("--sweep", "--save-sweep", "--timestamp")
PATHS = ("--output-dirname", "--output-basename", "--experiment-config", "--model-config")
_PATH_METAVARS = ("DIR", "FILE", "URI", "HOST:PORT", "PATH")
_BARE_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def key_of(flag) -> str:
    return flag.name[2:]


def reaches_out(flag) -> bool:
    """Whether a flag names something outside the sweep (a path, a host): the command line's to give."""
    kind = getattr(flag.type, "__name__", "")
    return flag.name in PATHS or flag.metavar in _PATH_METAVARS or kind in ("file_path", "directory_path")


HELP_WORDS = ("-h", "--help", "--help-all")


def _raw_parser(fresh) -> argparse.ArgumentParser:
    """A new parser (`fresh()`) that records what was given, as given: no defaults, types or choices."""
    raw = fresh()
    for action in raw._actions:
        if action.option_strings:
            action.default, action.type, action.choices = argparse.SUPPRESS, None, None
    return raw


def given(fresh, argv: list) -> dict:
    """{flag dest: the text given (a list for a repeatable flag, True for a switch)} of the flags in `argv`;
    `fresh()` builds the parser."""
    # --help and --help-all are the real parser's to answer: this one, without choices, would print a poorer help
    found, _ = _raw_parser(fresh).parse_known_args([word for word in argv if word not in HELP_WORDS])
    return vars(found)


# ---------------------------------------------------------------- reading


def read(path: str) -> dict:
    """The TOML of a sweep file (UsageError, one line, for a file that is none)."""
    import tomllib

    where = f"--sweep {path}"
    try:
        if not os.path.isfile(path):
            raise UsageError(f"{where}: no such file" if not os.path.exists(path) else f"{where}: not a regular file")
        if os.path.getsize(path) > MAX_BYTES:
            raise UsageError(f"{where}: larger than {MAX_BYTES >> 10} KiB; a sweep file holds flags")
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{where}: not TOML ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None


def to_argv(path: str, table: dict, declared) -> list:
    """The flags a sweep file's table stands for, as command-line words (UsageError for a key or value that is
    not a flag's)."""
    by_key = {key_of(flag): flag for flag in declared}
    words = []
    for key, value in table.items():
        flag = by_key.get(key) or by_key.get(key.replace("_", "-"))
        if flag is None:
            close = close_matches(key, list(by_key))
            hint = f"close matches: {', '.join(close)}" if close else "no close match"
            raise UsageError(f"--sweep {path}: {key!r} is no flag of experiment_runner.py; {hint}")
        if flag.name in OWN or reaches_out(flag):
            raise UsageError(f"--sweep {path}: {key} is the command line's to give (a sweep file names no file, "
                             "directory, host or time)")
        words += _words(path, flag, value)
    return words


def _words(path: str, flag, value) -> list:
    where = f"--sweep {path}: {key_of(flag)}"
    if flag.switch:
        if not isinstance(value, bool):
            raise UsageError(f"{where} is a switch: true or false, not {_shown(value)}")
        return [flag.name] if value else []
    if isinstance(value, bool) and flag.bare is not None:
        return [flag.name] if value else []
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not flag.repeatable:
        raise UsageError(f"{where} takes one value, not a list")
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise UsageError(f"{where}: {_shown(item)} is no value of this flag (text or a number)")
        out.append(f"{flag.name}={item}")
        _check_value(where, flag, str(item))
    return out


def _check_value(where: str, flag, text: str) -> None:
    """The flag's own parsing of a value, so that a bad one names the file and key (the command line's checks
    follow all the same)."""
    if flag.type is not None:
        try:
            text = flag.type(text)
        except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
            raise UsageError(f"{where}: {exc}") from None
    if isinstance(flag.choices, (tuple, list)) and text not in flag.choices:
        close = close_matches(str(text), flag.choices)
        hint = f"close matches: {', '.join(close)}" if close else f"one of {', '.join(map(str, flag.choices))}"
        raise UsageError(f"{where}: {text!r} is not a choice; {hint}")


def _shown(value) -> str:
    return json.dumps(value, default=str)[:60]


def merged_argv(parser, fresh, argv: list) -> list:
    """`argv` with the flags of its --sweep FILE first: a flag given on the command line replaces the file's."""
    on_command_line = given(fresh, argv)
    path = on_command_line.get("sweep")
    if not path:
        return argv
    from_file = to_argv(path, read(path), parser.declared)
    kept = [word for word in from_file if _dest(parser, word) not in on_command_line]
    return kept + list(argv)


def _dest(parser, word: str) -> Optional[str]:
    name = word.split("=", 1)[0]
    for flag in parser.declared:
        if flag.name == name:
            return flag.dest
    return None


# ---------------------------------------------------------------- writing


def text(parser, fresh, argv: list) -> tuple:
    """(the TOML of the sweep `argv` gives (file and command line merged), the flags left out of it)."""
    found = given(fresh, argv)
    lines = ["# A sweep of experiment_runner.py, saved with --save-sweep. Run it again with",
             "#     experiment_runner.py --sweep THIS_FILE [--output-dirname=DIR] [more flags: they override these]",
             "# One key per flag, as the flag is named; true/false for a switch, a list for a repeated flag.", ""]
    left_out = []
    for flag in parser.declared:
        if flag.dest not in found or flag.name in OWN:
            continue
        value = found[flag.dest]
        if reaches_out(flag):
            left_out.append(f"{flag.name}={value}" if value is not True else flag.name)
            continue
        help_line = " ".join(flag.help.split())
        lines += textwrap.wrap(help_line, 110, initial_indent="# ", subsequent_indent="# ") or ["#"]
        lines.append(f"{key_of(flag)} = {_toml(value)}")
        lines.append("")
    if left_out:
        lines.append("# Left out (the command line's to give): " + " ".join(left_out))
    return "\n".join(lines).rstrip("\n") + "\n", left_out


def _toml(value) -> str:
    if value is True:
        return "true"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    value = str(value)
    if _BARE_NUMBER.fullmatch(value):
        return value
    # A TOML basic string: JSON's escapes are TOML's; DEL, which JSON leaves as it is, TOML takes only escaped.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def save(path: str, content: str) -> None:
    """The sweep file, written whole or not at all through the one writer (a link at its name refused; UsageError,
    one line, where it can't be)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"--save-sweep {path}: no such directory {folder}")
    write_file(path, content, "--save-sweep")
