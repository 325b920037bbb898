"""--cuda-profile=dashboard: PyTorch's CUDA dashboard setup as one named choice (docs/runner.md, "The CUDA
dashboard's setup"), and whether a config runs Inductor with CUDA graphs (every tool's labels say so). No torch:
the parent plans with it; the child applies the settings and records each part (features/compile_options/child.py).

What PyTorch's nightly CUDA dashboard runs (its CI script's performance jobs and the dynamo harness they call; facts
in the team's notes): inference in bfloat16 and training in amp; `--cold-start-latency` (a fresh Inductor cache per
run); Inductor with CUDA graphs, the harness's default (`triton.cudagraphs = not --disable-cudagraphs`; the
dashboard's "cudagraphs" rows), except the models its suites list under `disable_cudagraph`; TF32 on for float32
matmuls (the harness sets `torch.backends.cuda.matmul.allow_tf32 = True` when imported), cuDNN as torch leaves it
(TF32 on, benchmark and deterministic off: the harness changes them only under `--accuracy`), but for the models
whose TorchBench code turns cuDNN's autotuner on when it builds them (CUDNN_BENCHMARK).
"""

from __future__ import annotations

from typing import Optional

from benchmarks.config import backend_registry
from benchmarks.config.axis import Axis, ONE_PER_SWEEP
from benchmarks.config.inductor_settings import settings_of
from benchmarks.config.record_key import RecordKey, feature

KEY = "cuda_profile"
DASHBOARD = "dashboard"
NAMES = (DASHBOARD,)
PRECISIONS = {"eval": "bf16", "train": "amp"}  # the dashboard's --bfloat16 inference, --amp training
MATMUL_PRECISION = "high"  # --matmul-precision's word for TF32 float32 matmuls (allow_tf32 = True)
COMPILE_CACHE = "cold"  # --cold-start-latency: every run compiles with an empty cache
# The harness's models that run without CUDA graphs (its suites' yaml, key disable_cudagraph), by our suite name.
NO_CUDAGRAPHS = {"torchbench": ("tts_angular",)}
NO_CUDAGRAPHS_SOURCE = "the dynamo harness's torchbench.yaml, disable_cudagraph"
# The models the dashboard runs with cuDNN's autotuner on (torch.backends.cudnn.benchmark = True, deterministic
# False), by our suite name: TorchBench builds these torchvision models through its TorchVisionModel factory, which
# sets both as it builds one. (Our torchbench suite loads TorchBench's own model files: those that set it, do.)
CUDNN_BENCHMARK = {"torchvision": ("alexnet", "densenet121", "mnasnet1_0", "mobilenet_v2", "mobilenet_v3_large",
                                   "resnet152", "resnet18", "resnet50", "resnext50_32x4d", "shufflenet_v2_x1_0",
                                   "squeezenet1_1", "vgg16")}
CUDNN_BENCHMARK_SOURCE = "TorchBench's TorchVisionModel factory (torchbenchmark/util/framework/vision/model_factory.py)"
# torch.compile's modes that decide CUDA graphs themselves (on CUDA): whether they capture them
GRAPH_MODES = {"reduce-overhead": True, "max-autotune": True, "max-autotune-no-cudagraphs": False}


def parse(value) -> Optional[str]:
    if value is None:
        return None
    if value not in NAMES:
        raise ValueError(f"cuda_profile must be null or one of {', '.join(NAMES)}, not {value!r}")
    return value


def settle(experiment):
    """The config as the profile runs it: its precision, when none was asked for, is the dashboard's for its test
    (the suite may still force another per model, and says why)."""
    if experiment.cuda_profile != DASHBOARD or experiment.precision is not None:
        return experiment
    return experiment.with_(precision=PRECISIONS[experiment.test])


def contradiction(profile: Optional[str], matmul_precisions: tuple, disable_tf32: bool) -> Optional[str]:
    """One line when a flag contradicts the profile's TF32 matmuls (`matmul_precisions`: the values asked for),
    else None."""
    if profile != DASHBOARD:
        return None
    if disable_tf32 or "highest" in matmul_precisions:
        flag = "--disable-tf32" if disable_tf32 else "--matmul-precision=highest"
        return (f"--cuda-profile=dashboard runs float32 matmuls in TF32 as the dashboard does; {flag} contradicts "
                "it: pass one of them")
    return None


def options_contradiction(options) -> Optional[str]:
    """`contradiction` for the sweep's options (RunOptions)."""
    return contradiction(options.axes.cuda_profile, tuple(options.axes.matmul_precision),
                         options.diagnostics.disable_tf32)


def unsupported_reason(experiment) -> Optional[str]:
    if experiment.cuda_profile == DASHBOARD and experiment.accelerator != "cuda":
        return f"--cuda-profile=dashboard is PyTorch's CUDA dashboard setup; accelerator {experiment.accelerator} " \
               "has none (--cpu-profile=dashboard is the CPU's)"
    return None


SUPPORT_RULES = [("cuda-profile-on-cuda", lambda e, c: unsupported_reason(e) is not None,
                  lambda e, c: unsupported_reason(e))]


def no_cudagraphs_reason(model: dict, experiment: dict) -> Optional[str]:
    """Why the profile runs this model without CUDA graphs (the harness's list), or None."""
    if experiment.get(KEY) != DASHBOARD:
        return None
    if model.get("model_name") in NO_CUDAGRAPHS.get(model.get("suite_name"), ()):
        return f"{model.get('model_name')} runs without CUDA graphs on the dashboard ({NO_CUDAGRAPHS_SOURCE})"
    return None


def cudnn_benchmark_reason(model: dict, experiment: dict) -> Optional[str]:
    """Why the profile runs this model with cuDNN's autotuner on (as the dashboard does), or None."""
    if experiment.get(KEY) != DASHBOARD or experiment.get("accelerator") != "cuda" or experiment.get("xla"):
        return None
    if model.get("model_name") in CUDNN_BENCHMARK.get(model.get("suite_name"), ()):
        return f"{model.get('model_name')} runs with cudnn.benchmark on the dashboard, set by {CUDNN_BENCHMARK_SOURCE}"
    return None


def runs_cudagraphs(model: dict, experiment: dict) -> bool:
    """Whether a config runs Inductor with CUDA graphs, from its keys (a record's experiment dict): a CUDA config of an
    Inductor backend whose compile mode captures them (reduce-overhead, max-autotune), whose Inductor settings turn
    them on (triton.cudagraphs=True), or under the dashboard profile (but for the models it lists). Plain
    `--dynamo=inductor` is torch.compile's default: no CUDA graphs (the dashboard's "default" rows). The readers' hook
    too (features.declared: results/measurement.Measurement.cudagraphs, for records without the child's word)."""
    if experiment.get("accelerator") != "cuda" or experiment.get("xla") or \
            not backend_registry.uses_inductor(experiment.get("dynamo")):
        return False
    try:
        settings = settings_of(experiment.get("inductor_config"))
    except ValueError:  # a record's malformed text: its other keys decide
        settings = {}
    if "triton.cudagraphs" in settings:
        return bool(settings["triton.cudagraphs"])
    mode = experiment.get("compile_mode")
    if mode in GRAPH_MODES:
        return GRAPH_MODES[mode]
    return experiment.get(KEY) == DASHBOARD and no_cudagraphs_reason(model, experiment) is None


def matmul_precision(experiment, asked: Optional[str]) -> Optional[str]:
    """--matmul-precision for the config: what was asked, else the profile's (TF32 matmuls), else None (torch's)."""
    return asked or (MATMUL_PRECISION if experiment.cuda_profile == DASHBOARD else None)


ORDER = 90  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "cuda_profile",
        "dashboard: PyTorch's CUDA dashboard setup for every config: inference in bf16 and training in "
        "amp (unless --precision), Inductor with CUDA graphs (but for the harness's listed models), TF32 float32 "
        "matmuls, cuDNN as torch leaves it, a cold compile cache; each part in the record's "
        "environment.cuda_profile; experiment key `cuda_profile`",
        parse=parse, kind=ONE_PER_SWEEP, choices=NAMES, settle=settle,
        support_rules=SUPPORT_RULES, contradiction=options_contradiction,
        label="cuda-{}", slug="cuda-profile-{}", example="dashboard",  # the CPU profile's is another setup,
        meaning="the dashboard's CUDA profile (null: none)"),
)


# The record's keys this feature writes (results/record_schema.py gathers them into the record's).
RECORD_KEYS = (
    RecordKey("cudagraphs", "flag", feature("cuda_profile"),
              "CUDA Inductor configs: whether Inductor captured CUDA graphs"),
    RecordKey("cudagraphs_reason", "text", feature("cuda_profile"), "why a profile's model runs without CUDA graphs"),
    RecordKey("cudagraph_skips", "count", feature("cuda_profile"), "graphs Inductor ran without CUDA graphs"),
)
