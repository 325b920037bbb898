"""How OSS benchmark database records are laid out in a file: a JSON list (`.json`), JSON lines (`.jsonl`), or gzip'd
JSON lines (`.jsonl.gz`), the forms pytorch/test-infra's upload action takes (read back by results/oss_v3_records.py). The file's suffix picks the layout
unless --oss-layout names one; every other name (stdout included) gets a JSON list."""

from __future__ import annotations

import gzip
import json
from typing import Optional

LAYOUTS = ("json", "jsonl", "jsonl.gz")


def layout_of(path: Optional[str], asked: Optional[str] = None) -> str:
    """The layout --oss-layout asks for, else the one the file's name says (JSON list by default)."""
    if asked:
        return asked
    name = (path or "").lower()
    if name.endswith(".gz"):
        return "jsonl.gz"
    return "jsonl" if name.endswith(".jsonl") else "json"


def encode(rows: list, layout: str):
    """The file's content: text, or bytes for gzip (written with no name or time in its header, so the same rows
    give the same bytes)."""
    if layout == "json":
        return json.dumps(rows, indent=1, allow_nan=False) + "\n"
    lines = "".join(json.dumps(row, allow_nan=False, separators=(",", ":")) + "\n" for row in rows)
    if layout == "jsonl":
        return lines
    return gzip.compress(lines.encode("utf-8"), mtime=0)

