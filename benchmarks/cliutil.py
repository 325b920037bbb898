"""What the three command lines share: one-line argparse errors, number types, logging set-up."""

from __future__ import annotations

import argparse
import logging


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


def setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S",
                        force=True)
