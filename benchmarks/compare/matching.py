"""compare.py's inputs: read each side's records, pick its runs by timestamp, pair the configs.

Two records are the same config when their model (suite, name, parameters) and experiment config agree,
the accelerator model, environment, timestamps and round aside: Measurement.config_key
(benchmarks/results/measurement.py).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Optional

from benchmarks.plumbing.cli_support import UsageError
from benchmarks.results import oss_v3_records, records
from benchmarks.results.measurement import AXIS_DEFAULTS, NOT_CONFIG, Measurement

log = logging.getLogger("benchmarks.compare")

# Two timestamps closer than this are one run (JSON round trips of a float).
_SAME_TIME = 1e-3


def config_key(record: dict) -> Optional[str]:
    """Measurement.config_key, and whether Inductor's CUDA graphs ran: a graphs run is never paired with a run
    without them (the dashboard profile's listed models, or a child that could not capture them)."""
    m = Measurement(record)
    key = m.config_key
    return key + "|cudagraphs" if key is not None and m.cudagraphs else key


def input_files(paths: list, side: str) -> list:
    """The results files that `paths` names (UsageError, naming the side, when one names none)."""
    try:
        return records.expand_input_paths(paths, recursive=True)
    except records.InputError as exc:
        raise UsageError(f"{side}: {exc}") from None


def read_side(paths: list, side: str) -> list:
    """Every record of the files that `paths` names; bad lines reported and skipped."""
    files = input_files(paths, side)
    try:
        return records.read_results_files(files, side, reader=oss_v3_records.iter_records)  # v3 files too
    except records.InputError as exc:
        raise UsageError(str(exc)) from None


def _timestamp(record: dict) -> Optional[float]:
    return Measurement(record).timestamp


def pick_run(found: list, side: str, timestamp: Optional[float], latest: bool) -> list:
    """The records of the run a side asks for: one timestamp, the newest, or (neither) all of them."""
    if timestamp is None and not latest:
        return found
    stamps = sorted({t for t in map(_timestamp, found) if t is not None})
    if not stamps:
        raise UsageError(f"{side}: no record has a timestamp to choose a run by")
    wanted = stamps[-1] if timestamp is None else timestamp
    kept = [r for r in found if _timestamp(r) is not None and abs(_timestamp(r) - wanted) < _SAME_TIME]
    if not kept:
        listed = ", ".join(f"{t:.3f}" for t in stamps[-5:])
        raise UsageError(f"--{side}-timestamp={timestamp}: no such run (the newest: {listed})")
    return kept


@dataclasses.dataclass(frozen=True)
class AxisPair:
    """--pair AXIS=CONTROL:TREATMENT: one sweep's records of two values of one experiment axis, as the two sides."""

    axis: str
    control: str
    treatment: str

    def value_of(self, record: dict) -> str:
        """The record's value of the axis as text; a record without the key ran the axis' default."""
        value = record["experiment"].get(self.axis, AXIS_DEFAULTS.get(self.axis))
        return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)

    def split(self, found: list) -> tuple:
        """(control records, treatment records), each with the axis set to `CONTROL:TREATMENT` so that the two
        records of one config pair (and the row's label says what was paired)."""
        sides = {self.control: [], self.treatment: []}
        for record in found:
            if isinstance(record.get("experiment"), dict) and self.value_of(record) in sides:
                sides[self.value_of(record)].append(
                    dict(record, experiment=dict(record["experiment"], **{self.axis: f"{self.control}:{self.treatment}"})))
        return sides[self.control], sides[self.treatment]


def parse_axis_pair(text: str) -> AxisPair:
    """`AXIS=CONTROL:TREATMENT` -> AxisPair; ValueError with one line otherwise."""
    axis, sep, values = text.partition("=")
    control, colon, treatment = values.partition(":")
    if not (sep and colon and axis.strip() and control.strip() and treatment.strip()):
        raise ValueError(f"--pair wants AXIS=CONTROL:TREATMENT (e.g. compile_mode=default:max-autotune), not {text!r}")
    control, treatment = _switch_word(axis.strip(), control.strip()), _switch_word(axis.strip(), treatment.strip())
    if control == treatment:
        raise ValueError(f"--pair {text}: control and treatment are the same value")
    return AxisPair(axis.strip(), control, treatment)


def _switch_word(axis: str, value: str) -> str:
    """A switch axis's value (on, off, True, ...) as value_of writes a record's: true or false."""
    from benchmarks.config.axes import BY_KEY
    from benchmarks.config.axis import SWITCH, parse_switch

    if axis in BY_KEY and BY_KEY[axis].kind == SWITCH:
        try:
            return str(parse_switch(value)).lower()
        except ValueError as exc:
            raise ValueError(f"--pair {axis}: {exc}") from None
    return value


@dataclasses.dataclass
class Pair:
    """One config and its records on each side (either list may be empty)."""

    key: str
    model: dict
    experiment: dict
    control: list
    treatment: list


def pair(control: list, treatment: list) -> list:
    """Pairs in the control's order, then the configs the treatment alone has."""
    pairs, unplaced = {}, 0
    for side, found in (("control", control), ("treatment", treatment)):
        for record in found:
            key = config_key(record)
            if key is None:
                unplaced += 1
                continue
            entry = pairs.get(key)
            if entry is None:
                experiment = {k: v for k, v in record["experiment"].items()
                              if k not in NOT_CONFIG + ("accelerator_model",)}
                if key.endswith("|cudagraphs"):  # its label says so (report_formats.config_label)
                    experiment["cudagraphs"] = True
                entry = pairs[key] = Pair(key, record["model"], experiment, [], [])
            getattr(entry, side).append(record)
    if unplaced:
        log.warning("skipped %d record(s) without a model and an experiment config", unplaced)
    return list(pairs.values())
