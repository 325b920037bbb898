"""--shard I/N: one of N stable parts of a sweep's expanded configs (every model x experiment config, not only the
models), for a CI matrix or a Slurm array: a config's part is its fingerprint's hash modulo N, so it depends on the
config alone (not on which other configs the sweep holds, nor on the machine), every config is in exactly one part,
and each part resumes on its own (its own results file, `results.shard-I-of-N.jsonl` by default). docs/parallel.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import re

_SPEC = re.compile(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*")


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int  # 1..count
    count: int

    def holds(self, fingerprint: str) -> bool:
        """Whether the config of this fingerprint (its first round's: every round of a config is in one part) is
        in this part."""
        digest = hashlib.sha256(fingerprint.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def basename(self, default: str) -> str:
        """The part's results file name: `results.shard-2-of-4.jsonl` for `results.jsonl`."""
        stem, dot, suffix = default.rpartition(".")
        return f"{stem}.shard-{self.index}-of-{self.count}.{suffix}" if dot else f"{default}.shard-{self.index}-of-" \
            f"{self.count}"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse(text: str) -> Shard:
    """'2/4' -> Shard(2, 4): the part (1..N) of N; anything else is an argparse error (one line, exit 2)."""
    match = _SPEC.fullmatch(text or "")
    if not match:
        raise argparse.ArgumentTypeError(f"expected I/N, the part I (1..N) of N, e.g. 2/4; not {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"{text}: the part must be 1..{max(count, 1)} (parts count from 1)")
    return Shard(index, count)
