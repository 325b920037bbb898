"""The experiment matrix: flag expansion and the support rules (one table, one reason per rule).

Pure Python: the parent imports this without torch. What must be learned from torch (registered
dynamo backends, XLA devices, CUDA) arrives as a `Capabilities` value from one probe child.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Iterable, Optional

from benchmarks.common import allocator, compile_options, cpu_profile, cuda_profile as cuda_profiles, paired_speedup, \
    precision, quantization
from benchmarks.common.experiment_config import DEFAULT_DYNAMIC, EXPORT_BACKENDS, XLA_DYNAMO_BACKENDS, ExperimentConfig


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What the probe child learned from torch on this machine."""

    dynamo_backends: tuple = ()
    torch_xla_error: Optional[str] = "not probed"  # None when torch_xla imports
    xla_devices: tuple = ()  # device kinds with at least one XLA device, e.g. ("CPU",)
    cuda_devices: tuple = ()  # CUDA device names
    tpu_type: Optional[str] = None
    inductor_settings: tuple = ()  # (name, type name) of torch._inductor.config, when a config sets one

    @classmethod
    def from_dict(cls, data: dict) -> "Capabilities":
        return cls(
            dynamo_backends=tuple(data.get("dynamo_backends", ())),
            torch_xla_error=data.get("torch_xla_error"),
            xla_devices=tuple(data.get("xla_devices", ())),
            cuda_devices=tuple(data.get("cuda_devices", ())),
            tpu_type=data.get("tpu_type"),
            inductor_settings=tuple(sorted(data.get("inductor_settings", {}).items())),
        )


# The support rules: (name, test that says the config cannot run, reason). First match wins.

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
        lambda e, c: e.dynamo == "inductor" and bool(e.xla),
        lambda e, c: "inductor compiles for native devices, not XLA tensors (use --xla=None)",
    ),
    (
        "openxla-needs-xla",
        lambda e, c: e.dynamo in XLA_DYNAMO_BACKENDS and not e.xla,
        lambda e, c: f"dynamo backend {e.dynamo} runs on XLA devices only (add --xla=PJRT)",
    ),
    (
        "export-not-with-xla",
        lambda e, c: e.dynamo in EXPORT_BACKENDS and bool(e.xla),
        lambda e, c: f"--dynamo={e.dynamo} exports for native devices, not XLA tensors (use --xla=None)",
    ),
    (
        "export-eval-only",
        lambda e, c: e.dynamo in EXPORT_BACKENDS and e.test != "eval",
        lambda e, c: f"--dynamo={e.dynamo} measures inference only (the dashboard's export and aot_inductor)",
    ),
    (
        "dynamic-needs-dynamo",
        lambda e, c: e.dynamic != DEFAULT_DYNAMIC and (e.dynamo is None or e.dynamo in EXPORT_BACKENDS),
        lambda e, c: f"--dynamic={e.dynamic} marks shapes for torch.compile; "
                     f"{'eager and lazy tensors compile nothing' if e.dynamo is None else 'exports here are static'}",
    ),
    (
        "dynamo-backend-registered",
        lambda e, c: e.dynamo is not None and e.dynamo not in EXPORT_BACKENDS and e.dynamo not in c.dynamo_backends,
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
    (
        "quantization-supported",
        lambda e, c: quantization.unsupported_reason(e.quantization, e) is not None,
        lambda e, c: quantization.unsupported_reason(e.quantization, e),
    ),
    (
        "precision-supported",
        lambda e, c: precision.unsupported_reason(e) is not None,
        lambda e, c: precision.unsupported_reason(e),
    ),
    *compile_options.SUPPORT_RULES,
    *paired_speedup.SUPPORT_RULES,
    *allocator.SUPPORT_RULES,
    *cuda_profiles.SUPPORT_RULES,
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


def expand(
    accelerators: list,
    xlas: list,
    dynamos: list,
    tests: list,
    xla_flags: list = (None,),
    batch_sizes: list = (None,),
    enable_functionalization: bool = False,
    extra_axes: Optional[dict] = None,
    quantizations: list = (None,),
    precisions: list = (None,),
    dynamics: list = (DEFAULT_DYNAMIC,),
    compile_modes: list = ("default",),
    inductor_config: Optional[str] = None,
    compile_caches: list = ("cold",),
    train_steps: list = (None,),
    speedups: list = (paired_speedup.DEFAULT,),
    allocators: list = (allocator.DEFAULT,),
    profile: Optional[str] = None,
    cuda_profile: Optional[str] = None,
) -> list:
    """The cartesian product in command-line order (accelerator outermost, then upstream's axes, the
    quantization recipe, the precision (None: the suite's default, resolved per model by the plan), --dynamic,
    the compile mode and cache, the training step (None: the suite's default, resolved per model by the plan),
    --speedup, the C allocator, the suite's extra axes innermost). `profile`: the --cpu-profile of every config
    (the dashboard's adds freezing to its Inductor inference configs); `cuda_profile`: the --cuda-profile of every
    config (the dashboard's precision where none is asked for). A config without dynamo takes no compile
    keys: one eager config, whatever the compile modes; an eval config takes no training step; eager is never
    paired (paired_speedup.for_backend)."""
    extra_axes = extra_axes or {}
    extra_names = sorted(extra_axes)
    configs = []
    for acc, xla, flags, dynamo, test, bs, recipe, dtype, dynamic, mode, cache, step, speedup, malloc, *extra_values \
            in itertools.product(
                unique(accelerators), unique(xlas), unique(xla_flags), unique(dynamos), unique(tests),
                unique(batch_sizes), unique(quantizations), unique(precisions), unique(dynamics), unique(compile_modes),
                unique(compile_caches), unique(train_steps), unique(speedups), unique(allocators),
                *(unique(extra_axes[k]) for k in extra_names),
    ):
        configs.append(cuda_profiles.settle(cpu_profile.settle(
            ExperimentConfig(
                accelerator=acc, xla=xla, dynamo=dynamo, test=test, xla_flags=flags, batch_size=bs,
                enable_functionalization=enable_functionalization, quantization=recipe, precision=dtype,
                dynamic=dynamic, train_step=step if test == "train" else None,
                speedup=paired_speedup.for_backend(xla, dynamo, speedup), allocator=malloc, cpu_profile=profile,
                cuda_profile=cuda_profile, extra=tuple(zip(extra_names, extra_values)),
                **compile_options.for_backend(dynamo, mode, inductor_config, cache),
            )
        )))
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
