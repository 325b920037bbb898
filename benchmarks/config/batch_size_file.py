"""Batch-size files in the format of PyTorch's dynamo harness (its --batch-size-file, what its --find-batch-sizes
writes): one `name,batch` row per model, blank lines ignored, a model's last row winning. `-1` is the harness's
"unset" (its reader refuses such a model); --find-batch-sizes writes it for a model that failed even at batch 1.
experiment_runner.py writes them (--find-batch-sizes, runner/batch_size_search.py) and reads them (--batch-size-file,
runner/plan.py). No torch (docs/runner.md, "Finding batch sizes").
"""

from __future__ import annotations

import re
from typing import Optional

from benchmarks.plumbing import disk_writes, value_limits

NONE_RAN = -1  # the harness's unset batch size: no batch size ran (a sweep skips the model, saying so)
# A side input goes through the record's door (results/record_check.py): a batch past this is no batch any record of
# it could be read back with (1.2e29 written out was taken, written, refused by every reader, and run on every
# resume), and a name past the record check's 4,096 characters no record takes.
MAX_BATCH = 2 ** 31 - 1
MAX_NAME = value_limits.MAX_TEXT
_BATCH = re.compile(r"-?[0-9]{1,12}")


class BatchSizeFileError(ValueError):
    """A file that is not a batch-size file; the message is one line naming the file and line."""


def parse(text: str, path: str = "<text>") -> dict:
    """`name,batch` rows -> {name: batch}, as the harness reads them (blank lines skipped; the last row of a name
    wins); BatchSizeFileError for a row that is not one."""
    sizes = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, comma, batch = line.rpartition(",")
        name, batch = name.strip(), batch.strip()
        value = int(batch) if _BATCH.fullmatch(batch) else None  # ASCII digits: int() takes "٣" and 4,000 digits
        if (not comma or not name or len(name) > MAX_NAME or value is None or (value < 1 and value != NONE_RAN)
                or value > MAX_BATCH):
            raise BatchSizeFileError(f"{path}:{number}: expected a `name,batch` row (a name of at most {MAX_NAME} "
                                     f"characters, a batch from 1 to {MAX_BATCH}, or {NONE_RAN}: none ran), not "
                                     f"{line.strip()[:80]!r}")
        sizes[name] = value
    return sizes


def read(path: str) -> dict:
    """The file's {name: batch}; BatchSizeFileError (one line) when it can't be read or is not one."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchSizeFileError(f"{path}: cannot read it as a batch-size file ({exc.__class__.__name__}: "
                                 f"{getattr(exc, 'strerror', None) or exc})") from None
    return parse(text, path)


def format_rows(sizes: dict) -> str:
    """{name: batch} as the file's text, in the mapping's order."""
    for name in sizes:
        if "," in name or "\n" in name or not name.strip():
            raise BatchSizeFileError(f"model name {name!r} cannot be a row of a batch-size file (`name,batch`)")
    return "".join(f"{name},{batch}\n" for name, batch in sizes.items())


def write(path: str, sizes: dict, earlier: Optional[dict] = None) -> None:
    """Write `sizes` atomically, after the rows of `earlier` (another search's, into the same file) that it does not
    replace: as the harness appends each model's row to its output file."""
    merged = {name: batch for name, batch in (earlier or {}).items() if name not in sizes}
    merged.update(sizes)
    disk_writes.write_text(path, format_rows(merged))
