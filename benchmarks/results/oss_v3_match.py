"""Where the configs of rows exported from the HUD (results/oss_v3_records.py) go: beside our configs that agree on
model, backend, mode, dtype and device (their match key), for compare.py's sides (compare/v3_sides.py); history.py
matches its database's configs by their labels (history/v3_runs.py)."""

from __future__ import annotations

import copy
from typing import Optional

from benchmarks.results.measurement import Measurement
from benchmarks.results.oss_v3_records import HUD_SOURCE, MODES, device_word, dtype_word


def match_key(record: dict) -> Optional[tuple]:
    """(model, backend, mode, dtype, device) of one of our records, as a v3 row names them; None for a record
    that names no model."""
    m = Measurement(record)
    if not m.placeable or not m.model_name:
        return None
    environment = record.get("environment") if isinstance(record.get("environment"), dict) else {}
    if environment.get("source") == HUD_SOURCE and isinstance(environment.get("match_key"), list):
        return tuple(environment["match_key"])
    device = device_word(m.accelerator, str(environment.get("torch") or ""), str(environment.get("platform") or ""))
    mode = {v: k for k, v in MODES.items()}.get(m.test or "", str(m.test))
    return (m.model_name, m.base_backend, mode, dtype_word(m.experiment), device)


def conform(records: list, ours: list) -> tuple:
    """HUD records placed beside `ours` (another side's records): each takes the model and experiment config of every
    distinct config of ours with its match_key (a copy each), so that the tools pair them as one config. Returns
    (the records, placed; the match keys of the HUD records that matched nothing of ours)."""
    configs: dict = {}
    for record in ours:
        key = match_key(record)
        if key is not None and Measurement(record).config_key is not None:
            configs.setdefault(key, {}).setdefault(Measurement(record).config_key, record)
    out, unmatched = [], []
    for record in records:
        environment = record.get("environment") if isinstance(record.get("environment"), dict) else {}
        if environment.get("source") != HUD_SOURCE:
            out.append(record)
            continue
        key = match_key(record)
        if key not in configs:
            unmatched.append(key)
            out.append(record)
            continue
        for mine in configs[key].values():
            placed = copy.deepcopy(record)
            placed["model"], placed["experiment"] = copy.deepcopy(mine["model"]), copy.deepcopy(mine["experiment"])
            placed["experiment"]["accelerator_model"] = record["experiment"].get("accelerator_model")
            if "cudagraphs" in mine:
                placed["cudagraphs"] = mine["cudagraphs"]
            out.append(placed)
    return out, unmatched


def describe(keys: list) -> str:
    """The unmatched match keys, for one line: 'resnet50 inductor inference bfloat16 cuda, ...'."""
    shown = sorted({" ".join(str(part) for part in key) for key in keys})
    more = f" and {len(shown) - 8} more" if len(shown) > 8 else ""
    return ", ".join(shown[:8]) + more
