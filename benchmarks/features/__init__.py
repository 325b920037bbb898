"""The features: one sub-package per experiment axis (or family of axes), named after its experiment key, holding
all of it (docs/architecture.md, "Adding a matrix axis"):

- `benchmarks/features/<name>/__init__.py`, the declaration: torch-free, config-layer (it imports only plumbing,
  config and other declarations). Its `AXES` is a tuple of config.axis.Axis, with their parsing, support rules and
  names beside them.
  Its `RECORD_KEYS` (config.record_key.RecordKey), if any: the record's keys its child half writes, which
  results/record_schema.py adds to the record's (the writer refuses an undeclared key in the tests' strict mode).
- `benchmarks/features/<name>/child.py`, the child half (where the feature does something in the child): torch
  inside its functions only, child-layer (no runner, config or results module imports it). Where it defines
  `hook_for(value, experiment)`, the child calls it with the config's value of the feature's one axis
  (child/config_hooks.py) and adds the config_hooks.Hook it returns, or nothing for None.

The table (config/axes.py's AXES) is gathered here by discovery (pkgutil over this package), so a new axis is one
new folder plus its tests. Order: the historical one (HISTORICAL_ORDER, the records' key order since the keys
existed), then keys it does not name, by key.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

# The table's order before the features were discovered (records, --help, labels and the slug keep it); a key
# that is not here comes after these, in the order of its name.
HISTORICAL_ORDER = ("quantization", "precision", "dynamic", "compile_mode", "inductor_config", "compile_cache",
                    "train_step", "speedup", "allocator", "cpu_profile", "cuda_profile", "channels_last",
                    "matmul_precision", "deterministic", "batch_invariant", "aot_precompile", "prompt_tokens",
                    "new_tokens", "generation_compile")


def names() -> list:
    """The features found under this package's path, by name."""
    return sorted(info.name for info in pkgutil.iter_modules(__path__) if info.ispkg)


def declaration(name: str):
    """A feature's declaration module (benchmarks.features.<name>)."""
    return importlib.import_module(f"{__name__}.{name}")


def _position(axis) -> tuple:
    known = axis.key in HISTORICAL_ORDER
    return (0, HISTORICAL_ORDER.index(axis.key), "") if known else (1, 0, axis.key)


def declared_axes() -> tuple:
    """Every feature's axes, each marked with its feature, in the table's order (HISTORICAL_ORDER, then by key)."""
    found = []
    for name in names():
        for axis in getattr(declaration(name), "AXES", ()):
            found.append(dataclasses.replace(axis, feature=name))
    keys = [axis.key for axis in found]
    doubled = {key for key in keys if keys.count(key) > 1}
    if doubled:
        raise ValueError(f"experiment keys declared by two features: {', '.join(sorted(doubled))}")
    return tuple(sorted(found, key=_position))


def declared_record_keys() -> tuple:
    """Every feature's record keys (its declaration's RECORD_KEYS, each written by `feature:<its folder>`), by
    feature name: results/record_schema.py adds them to the record's top level."""
    found = []
    for name in names():
        for key in getattr(declaration(name), "RECORD_KEYS", ()):
            if key.writer != f"feature:{name}":
                raise ValueError(f"record key {key.name} of feature {name} says it is written by {key.writer}, "
                                 f"not feature:{name}")
            found.append(key)
    return tuple(found)
