"""The experiment config: upstream PyTorch/XLA's keys in its order, parsing, naming. Pure Python, no torch."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Optional

from benchmarks.common import allocator as allocators, compile_options, cpu_profile as cpu_profiles, \
    cuda_profile as cuda_profiles, paired_speedup, precision as precisions, quantization
from benchmarks.common.safe_paths import safe_name

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
# Our keys after upstream's (always written, null when unset; old records without them read as null).
OWN_KEYS = ("quantization", "precision", "dynamic") + compile_options.KEYS + ("train_step", "speedup", "allocator",
                                                                                "cpu_profile", "cuda_profile")
# Keys a hand-written --experiment-config must carry (the rest have defaults).
REQUIRED_EXPERIMENT_KEYS = ("accelerator", "xla", "dynamo", "test")

ACCELERATORS = ("cpu", "cuda", "tpu")
XLA_CHOICES = (None, "PJRT")
TESTS = ("eval", "train")
XLA_DYNAMO_BACKENDS = ("openxla", "openxla_eval")
# --dynamic: static shapes (default), the batch dimension marked dynamic, or torch.compile(dynamic=True).
DYNAMIC_CHOICES = ("static", "batch", "all")
DEFAULT_DYNAMIC = "static"
# --train-step (train configs; null for eval): `harness`, the dynamo harness's step compiled whole (clone the
# inputs, zero the grads, forward, the suite's loss, backward, the optimizer's step: none on the CPU), or
# `forward_loss`, ours (forward + loss under the backend; backward and an eager SGD step after it).
# docs/runner.md, "Training step". A record without the key ran forward_loss.
HARNESS_TRAIN_STEP, DEFAULT_TRAIN_STEP = "harness", "forward_loss"
TRAIN_STEPS = (HARNESS_TRAIN_STEP, DEFAULT_TRAIN_STEP)
# Our keys whose default is not null: at it, a key is left out of the fingerprint and the labels (old records
# lack it and ran it). The one table: measurement.py and records.py read it.
AXIS_DEFAULTS = {"precision": precisions.DEFAULT, "dynamic": DEFAULT_DYNAMIC, **compile_options.DEFAULTS,
                 "train_step": DEFAULT_TRAIN_STEP, "speedup": paired_speedup.DEFAULT, "allocator": allocators.DEFAULT}
# --dynamo values that are no dynamo backend: torch.export (strict or not), and AOTInductor's package.
EXPORT_BACKENDS = ("export", "export_nonstrict", "aot_inductor")


class ConfigError(ValueError):
    """A config value that cannot be used; the message is one line for the user."""


def parse_none(value: Optional[str]) -> Optional[str]:
    """Upstream's convention: the string "None" (any case) means unset."""
    if value is None or value.strip().lower() in ("none", "null", ""):
        return None
    return value


@dataclasses.dataclass(frozen=True)
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
    # A TorchAO recipe (common/quantization.py), None for none.
    quantization: Optional[str] = None
    # The precision that runs (common/precision.py); None until the plan resolves the suite's default per model.
    precision: Optional[str] = None
    # --dynamic (DYNAMIC_CHOICES); a record without the key ran static.
    dynamic: str = DEFAULT_DYNAMIC
    # torch.compile's mode, the Inductor config ("key=value,..."), the compile cache (common/compile_options.py);
    # None for configs without dynamo.
    compile_mode: Optional[str] = None
    inductor_config: Optional[str] = None
    compile_cache: Optional[str] = None
    # --train-step (TRAIN_STEPS) for train configs, None for eval (and until the plan resolves the suite's default).
    train_step: Optional[str] = None
    # --speedup (common/paired_speedup.py): isolated, or paired (eager timed beside the backend in its child).
    speedup: str = paired_speedup.DEFAULT
    # The child's C allocator policy (common/allocator.py); a record without the key is read as the default.
    allocator: str = allocators.DEFAULT
    # --cpu-profile (common/cpu_profile.py): None, or "dashboard" (PyTorch's CPU dashboard setup).
    cpu_profile: Optional[str] = None
    # --cuda-profile (common/cuda_profile.py): None, or "dashboard" (PyTorch's CUDA dashboard setup).
    cuda_profile: Optional[str] = None
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
        try:
            recipe = quantization.parse(data.get("quantization"))
        except quantization.RecipeError as exc:
            raise ConfigError(str(exc))
        try:
            precision = precisions.parse(data.get("precision"))
        except precisions.PrecisionError as exc:
            raise ConfigError(str(exc))
        dynamic = data.get("dynamic") or DEFAULT_DYNAMIC
        if dynamic not in DYNAMIC_CHOICES:
            raise ConfigError(f"dynamic must be one of {', '.join(DYNAMIC_CHOICES)}, not {dynamic!r}")
        try:
            compile_values = compile_options.parse_experiment(data)
        except ValueError as exc:
            raise ConfigError(str(exc))
        train_step = data.get("train_step")
        if train_step is not None and (test != "train" or train_step not in TRAIN_STEPS):
            raise ConfigError(f"train_step must be one of {', '.join(TRAIN_STEPS)} (train configs) or null, "
                              f"not {train_step!r} for test {test}")
        try:
            speedup = paired_speedup.parse(data.get("speedup"))
        except ValueError as exc:
            raise ConfigError(str(exc))
        try:
            allocator = allocators.parse(data.get("allocator"))
            profile = cpu_profiles.parse(data.get("cpu_profile"))
            cuda_profile = cuda_profiles.parse(data.get("cuda_profile"))
        except ValueError as exc:
            raise ConfigError(str(exc))
        extra = tuple(sorted((k, v) for k, v in data.items() if k not in EXPERIMENT_KEYS + OWN_KEYS))
        return cls(
            accelerator=accelerator,
            xla=xla,
            dynamo=dynamo,
            test=test,
            xla_flags=parse_none(data.get("xla_flags")),
            torch_xla2=parse_none(data.get("torch_xla2")),
            batch_size=batch_size,
            enable_functionalization=functionalization,
            accelerator_model=data.get("accelerator_model"),
            quantization=recipe,
            precision=precision,
            dynamic=dynamic,
            train_step=train_step,
            speedup=speedup,
            allocator=allocator,
            cpu_profile=profile,
            cuda_profile=cuda_profile,
            extra=extra,
            **compile_values,
        )

    def with_(self, **changes) -> "ExperimentConfig":
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """`key=value` for the keys that were set, for one-line messages."""
        data = self.to_dict()
        data.pop("accelerator_model", None)
        for key in ("dynamic", "speedup", "allocator"):
            if data.get(key) == AXIS_DEFAULTS[key]:
                data.pop(key)
        return " ".join(f"{k}={v}" for k, v in data.items() if v not in (None, False))

    @property
    def harness_train_step(self) -> bool:
        """A train config running the dynamo harness's step (--train-step=harness)."""
        return self.test == "train" and self.train_step == HARNESS_TRAIN_STEP

    @property
    def backend(self) -> str:
        return backend_name(self.xla, self.dynamo)

    def slug(self) -> str:
        """A short, deterministic, file-name-safe name (no randomized hashes)."""
        parts = [self.accelerator, self.backend.replace("+", "-"), self.test]
        if self.batch_size is not None:
            parts.append(f"bs{self.batch_size}")
        if self.xla_flags:
            parts.append("xlaflags-" + short_hash(self.xla_flags))
        if self.enable_functionalization:
            parts.append("func")
        if self.quantization:
            parts.append("q-" + self.quantization)
        if self.precision not in (None, precisions.DEFAULT):
            parts.append(self.precision)
        if self.dynamic != DEFAULT_DYNAMIC:
            parts.append("dyn-" + self.dynamic)
        for key in compile_options.KEYS:
            value = getattr(self, key)
            if value is not None and value != AXIS_DEFAULTS.get(key):
                parts.append(f"{key}-{value if key != 'inductor_config' else short_hash(value)}")
        if self.train_step not in (None, DEFAULT_TRAIN_STEP):
            parts.append(f"step-{self.train_step}")
        if self.speedup != paired_speedup.DEFAULT:
            parts.append(self.speedup)
        if self.allocator != allocators.DEFAULT:
            parts.append("alloc-" + self.allocator)
        if self.cpu_profile:
            parts.append("profile-" + self.cpu_profile)
        if self.cuda_profile:
            parts.append("cuda-profile-" + self.cuda_profile)
        for key, value in self.extra:
            parts.append(f"{key}-{value}")
        return safe_name("-".join(parts))


def backend_name(xla: Optional[str], dynamo: Optional[str]) -> str:
    """The names aggregate.py and upstream use for a backend."""
    if xla:
        return f"{dynamo}+dynamo" if dynamo else "openxla+lazytensor"
    return dynamo or "eager"


def short_hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


