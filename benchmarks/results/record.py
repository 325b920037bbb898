"""The record as it is filled: `Record`, a dict whose every key is looked up when it is set, as pyperf's Run is
validated when built, not when written. The child and the parent build it (records.config_record) and fill it
through `record.set(key, value)` or `record[key] = value` (the same check: no writer escapes it); its `metrics`
is a `Metrics`, filled through `add_samples(metric, values)`, `set(metric, value)` or item assignment.

One table answers every lookup: a top-level key is one of results/record_schema.py's SCHEMA (the core keys and each
feature's RECORD_KEYS, features.declared_record_keys()), a metric one of results/metric_catalog.py's. An undeclared
key, or a value not of its declared type, is refused at the line that sets it, naming where to declare it: a
metric in metric_catalog.py, a feature's key in the RECORD_KEYS of features/<name>/__init__.py (the feature whose
code set it), a core key in record_schema.py.

Strict or not is record_check.strict(): BENCHMARKS_STRICT_RECORDS=1, which tests/conftest.py sets for every test
and every process the tests start, raises RecordSchemaError; a user's sweep logs a warning (once per key and
process), keeps the value, and the writer's check (record_check.written) puts the problem in the record's
`warnings` as it writes it: a user's sweep never loses a record. An undeclared key a feature's code set is
remembered with that feature (`Record.undeclared_by`), which the child hands to the parent beside the record
(child/hand_back.py), so the writer's check names the feature's RECORD_KEYS, not any feature's.

Both are dict subclasses: json, the readers and the tests see a plain dict; the record written is unchanged.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Optional

from benchmarks import features
from benchmarks.results import metric_catalog, record_check, record_schema
from benchmarks.results.record_check import CATALOG_FILE, FEATURE_FILE, SCHEMA_FILE, RecordSchemaError

log = logging.getLogger("benchmarks.results.record")

_HERE = os.path.abspath(__file__)
# top-level key -> the feature (its folder) that declares it in its RECORD_KEYS
_FEATURE_KEYS = {key.name: key.writer.split(":", 1)[1] for key in features.declared_record_keys()}
_warned: set = set()  # (section, key) a user's sweep was warned about in this process


def _writing_feature() -> Optional[str]:
    """The feature whose code is setting a key (its folder in benchmarks.features' path: the checkout's, or one a
    test adds), or None: the first frame outside this module decides."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) == _HERE:
        frame = frame.f_back
    path = os.path.abspath(frame.f_code.co_filename) if frame is not None else ""
    for folder in map(os.path.abspath, features.__path__):
        if path.startswith(folder + os.sep):
            parts = os.path.relpath(path, folder).split(os.sep)
            return parts[0] if len(parts) > 1 else None
    return None


def _declared_in(name: str) -> str:
    feature = _FEATURE_KEYS.get(name)
    return f"the RECORD_KEYS of {FEATURE_FILE.format(feature)}" if feature else SCHEMA_FILE


def key_problem(name, value) -> Optional[str]:
    """Why a record cannot hold `value` at its top-level key `name` (one line naming where to declare or fix the
    key), or None."""
    key = record_schema.BY_NAME.get(name)
    if key is None:
        feature = _writing_feature()
        where = (f"declare it in the RECORD_KEYS of {FEATURE_FILE.format(feature)}" if feature else
                 f"declare it: {record_check.UNDECLARED_KEY}")
        return f"record key {name!r} is not declared: {where}"
    found = record_check.type_problems(key, value, name)
    return f"record key {'; '.join(found)} (declared in {_declared_in(name)})" if found else None


def metric_problem(name, value) -> Optional[str]:
    """Why a record's metrics cannot hold `value` as metric `name`, or None."""
    metric = metric_catalog.get(name)
    if metric is None or not metric.in_record:
        return f"metric {name!r} is not declared: declare it in {CATALOG_FILE}"
    if value is not None and not record_check.is_type(metric.record_type, value):
        return (f"metric {name} is {type(value).__name__}, not {record_check.type_words(metric.record_type)} "
                f"(declared in {CATALOG_FILE})")
    return None


def _refuse(found: str, section: str, name) -> None:
    """Strict: raise; a user's sweep: warn once per key (the writer's check records it in `warnings`)."""
    if record_check.strict():
        raise RecordSchemaError(found)
    if (section, name) not in _warned:
        _warned.add((section, name))
        log.warning("record schema: %s", found)


class _Checked(dict):
    """A dict whose every set goes through `_check` (item assignment, set, update, setdefault, |=)."""

    section = ""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.update(*args, **kwargs)

    def _check(self, name, value):
        raise NotImplementedError

    def __setitem__(self, name, value) -> None:
        super().__setitem__(name, self._check(name, value))

    def set(self, name, value) -> None:
        self[name] = value

    def update(self, *args, **kwargs) -> None:
        for name, value in dict(*args, **kwargs).items():
            self[name] = value

    def setdefault(self, name, default=None):
        if name not in self:
            self[name] = default
        return self[name]

    def __ior__(self, other):
        self.update(other)
        return self


class Metrics(_Checked):
    """A record's `metrics`: metric name -> its samples (one per timed run), each name a catalog metric."""

    section = "metrics"

    def _check(self, name, value):
        found = metric_problem(name, value)
        if found:
            _refuse(found, self.section, name)
        return value

    def add_samples(self, name: str, values) -> None:
        """Append `values` (a list: one per run) to metric `name`'s samples."""
        values = list(values)
        if name in self and isinstance(self[name], list):
            super().__getitem__(name).extend(values)
        else:
            self[name] = values


class Samples(Metrics):
    """Metrics as a timed loop gathers them: `samples[name].append(value)`, a new name looked up (and refused) at
    that line, as collections.defaultdict(list) would start its list."""

    def __missing__(self, name):
        self[name] = []
        return super().__getitem__(name)


class Record(_Checked):
    """One config's record, in the order its keys are set (records.new_record's order first)."""

    @property
    def undeclared_by(self) -> dict:
        """Each undeclared top-level key a feature's code set on this record -> that feature (its folder): the
        writer's check names its RECORD_KEYS (record_check.writer_problems)."""
        return self.__dict__.setdefault("_undeclared_by", {})

    def _check(self, name, value):
        found = key_problem(name, value)
        if found:
            _refuse(found, self.section, name)
            writer = _writing_feature() if name not in record_schema.BY_NAME else None
            if writer:
                self.undeclared_by[name] = writer
        if name == "metrics" and isinstance(value, dict) and not isinstance(value, Metrics):
            value = Metrics(value)
        return value

    def set(self, name: str, value) -> None:
        """Set a top-level key, or `section.key` inside a section (`record.set("environment.ceilings", ...)`):
        a section is open (an undeclared key inside it is kept), a key it declares is held to its type."""
        section, _, inner = name.partition(".")
        if not inner:
            self[name] = value
            return
        if section == "metrics":
            self.setdefault("metrics", Metrics())[inner] = value
            return
        key = record_schema.BY_NAME.get(section)
        if key is None:
            _refuse(key_problem(section, {}), self.section, section)
        field = next((field for field in key.fields if field.name == inner), None) if key is not None else None
        found = record_check.type_problems(field, value, name) if field is not None else []
        if found:
            _refuse(f"record key {'; '.join(found)} (declared in {_declared_in(section)})", section, inner)
        self.setdefault(section, {})[inner] = value

    @classmethod
    def adopt(cls, values: dict, undeclared_by: Optional[dict] = None) -> "Record":
        """A record built elsewhere (a child's, handed to the parent as JSON) as a Record, unchecked: its builder's
        Record checked it, and the writer's check (record_check.written) checks it whole; what is set on it from
        now on is checked. `undeclared_by`: its builder's `undeclared_by` (a key it holds -> a feature's name)."""
        record = cls()
        for name, value in values.items():
            dict.__setitem__(record, name, value)
        if isinstance(undeclared_by, dict):
            known = features.names()
            record.undeclared_by.update({name: feature for name, feature in undeclared_by.items()
                                         if name in record and feature in known})
        metrics = record.get("metrics")
        if isinstance(metrics, dict) and not isinstance(metrics, Metrics):
            adopted = Metrics()
            for name, value in metrics.items():
                dict.__setitem__(adopted, name, value)
            dict.__setitem__(record, "metrics", adopted)
        return record
