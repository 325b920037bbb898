"""compare.py's sides read from PyTorch OSS benchmark ("v3") files: the configs of rows exported from the HUD
(results/oss_v3_records.py, placed by results/oss_v3_match.py) are placed beside the other side's configs that agree on model, backend, mode, dtype and
device, so that a local run and the dashboard's numbers pair config by config. What matches nothing is listed on
stderr (and stays, as a config of its side alone), never dropped in silence. Our own v3 files name their configs
exactly and need no placing."""

from __future__ import annotations

import sys

from benchmarks.results import oss_v3_match

OTHER = {"control": "treatment", "treatment": "control"}


def place(found: dict, prog: str = "compare.py") -> dict:
    """{side: records} with each side's HUD records placed beside the other side's configs."""
    placed = {}
    for side, records in found.items():
        placed[side], unmatched = oss_v3_match.conform(records, found[OTHER[side]])
        if unmatched:
            print(f"{prog}: {side}: {len(set(unmatched))} v3 config(s) match no config of the {OTHER[side]} by "
                  f"model, backend, mode, dtype and device: {oss_v3_match.describe(unmatched)}", file=sys.stderr)
    return placed
