"""experiment_runner.py's options as one typed value, built once from the parsed flags.

The parent (the sweep) and the child (one config) parse the same flags; `RunOptions.from_flags` turns them
into this frozen value, with one small section per feature (verify, diagnostics, timing, noise). Each
feature registers its own flags (its `add_arguments`); the section here names the values it reads. Suites
register and read their own flags: they get the parsed flags as `suite_flags`.
Pure data: no torch, no behaviour (docs/architecture.md, "Options").
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Optional


def _pick(cls, flags: argparse.Namespace, **renamed):
    """An instance of dataclass `cls` from the flags of the same names (`renamed`: field -> flag name);
    a flag that this process's parser lacks takes the field's default."""
    values = {}
    for field in dataclasses.fields(cls):
        name = renamed.get(field.name, field.name)
        if hasattr(flags, name):
            value = getattr(flags, name)
            values[field.name] = tuple(value) if isinstance(value, list) else value
    return cls(**values)


@dataclasses.dataclass(frozen=True)
class VerifyOptions:
    """--verify: compare each config's result with eager's."""

    enabled: bool = False
    tolerance: float = 0.02
    iterations: int = 1

    @classmethod
    def from_flags(cls, flags) -> "VerifyOptions":
        return _pick(cls, flags, enabled="verify", tolerance="verify_tolerance", iterations="verify_iterations")


@dataclasses.dataclass(frozen=True)
class DiagnosticsOptions:
    """Profiles, per-operator times, XLA metrics and IR dumps, dynamo counters, saved outputs, precision."""

    dump_pytorch_profiles: bool = False
    profile_cuda_cpu: bool = False
    profile_cuda_cpu_individual_ops: bool = False
    dump_pytorch_xla_metrics: bool = False
    dump_hlo: bool = False
    save_ir_format: Optional[str] = None
    profile_xla: bool = False
    profile_xla_duration_ms: int = 5000
    collect_dynamo_counters: bool = False
    dump_dynamo_counters: bool = False
    filter_by_single_graph: bool = False
    randomize_input: bool = False
    save_output: bool = False
    collect_full_output: bool = False
    matmul_precision: Optional[str] = None
    disable_tf32: bool = False

    @classmethod
    def from_flags(cls, flags) -> "DiagnosticsOptions":
        return _pick(cls, flags)


@dataclasses.dataclass(frozen=True)
class TimingOptions:
    """--pure-wall-time: per-iteration device time with CUDA events."""

    pure_wall_time: bool = False

    @classmethod
    def from_flags(cls, flags) -> "TimingOptions":
        return _pick(cls, flags)


@dataclasses.dataclass(frozen=True)
class NoiseOptions:
    """--cpu-affinity: the cores each child is pinned to (a spec such as "2-3"; None: not pinned)."""

    cpu_affinity: Optional[str] = None

    @classmethod
    def from_flags(cls, flags) -> "NoiseOptions":
        return _pick(cls, flags)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    # model selection
    suite_name: str = "dummy"
    filter: tuple = ()
    exclude: tuple = ()
    filter_by_tier: tuple = ()
    exclude_by_tier: tuple = ()
    total_partitions: int = 1
    partition_id: int = 0
    # the matrix: each an axis's values as given (empty: the runner's default values)
    accelerator: tuple = ()
    xla: tuple = ()
    dynamo: tuple = ()
    test: tuple = ()
    xla_flags: tuple = ()
    batch_size: tuple = ()
    quantization: tuple = ()  # TorchAO recipes (None for none)
    enable_functionalization: bool = False
    # measurement
    repeat: int = 10
    iterations_per_run: int = 1
    warmup: int = 2
    # the sweep
    dry_run: bool = False
    print_subprocess: bool = False
    subprocess_timeout: float = 1800.0
    subprocess_memory_limit: Optional[int] = None
    progress_bar: bool = False
    output_dirname: str = "./output/"
    output_basename: str = "results.jsonl"
    no_resume: bool = False
    retry_failed: bool = False
    rounds: int = 1
    timestamp: Optional[float] = None
    log_level: str = "info"
    # where the children run (docs/architecture.md, "Executors")
    jobs: Optional[int] = None  # None: 1 locally, the cluster's CPUs with Ray
    executor: str = "local"
    ray_address: Optional[str] = None
    gpus_per_job: int = 1
    launch: str = "fork"  # fork: children from a fork server where their environment allows; spawn: always fresh
    # one config (the child, or by hand)
    experiment_config: Optional[str] = None
    model_config: Optional[str] = None
    record_fd: Optional[int] = None
    # feature sections
    verify: VerifyOptions = VerifyOptions()
    diagnostics: DiagnosticsOptions = DiagnosticsOptions()
    timing: TimingOptions = TimingOptions()
    noise: NoiseOptions = NoiseOptions()
    # the suites' own flags (--torchbench-dir, --model-params, --op, ...), read by the suites only
    suite_flags: argparse.Namespace = dataclasses.field(default_factory=argparse.Namespace, compare=False)
    # what each child is given on its command line to see these same options
    child_flags: tuple = ()

    @classmethod
    def from_flags(cls, flags: argparse.Namespace, child_flags=()) -> "RunOptions":
        sections = {"verify", "diagnostics", "timing", "noise", "suite_flags", "child_flags"}
        values = {}
        for field in dataclasses.fields(cls):
            if field.name in sections or not hasattr(flags, field.name):
                continue
            value = getattr(flags, field.name)
            if isinstance(value, list):
                value = tuple(value)
            elif value is None and field.type == "tuple":
                value = ()
            values[field.name] = value
        return cls(**values, verify=VerifyOptions.from_flags(flags), diagnostics=DiagnosticsOptions.from_flags(flags),
                   timing=TimingOptions.from_flags(flags), noise=NoiseOptions.from_flags(flags), suite_flags=flags,
                   child_flags=tuple(child_flags))

    def with_(self, **changes) -> "RunOptions":
        return dataclasses.replace(self, **changes)
