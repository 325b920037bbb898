"""Our experiment axes, one table: every experiment key beyond upstream PyTorch/XLA's nine is one `Axis`
(config/axis.py) that a feature declares (benchmarks/features/<feature>/, docs/architecture.md, "Adding a matrix
axis"); AXES gathers them by discovery (features.declared_axes), in the table's historical order.

From the table come experiment_config's OWN_KEYS and AXIS_DEFAULTS (so records.fingerprint and the labels leave a
key out at its default), ExperimentConfig's fields, from_dict's checks, slug and describe; run_options' flags (the
`axes` section, AxisOptions) and check_combinations' contradictions; matrix.expand's values, their sweep defaults,
what each config carries and the support rules an axis adds; measurement's labels. What an axis means when a
config runs is its feature's child half (features/<feature>/child.py), the details of its values its declaration's.
No torch: the parent plans with it.
"""

from __future__ import annotations

from benchmarks import features
from benchmarks.config.axis import SWITCH

AXES = features.declared_axes()
BY_KEY = {axis.key: axis for axis in AXES}
KEYS = tuple(BY_KEY)
ONLY_SOME_MODELS = tuple(axis.key for axis in AXES if axis.only_some_models)  # null unless a suite sets them


def at_default(key: str, value) -> bool:
    """The one rule for "at its default, leave it out" (the fingerprint, the labels, the slug, the measurement's
    axes, history's site, the rerun flags): null, false, or the value a record without the key ran (the axis's
    `default`). A key the table lacks (a suite's extra axis such as microbench's dtype) is at its default when null
    or false. So a new axis, boolean or not, leaves every older record's fingerprint and label as they were."""
    if value is None or value is False:
        return True
    axis = BY_KEY.get(key)
    return axis is not None and axis.at_default(value)


def label_text(key: str, value) -> str:
    """How an axis value shows in a backend label: the table's `label` (a switch's, when on, is its label alone);
    True of another axis, or a key the table lacks (a suite's extra axis such as microbench's dtype, or cudagraphs):
    its name; another value of a key the table lacks: the value."""
    axis = BY_KEY.get(key)
    if axis is not None and (axis.kind == SWITCH or value is not True):
        return axis.label_of(value)
    return key if value is True else str(value)


def add_fields(cls):
    """A class decorator under @dataclass: a field per axis (its key, typed Any, defaulting to the value of a config
    that does not set it), after the fields the class declares."""
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    for axis in AXES:
        annotations[axis.key] = "Any"
        setattr(cls, axis.key, axis.unset)
    cls.__annotations__ = annotations
    return cls
