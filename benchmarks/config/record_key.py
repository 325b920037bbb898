"""The declaration of one key of a record (docs/architecture.md, "The record"): its name, its JSON type, who writes
it and what it means. benchmarks/results/record_schema.py declares every key with it; a feature (config layer)
declares the keys it writes with the same type. Torch-free and import-free: config and every layer above it may use it.

`type` is one of TYPES, or several joined by "|" ("text|object"). `door`: every reader checks the key when it is
present and not null (benchmarks/results/record_check.py), with `numbers` every number anywhere inside it too;
the writer checks every declared key's type (benchmarks/results/record_schema.py `problems`).
"""

from __future__ import annotations

from dataclasses import dataclass

# A JSON value's type, in the words the docs use.
TYPES = {
    "text": "text",
    "flag": "true/false",
    "count": "a whole number >= 0",
    "number": "a number",
    "timestamp": "epoch seconds",
    "texts": "a list of text",
    "list": "a list",
    "object": "an object",
    "metrics": "metric name -> samples",
    "any": "any JSON value",
}

# Who writes a key: the child's core (every config that runs), the parent (the sweep's runner), upstream
# PyTorch/XLA's tools only (read, never written here), or a feature: "feature:<experiment key or flag>".
CORE, PARENT, UPSTREAM = "core", "parent", "upstream"


@dataclass(frozen=True)
class RecordKey:
    name: str
    type: str
    writer: str
    meaning: str
    fields: tuple = ()  # the nested keys readers rely on (RecordKeys), for an object
    door: bool = False  # checked by every reader at the door
    numbers: bool = False  # door: every number inside it must be usable too

    def __post_init__(self):
        unknown = [part for part in self.type.split("|") if part not in TYPES]
        if unknown:
            raise ValueError(f"record key {self.name}: unknown type {'|'.join(unknown)} (the types: "
                             f"{', '.join(TYPES)}; several joined by '|')")
        if not (self.writer in (CORE, PARENT, UPSTREAM) or self.writer.startswith("feature:")):
            raise ValueError(f"record key {self.name}: writer {self.writer!r} is not core, parent, upstream or "
                             f"feature:<name>")

    def types(self) -> tuple:
        return tuple(self.type.split("|"))


def feature(name: str) -> str:
    """The writer of a key a feature writes."""
    return f"feature:{name}"
