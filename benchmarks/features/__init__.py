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

The parent asks the declarations by a hook's name, never a feature's (`declared(hook)`: the runner names no feature,
tests/child/test_feature_methods.py holds it to that): `resolved_skip_reason(experiment)`, why a config as its suite
resolves it can't run (runner/plan.py); `runs_twice(experiment)`, a config run as a warm start's two children
(runner/warm_start.py, config/rerun_command.py); `inductor_settings_problem(experiment, known)`, an Inductor setting
this torch lacks (runner/flag_checks.py); `compose_environment(env, experiment, options)`, what a feature sets in a
child's environment before its interpreter starts, and `start_variables()`, the names of those that act only then
(config/process_env.py). The readers (results/) ask the same way: `pooled_speedup(ratios_of_processes)`, a config's
paired speedup over its processes (`declared_one`: results/against_eager.py), and `runs_cudagraphs(model, experiment)`,
whether a record's keys imply Inductor's CUDA graphs (results/measurement.py); what an eager config holds of each axis,
which the baseline rule reads, is the axis's own `on_eager` (config/axis.py).

The table (config/axes.py's AXES) is gathered here by discovery (pkgutil over this package), so a new axis is one
new folder plus its tests. Order: each declaration's `ORDER` (a number: its place among the features, so the
records' key order, --help, the labels and the slug stay as they were), then the feature's name, then the axis's
place in its AXES; a feature that declares no ORDER comes after those that do.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil


def names() -> list:
    """The features found under this package's path, by name."""
    return sorted(info.name for info in pkgutil.iter_modules(__path__) if info.ispkg)


def declaration(name: str):
    """A feature's declaration module (benchmarks.features.<name>)."""
    return importlib.import_module(f"{__name__}.{name}")


@functools.lru_cache(maxsize=None)
def declared(hook: str) -> tuple:
    """Each declaration's `hook` (a function its declaration defines by that name), in the features' order; found
    once per process (the plan asks per config)."""
    found = ((order(name), name) for name in names() if callable(getattr(declaration(name), hook, None)))
    return tuple(getattr(declaration(name), hook) for _, name in sorted(found))


def declared_one(hook: str):
    """The one declaration's `hook`, or None where none defines it: a reading the core takes once (a config's pooled
    paired speedup) is one feature's, so two declarations defining it is a ValueError."""
    found = declared(hook)
    if len(found) > 1:
        raise ValueError(f"hook {hook} is defined by more than one feature: "
                         + ", ".join(function.__module__ for function in found))
    return found[0] if found else None


def order(name: str) -> tuple:
    """A feature's place among the features: (0, its declared ORDER) before (1, 0) for one that declares none."""
    declared = getattr(declaration(name), "ORDER", None)
    return (0, declared) if declared is not None else (1, 0)


def declared_axes() -> tuple:
    """Every feature's axes, each marked with its feature, in the table's order (the features' ORDER, then their
    names, then each axis's place in its feature's AXES)."""
    found, place = [], {}
    for name in names():
        for index, axis in enumerate(getattr(declaration(name), "AXES", ())):
            found.append(dataclasses.replace(axis, feature=name))
            place[axis.key] = (*order(name), name, index)
    keys = [axis.key for axis in found]
    doubled = {key for key in keys if keys.count(key) > 1}
    if doubled:
        raise ValueError(f"experiment keys declared by two features: {', '.join(sorted(doubled))}")
    return tuple(sorted(found, key=lambda axis: place[axis.key]))


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
