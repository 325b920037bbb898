"""What the command lines share: the one UsageError, one-line argparse errors, number and size types,
logging set-up."""

from __future__ import annotations

import argparse
import logging
import math
import re


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


def finite_non_negative_float(text: str) -> float:
    value = _number(text, float)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not {text}")
    return value


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def memory_size(text: str) -> int:
    """'8G', '512M', '1.5GiB', '1000000' -> bytes (binary multiples)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (try 8G or 512M)")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 1024 ** " kmgt".index(unit or " "))


def setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S",
                        force=True)
