"""Environment variables set for a while and put back: a value of None means unset, which os.environ can't hold."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, Mapping, Optional


def apply(values: Mapping[str, Optional[str]]) -> None:
    """Each variable set to its value, or unset where the value is None."""
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextlib.contextmanager
def changed(values: Mapping[str, Optional[str]]) -> Iterator[None]:
    """`values` applied while the block runs, then every one of those variables as it was (unset if it was),
    whatever the block did to them meanwhile (Inductor sets its cache variable when it finds none)."""
    saved = {name: os.environ.get(name) for name in values}
    apply(values)
    try:
        yield
    finally:
        apply(saved)
