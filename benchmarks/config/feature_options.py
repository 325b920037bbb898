"""The feature sections of experiment_runner.py's flags (RunOptions holds one of each: config/run_options.py):
--verify, the diagnostics, --golden, --pure-wall-time and the noise control, each a frozen dataclass whose fields
are its flags, in its own --help section."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Optional

from benchmarks.config import tolerances
from benchmarks.config.flags import BOTH, CHILD, Group
from benchmarks.plumbing.cli_support import finite_non_negative_float, positive_int
from benchmarks.plumbing.cpu_affinity import cpu_affinity_spec

IR_FORMATS = ("text", "hlo", "stablehlo")

# Their --help sections (after config/run_options.py's own, as RunOptions declares its fields).
VERIFICATION = Group("verification")
DIAGNOSTICS = Group("diagnostics (files go to <output-dir>/<model>/<kind>-<config>[-<repeat>].<ext>, listed in the "
                    "record's artifacts)")
TIMING = Group("timing")
GOLDEN = Group("golden inputs and outputs (docs/runner.md: stored inputs, weights and results, checked later)")
NOISE = Group("noise control")


@dataclasses.dataclass(frozen=True)
class VerifyOptions:
    """--verify: compare each config's result with eager's."""

    enabled: bool = VERIFICATION.switch(BOTH, "also judge each config's accuracy against an fp64 eager reference "
        "(output for eval; loss and every gradient for train) and record `accuracy`, upstream's verification_code and "
        "error figures beside the timing", name="--verify")
    accuracy_tolerance: Optional[float] = VERIFICATION.option(
        None, CHILD, "the tolerance of the record's `accuracy` (the harness's rule: allclose at TOL, and the RMSE "
        "rule's tol/10) for every config, instead of the harness's per suite, model, precision and test", name=tolerances.ACCURACY_FLAG,
        aliases=(tolerances.ACCURACY_FLAG_OLD_NAME,), type=finite_non_negative_float, metavar="TOL")
    verification_tolerance: Optional[float] = VERIFICATION.option(
        None, CHILD, "upstream's verification_code: its limit on the mean relative error sum|out-ref|/sum|ref| for "
        "every config, instead of the suite's per model (default 0.02)", name=tolerances.MEAN_REL_ERROR_FLAG,
        type=finite_non_negative_float, metavar="TOL")
    iterations: Optional[int] = VERIFICATION.option(
        None, CHILD, "iterations (train: steps) before the result is compared (default 1; 2 under the harness's "
        "training step, as the harness checks)", name="--verify-iterations", type=positive_int, metavar="N")


@dataclasses.dataclass(frozen=True)
class DiagnosticsOptions:
    """Profiles, per-operator times, XLA metrics and IR dumps, dynamo counters, saved outputs, precision."""

    dump_pytorch_profiles: bool = DIAGNOSTICS.switch(CHILD, "torch.profiler per profiled repeat (one per timed "
        "repeat, after them: the timed ones run unprofiled): a Chrome trace (trace-*.json) and an operator table "
        "(pytorch-profile-*.txt)")
    profile_cuda_cpu: bool = DIAGNOSTICS.switch(CHILD, "per-repeat metrics total_cpu_time_s and per_iter_cpu_time_s "
        "(and the cuda pair where CUDA is profiled) from torch.profiler, in profiled repeats after the timed ones")
    profile_cuda_cpu_individual_ops: bool = DIAGNOSTICS.switch(CHILD, "per-operator times and call counts in the "
        "record's diagnostics (aten_ops; on XLA configs xla_unlowered_ops: the operators that fell back to the CPU)")
    dump_pytorch_xla_metrics: bool = DIAGNOSTICS.switch(CHILD, "torch_xla's metrics report per timed repeat "
        "(pytorch-xla-metrics-*.txt; XLA configs)")
    # The parent sets the environment variables of these two and lists their files for a child that died.
    dump_hlo: bool = DIAGNOSTICS.switch(BOTH, "XLA_FLAGS --xla_dump_to=<output-dir>/<model>/hlo-<config>/ (XLA "
        "configs)")
    save_ir_format: Optional[str] = DIAGNOSTICS.option(
        None, BOTH, "save the lazy-tensor IR of every graph (XLA_SAVE_TENSORS_FMT/FILE) to "
        "dump-<config>.<format>.<ordinal> (XLA configs)", choices=IR_FORMATS)
    profile_xla: bool = DIAGNOSTICS.switch(CHILD, "capture an XLA profiler (xplane) trace of the timed repeats into "
        "xla-profile-<config>/; the profiler server gets a free port per child (XLA configs)")
    profile_xla_duration_ms: int = DIAGNOSTICS.option(
        5000, CHILD, "length of that capture (default 5000)", type=positive_int, metavar="MS")
    collect_dynamo_counters: bool = DIAGNOSTICS.switch(CHILD, "torch._dynamo's counters into the record's diagnostics "
        "(dynamo configs)")
    dump_dynamo_counters: bool = DIAGNOSTICS.switch(CHILD, "torch._dynamo's counters after each repeat to "
        "dynamo-counters-<config>.json (dynamo configs)")
    filter_by_single_graph: bool = DIAGNOSTICS.switch(CHILD, "compile with fullgraph=True: a graph break makes the "
        "config an error record")
    randomize_input: bool = DIAGNOSTICS.switch(CHILD, "fresh random values for every floating-point input tensor (any "
        "float dtype, bf16 and fp16 included) for every timed iteration, made outside the timed region; integer inputs "
        "kept")
    save_output: bool = DIAGNOSTICS.switch(CHILD, "save the CPU copy of the last output of each timed repeat "
        "(output-*.pt; load with torch.load(..., weights_only=True))")
    collect_full_output: bool = DIAGNOSTICS.switch(CHILD, "train steps return the model output and the gradients "
        "beside the loss (slower)")
    disable_tf32: bool = DIAGNOSTICS.switch(CHILD, "no TF32: float32 matmuls (and cuDNN convolutions) at full "
        "precision (highest)")
    no_roofline: bool = DIAGNOSTICS.switch(CHILD, "no roofline: neither the machine's ceilings measured or read nor the "
        "config's work counted (an extra eager iteration after the timed runs; docs/roofline.md)")


def file_path(text: str) -> str:
    """A file given on the command line, made absolute here (read later, by the parent)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file")
    return os.path.abspath(os.path.expanduser(text))


def directory_path(text: str) -> str:
    """A directory given on the command line, made absolute here so that every child finds it wherever it runs."""
    if not text:
        raise argparse.ArgumentTypeError("expected a directory")
    return os.path.abspath(os.path.expanduser(text))


@dataclasses.dataclass(frozen=True)
class GoldenOptions:
    """--save-golden / --golden: each config's inputs, weights and eager result stored, or checked against."""

    save_dir: Optional[str] = GOLDEN.option(
        None, CHILD, "store each config's inputs, starting weights and eager result (eval: the output; train: loss "
        "and gradients after 2 steps) in DIR/<suite>/<model>/<test>-<precision>/ (safetensors, manifest.json with "
        "versions and machine); record key `golden`", name="--save-golden", type=directory_path, metavar="DIR")
    check_dir: Optional[str] = GOLDEN.option(
        None, CHILD, "run each config on the inputs and weights stored in DIR and check its result against the "
        "stored one (any backend); the record's `golden`: status pass, fail_golden, no_golden or bad_golden, max "
        "abs and rel error", name="--golden", type=directory_path, metavar="DIR")
    atol: Optional[float] = GOLDEN.option(
        None, CHILD, "absolute tolerance of --golden (default: the entry's, by the result's dtype)",
        name="--golden-atol", type=finite_non_negative_float, metavar="ATOL")
    rtol: Optional[float] = GOLDEN.option(
        None, CHILD, "relative tolerance of --golden (default: the entry's, by the result's dtype)",
        name="--golden-rtol", type=finite_non_negative_float, metavar="RTOL")

    def request(self) -> Optional[dict]:
        """The golden flags set, by their field names, or None when none is: the record's `golden_request` and part
        of its fingerprint (results/records.fingerprint)."""
        found = {name: getattr(self, name) for name in ("save_dir", "check_dir", "atol", "rtol")}
        return {name: value for name, value in found.items() if value is not None} or None


@dataclasses.dataclass(frozen=True)
class TimingOptions:
    """--pure-wall-time: per-iteration device time with CUDA events."""

    pure_wall_time: bool = TIMING.switch(BOTH, "time each iteration with CUDA events (device time only, L2 cache "
        "flushed between calls, minimum over ~100 ms of calls); CUDA configs only, others are dropped with the reason")


@dataclasses.dataclass(frozen=True)
class NoiseOptions:
    """--cpu-affinity: the cores each child is pinned to (a spec such as "2-3"; None: not pinned)."""

    cpu_affinity: Optional[str] = NOISE.option(
        None, BOTH, "pin each child to these CPU cores, e.g. 2-3 or 0,2 (the record's environment.cpu_affinity says "
        "which cores each child had)", type=cpu_affinity_spec, metavar="CORES")
