"""The experiment config: upstream PyTorch/XLA's keys in its order, parsing, naming. Pure Python, no torch."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from benchmarks.config import axes, backend_registry
from benchmarks.config.train_steps import HARNESS_TRAIN_STEP
from benchmarks.plumbing.safe_paths import safe_name, short_hash

# Upstream PyTorch/XLA's experiment keys, in its order; records keep this order.
EXPERIMENT_KEYS = (
    "accelerator",
    "accelerator_model",
    "xla",
    "xla_flags",
    "dynamo",
    "torch_xla2",
    "test",
    "batch_size",
    "enable_functionalization",
)
# Our keys after upstream's (always written, null when unset; old records without them read as null): the axes'
# table, config/axes.py, in its order.
OWN_KEYS = axes.KEYS
# Keys a hand-written --experiment-config must carry (the rest have defaults).
REQUIRED_EXPERIMENT_KEYS = ("accelerator", "xla", "dynamo", "test")

ACCELERATORS = ("cpu", "cuda", "tpu")
XLA_CHOICES = (None, "PJRT")
TESTS = ("eval", "train")
# Our keys whose default is not null: at it, a key is left out of the fingerprint and the labels (old records
# lack it and ran it). From the axes' table; measurement.py and records.py read it.
AXIS_DEFAULTS = {axis.key: axis.default for axis in axes.AXES if axis.default is not None}


class ConfigError(ValueError):
    """A config value that cannot be used; the message is one line for the user."""


def parse_none(value: Optional[str]) -> Optional[str]:
    """Upstream's convention: the string "None" (any case) means unset."""
    if value is None or value.strip().lower() in ("none", "null", ""):
        return None
    return value


@dataclasses.dataclass(frozen=True)
@axes.add_fields  # then a field per axis of config/axes.py (quantization, precision, ...), defaulting to unset
class ExperimentConfig:
    accelerator: str
    xla: Optional[str]
    dynamo: Optional[str]
    test: str
    xla_flags: Optional[str] = None
    torch_xla2: Optional[str] = None
    batch_size: Optional[int] = None
    enable_functionalization: bool = False
    accelerator_model: Optional[str] = None
    # Keys beyond upstream's (new matrix axes such as a dtype); sorted (key, value) pairs.
    extra: tuple = ()

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in EXPERIMENT_KEYS + OWN_KEYS}
        out.update(dict(self.extra))
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "ExperimentConfig":
        if not isinstance(data, dict):
            raise ConfigError("experiment config must be a JSON object")
        missing = [k for k in REQUIRED_EXPERIMENT_KEYS if k not in data]
        if missing:
            raise ConfigError(f"experiment config lacks key(s): {', '.join(missing)}")
        accelerator = str(data["accelerator"]).lower()
        if accelerator not in ACCELERATORS:
            raise ConfigError(f"accelerator must be one of {', '.join(ACCELERATORS)}, not {data['accelerator']!r}")
        xla = parse_none(data["xla"])
        if xla not in XLA_CHOICES:
            raise ConfigError(f"xla must be null or \"PJRT\", not {data['xla']!r}")
        test = data["test"]
        if test not in TESTS:
            raise ConfigError(f"test must be eval or train, not {test!r}")
        batch_size = data.get("batch_size")
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1):
            raise ConfigError(f"batch_size must be a positive integer or null, not {batch_size!r}")
        dynamo = parse_none(data["dynamo"])
        if dynamo is not None and not isinstance(dynamo, str):
            raise ConfigError(f"dynamo must be a backend name or null, not {dynamo!r}")
        functionalization = data.get("enable_functionalization", False)
        if not isinstance(functionalization, bool):
            raise ConfigError(f"enable_functionalization must be true or false, not {functionalization!r}")
        own = {}
        for axis in axes.AXES:
            try:
                own[axis.key] = axis.parse(data.get(axis.key))
            except ValueError as exc:
                raise ConfigError(str(exc))
        extra = tuple(sorted((k, v) for k, v in data.items() if k not in EXPERIMENT_KEYS + OWN_KEYS))
        config = cls(
            accelerator=accelerator,
            xla=xla,
            dynamo=dynamo,
            test=test,
            xla_flags=parse_none(data.get("xla_flags")),
            torch_xla2=parse_none(data.get("torch_xla2")),
            batch_size=batch_size,
            enable_functionalization=functionalization,
            accelerator_model=data.get("accelerator_model"),
            extra=extra,
            **own,
        )
        for axis in axes.AXES:
            problem = axis.check(config) if axis.check else None
            if problem:
                raise ConfigError(problem)
        return config

    def with_(self, **changes) -> "ExperimentConfig":
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """`key=value` for the keys that were set, for one-line messages."""
        data = self.to_dict()
        data.pop("accelerator_model", None)
        for axis in axes.AXES:  # our keys only where set
            if data[axis.key] == axis.unset:
                data.pop(axis.key)
        return " ".join(f"{k}={v}" for k, v in data.items() if v not in (None, False))

    @property
    def harness_train_step(self) -> bool:
        """A train config running the dynamo harness's step (--train-step=harness)."""
        return self.test == "train" and self.train_step == HARNESS_TRAIN_STEP

    @property
    def backend(self) -> str:
        return backend_name(self.xla, self.dynamo)

    @property
    def exported(self) -> bool:
        """A config whose step calls an exported program (torch.export, AOTInductor's package), not dynamo's."""
        return backend_registry.exports(self.dynamo)

    def slug(self) -> str:
        """A short, deterministic, file-name-safe name (no randomized hashes)."""
        parts = [self.accelerator, self.backend.replace("+", "-"), self.test]
        if self.batch_size is not None:
            parts.append(f"bs{self.batch_size}")
        if self.xla_flags:
            parts.append("xlaflags-" + short_hash(self.xla_flags))
        if self.enable_functionalization:
            parts.append("func")
        for axis in axes.AXES:
            value = getattr(self, axis.key)
            if axis.shown(value):
                parts.append(axis.slug_text(value))
        for key, value in self.extra:
            parts.append(f"{key}-{value}")
        return safe_name("-".join(parts))


def backend_name(xla: Optional[str], dynamo: Optional[str]) -> str:
    """The names aggregate.py and upstream use for a backend."""
    if xla:
        return f"{dynamo}+dynamo" if dynamo else "openxla+lazytensor"
    return dynamo or "eager"

