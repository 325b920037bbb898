"""The experiment matrix: flag expansion and the support rules (one table, one reason per rule).

Pure Python: the parent imports this without torch. What must be learned from torch (registered
dynamo backends, XLA devices, CUDA) arrives as a `Capabilities` value from one probe child (runner/capabilities.py);
what each --dynamo backend needs (its devices, an export's eval only) is its declaration in config/backend_registry.py.
"""

from __future__ import annotations

import itertools
import json
from typing import Iterable, Optional

from benchmarks.config import axes, backend_registry as backends
from benchmarks.config.experiment_config import AXIS_DEFAULTS, ExperimentConfig
from benchmarks.plumbing import machine_facts
from benchmarks.runner.capabilities import Capabilities


# The support rules: (name, test that says the config cannot run, reason). First match wins. Upstream's keys' here,
# then those our axes add (config/axes.py), in the table's order.

SUPPORT_RULES: list = [
    (
        "tpu-needs-xla",
        lambda e, c: e.accelerator == "tpu" and not e.xla,
        lambda e, c: "accelerator tpu runs only through PyTorch/XLA (add --xla=PJRT)",
    ),
    (
        "no-xla-on-cuda",
        lambda e, c: e.accelerator == "cuda" and bool(e.xla),
        lambda e, c: "XLA:CUDA is not supported by torch-xla 2.9; use --xla=None with a dynamo backend",
    ),
    (
        "torch-xla2-unsupported",
        lambda e, c: e.torch_xla2 is not None,
        lambda e, c: "torch_xla2 is not supported by this runner",
    ),
    (
        "inductor-not-with-xla",
        lambda e, c: backends.runs_on(e.dynamo) == backends.NATIVE_ONLY and not backends.exports(e.dynamo) and bool(e.xla),
        lambda e, c: f"{e.dynamo} compiles for native devices, not XLA tensors (use --xla=None)",
    ),
    (
        "openxla-needs-xla",
        lambda e, c: backends.runs_on(e.dynamo) == backends.XLA_ONLY and not e.xla,
        lambda e, c: f"dynamo backend {e.dynamo} runs on XLA devices only (add --xla=PJRT)",
    ),
    (
        "export-not-with-xla",
        lambda e, c: backends.exports(e.dynamo) and bool(e.xla),
        lambda e, c: f"--dynamo={e.dynamo} exports for native devices, not XLA tensors (use --xla=None)",
    ),
    (
        "export-eval-only",
        lambda e, c: backends.exports(e.dynamo) and e.test != "eval",
        lambda e, c: f"--dynamo={e.dynamo} measures inference only (the dashboard's export and aot_inductor)",
    ),
    (
        "dynamic-needs-dynamo",
        lambda e, c: e.dynamic != AXIS_DEFAULTS["dynamic"] and (e.dynamo is None or backends.exports(e.dynamo)),
        lambda e, c: f"--dynamic={e.dynamic} marks shapes for torch.compile; "
                     f"{'eager and lazy tensors compile nothing' if e.dynamo is None else 'exports here are static'}",
    ),
    (
        "dynamo-backend-registered",
        lambda e, c: e.dynamo is not None and not backends.available(e.dynamo, c.dynamo_backends),
        lambda e, c: f"dynamo backend {e.dynamo!r} is not registered (torch._dynamo.list_backends)",
    ),
    (
        "xla-needs-torch-xla",
        lambda e, c: bool(e.xla) and c.torch_xla_error is not None,
        lambda e, c: f"torch_xla is not usable: {c.torch_xla_error}",
    ),
    (
        "xla-needs-device",
        lambda e, c: bool(e.xla) and e.accelerator.upper() not in c.xla_devices,
        lambda e, c: f"no XLA {e.accelerator.upper()} device on this machine",
    ),
    (
        "cuda-needs-device",
        lambda e, c: e.accelerator == "cuda" and not c.cuda_devices,
        lambda e, c: "no CUDA device on this machine",
    ),
    *(rule for axis in axes.AXES for rule in axis.support_rules),
]


def unsupported_reason(experiment: ExperimentConfig, caps: Capabilities, rules: Iterable = None) -> Optional[str]:
    for _name, blocked, reason in rules if rules is not None else SUPPORT_RULES:
        if blocked(experiment, caps):
            return reason(experiment, caps)
    return None


def unique(values: Iterable) -> list:
    """De-duplicate, keeping the first occurrence's order (upstream used set(): random order)."""
    seen, out = set(), []
    for value in values:
        key = json.dumps(value, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


# The values of upstream's axes in a sweep whose flag is not given, in the record's (and the product's) order.
UPSTREAM_DEFAULTS = {
    "accelerator": ("cpu", "cuda", "tpu"),
    "xla": (None, "PJRT"),
    "xla_flags": (None,),
    "dynamo": (None, "inductor", "openxla"),
    "test": ("eval", "train"),
    "batch_size": (None,),
    "enable_functionalization": (False,),
}


def expand(asked: dict, extra_axes: Optional[dict] = None) -> list:
    """The cartesian product in command-line order: upstream's keys in the record's order (accelerator outermost,
    then xla, xla_flags, dynamo, test, batch size), then ours in the axes' table's (config/axes.py: quantization,
    precision, dynamic, compile mode, compile cache, training step, speedup, allocator; the per-sweep ones have one
    value), then the suite's extra axes innermost, by name. `asked`: key -> the values asked for; a key not there
    (or empty) takes its sweep default (UPSTREAM_DEFAULTS, `Axis.sweep_default`: None precision and training step,
    the suite's default, resolved per model by the plan). Each config carries what its backend and test take of
    each axis (`Axis.for_config`: no compile keys without dynamo, so one eager config whatever the modes; no
    training step for eval; eager never paired), then the axes that say how settle it (`Axis.settle`: the
    profiles)."""
    unknown = sorted(set(asked) - set(UPSTREAM_DEFAULTS) - set(axes.KEYS))
    if unknown:
        raise ValueError(f"no such experiment axis: {', '.join(unknown)}")
    values = {key: tuple(asked.get(key) or default) for key, default in UPSTREAM_DEFAULTS.items()}
    values.update({axis.key: axis.sweep_values(asked) for axis in axes.AXES})
    extra_axes = extra_axes or {}
    extra_names = sorted(extra_axes)
    configs = []
    for combination in itertools.product(*(unique(v) for v in values.values()),
                                         *(unique(extra_axes[k]) for k in extra_names)):
        chosen = dict(zip(values, combination))
        upstream = ExperimentConfig(**{key: chosen[key] for key in UPSTREAM_DEFAULTS},
                                    extra=tuple(zip(extra_names, combination[len(values):])))
        config = upstream.with_(**{axis.key: axis.value_for(chosen[axis.key], upstream) for axis in axes.AXES})
        for axis in axes.AXES:
            if axis.settle:
                config = axis.settle(config)
        configs.append(config)
    return list({json.dumps(c.to_dict(), sort_keys=True, default=str): c for c in configs}.values())


def split(configs: list, caps: Capabilities, rules: Iterable = None) -> tuple:
    """(kept, dropped) where dropped is a list of (config, reason)."""
    kept, dropped = [], []
    for config in configs:
        reason = unsupported_reason(config, caps, rules)
        if reason is None:
            kept.append(config)
        else:
            dropped.append((config, reason))
    return kept, dropped


def expand_experiments(suite, options) -> list:
    """The matrix the flags ask for; an axis not given takes its sweep default (matrix.expand)."""
    asked = {"accelerator": options.accelerator, "xla": options.xla, "xla_flags": options.xla_flags,
             "dynamo": options.dynamo, "test": options.test, "batch_size": options.batch_size,
             "enable_functionalization": (options.enable_functionalization,)}
    asked.update({axis.key: axis.asked(options) for axis in axes.AXES})
    return expand(asked, suite.extra_axes(options.parsed_flags))


def with_accelerator_model(experiment: ExperimentConfig, caps: Capabilities) -> ExperimentConfig:
    """A kept experiment config with the accelerator model it runs on here (the probe's device names)."""
    model = machine_facts.accelerator_model(experiment.accelerator, caps.cuda_devices, caps.tpu_type)
    return experiment.with_(accelerator_model=model)
