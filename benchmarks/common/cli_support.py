"""What the command lines share: the one UsageError, one-line argparse errors, number types, the flags a
child is given, logging set-up."""

from __future__ import annotations

import argparse
import logging


class UsageError(Exception):
    """Bad input (flags, files): reported as one line on stderr, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line and exit 2, not the whole usage block
        self.exit(2, f"{self.prog}: error: {message}\n")


def _number(text: str, kind):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {'an integer' if kind is int else 'a number'}: {text!r}") from None


def positive_int(text: str) -> int:
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or more, not {text}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text}")
    return value


def fraction(text: str) -> float:
    """0.02 or 2%: a share at least 0 and below 1."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1 (or 100%), not {text}")
    return value


def forwarded_args(parser: argparse.ArgumentParser, options: argparse.Namespace, keep_out) -> list:
    """The flags set in `options` as `--flag=value` strings, but for the destinations in `keep_out`: what a
    child process must be given to see the same options (defaults and unset flags are left out)."""
    args = []
    for action in parser._actions:
        dest = action.dest
        if dest in keep_out or not action.option_strings or not hasattr(options, dest):
            continue
        value, flag = getattr(options, dest), action.option_strings[-1]
        if value == action.default or value is None:
            continue
        if isinstance(action, argparse._StoreTrueAction):
            args.append(flag)
        elif isinstance(action, argparse._AppendAction):
            args.extend(f"{flag}={item}" for item in value)
        else:
            args.append(f"{flag}={value}")
    return args


def setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S",
                        force=True)
