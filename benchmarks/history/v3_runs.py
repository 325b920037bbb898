"""history.py ingest of PyTorch OSS benchmark ("v3") files: a config of rows exported from the HUD
(results/oss_v3_records.py) is stored beside the database's config that agrees on model, backend, mode, dtype and
device (its suite, batch size and experiment config), as that config's series on the HUD's machine (history keeps
one series per config and machine kind). A HUD config that matches none is stored as its own config and listed on
stderr, never dropped in silence. Our own v3 files name their configs exactly and need no placing."""

from __future__ import annotations

import dataclasses
import json
import sys

from benchmarks.results import oss_v3_records


def from_hud(record: dict) -> bool:
    environment = record.get("environment") if isinstance(record.get("environment"), dict) else {}
    return environment.get("source") == oss_v3_records.HUD_SOURCE


def _base(backend: str) -> str:
    """A backend label without its bracketed axes (inductor[bf16,max-autotune] -> inductor; +recipe stays)."""
    return backend.split("[", 1)[0]


def place(connection, view, unmatched: list):
    """The view of a HUD record moved onto the database's config of the same model, backend, mode, dtype and device
    (the first stored, where several batch sizes match); the view as it is, its match key added to `unmatched`,
    where none does."""
    labels = view.labels
    found = connection.execute(
        "SELECT key, suite, backend, batch_size FROM configs WHERE model = ? AND test = ? AND precision = ? AND "
        "accelerator = ? ORDER BY id", (labels.model, labels.test, labels.precision, labels.accelerator)).fetchall()
    for key, suite, backend, batch_size in found:
        if _base(backend) == _base(labels.backend) and key != view.config_key:
            fingerprint = json.loads(key)[0]
            return dataclasses.replace(view, config_key=json.dumps([fingerprint, labels.accelerator_model]),
                                       labels=dataclasses.replace(labels, suite=suite, backend=backend,
                                                                  batch_size=batch_size))
    unmatched.append(f"{labels.model} {labels.backend} {labels.test} {labels.precision or 'fp32'} "
                     f"{labels.accelerator}")
    return view


def report(path: str, unmatched: list) -> None:
    if unmatched:
        shown = sorted(set(unmatched))
        print(f"history.py: {path}: {len(shown)} v3 config(s) match no config of the database by model, backend, "
              f"mode, dtype and device (stored as their own): {', '.join(shown[:8])}"
              + (f" and {len(shown) - 8} more" if len(shown) > 8 else ""), file=sys.stderr)
