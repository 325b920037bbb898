"""The CUDA setup a config runs under, in the child: Inductor's CUDA graphs (the record's `cudagraphs`, and
`cudagraph_skips` when Inductor ran some graphs without them) and --cuda-profile=dashboard's parts, each recorded
(environment.cuda_profile). The rules are features/cuda_profile/__init__.py's; torch inside the functions."""

from __future__ import annotations

import logging
from typing import Optional

from benchmarks.child import torch_internals
from benchmarks.config import backend_registry
from benchmarks.config.inductor_settings import settings_of
from benchmarks.features import cuda_profile, precision

log = logging.getLogger(__name__)


def uses_inductor_on_cuda(experiment) -> bool:
    return (experiment.accelerator == "cuda" and not experiment.xla
            and backend_registry.uses_inductor(experiment.dynamo))


def before_build(model_config: dict, experiment) -> dict:
    """Before the model is built (feature method `before_build`): cuDNN's autotuner on for the profile's models that the dashboard runs with it
    (environment.cuda_profile says so); Inductor's CUDA graphs on where the config's keys say so and neither its
    compile mode nor its Inductor settings decide it themselves (the profile's). Returns the record's keys:
    `cudagraphs` (CUDA Inductor configs) and `cudagraphs_reason` (the profile's model that runs without them)."""
    keys = experiment.to_dict()
    if cuda_profile.cudnn_benchmark_reason(model_config, keys):
        import torch

        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = True, False
    if not uses_inductor_on_cuda(experiment):
        return {}
    on = cuda_profile.runs_cudagraphs(model_config, keys)
    decided_elsewhere = (experiment.compile_mode in cuda_profile.GRAPH_MODES
                         or "triton.cudagraphs" in settings_of(experiment.inductor_config))
    if on and not decided_elsewhere:
        def graphs_on() -> bool:
            import torch._inductor.config as inductor_config

            inductor_config.triton.cudagraphs = True
            return True

        # Inductor's config is not torch's API: a torch that moved the knob runs without graphs, and says why
        on = torch_internals.read(torch_internals.CUDAGRAPHS, "torch._inductor.config.triton.cudagraphs", graphs_on,
                                  False)
    found = {"cudagraphs": on}
    reason = cuda_profile.no_cudagraphs_reason(model_config, keys)
    if reason:
        found["cudagraphs_reason"] = reason
    return found


def cudagraph_skips() -> Optional[int]:
    """(Feature method `cudagraph_skips`.) How many of the config's graphs Inductor ran without CUDA graphs (its own counter; its reasons are in the
    log), or None where this torch does not count them (the record's `absent` says why)."""
    def skips() -> int:
        from torch._dynamo.utils import counters

        return int(counters.get("inductor", {}).get("cudagraph_skips", 0))

    return torch_internals.read(torch_internals.CUDAGRAPH_SKIPS, "torch._dynamo.utils.counters", skips)


def cuda_profile_facts(experiment, record: dict) -> Optional[dict]:
    """environment.cuda_profile (feature method `cuda_profile_facts`): each part of the dashboard's setup as it ran, and what differs from the dashboard's
    (a precision or matmul precision asked for by hand, another compile cache); None without the profile."""
    if experiment.cuda_profile != cuda_profile.DASHBOARD:
        return None
    import torch

    ran = experiment.precision or precision.DEFAULT
    wanted = cuda_profile.PRECISIONS[experiment.test]
    matmul = (record.get("diagnostics") or {}).get("matmul_precision", {}).get("torch")
    facts = {
        "name": cuda_profile.DASHBOARD,
        "precision": ran,
        "matmul_precision": matmul,
        "cudnn": {"allow_tf32": torch.backends.cudnn.allow_tf32, "benchmark": torch.backends.cudnn.benchmark,
                  "deterministic": torch.backends.cudnn.deterministic},
        "compile_cache": experiment.compile_cache,
        "cudagraphs": record.get("cudagraphs"),
        "differs": [],
    }
    if ran != wanted:
        facts["differs"].append(f"precision {ran} (the dashboard runs {experiment.test} in {wanted})")
    if matmul != "high":
        facts["differs"].append(f"float32 matmul precision {matmul} (the dashboard's TF32: high)")
    if experiment.dynamo and experiment.compile_cache != cuda_profile.COMPILE_CACHE:
        facts["differs"].append(f"compile cache {experiment.compile_cache} (the dashboard compiles cold)")
    cudnn_reason = cuda_profile.cudnn_benchmark_reason(record.get("model") or {}, experiment.to_dict())
    if cudnn_reason:
        facts["cudnn_reason"] = cudnn_reason
    if record.get("cudagraphs_reason"):  # as the dashboard runs it too
        facts["cudagraphs_reason"] = record["cudagraphs_reason"]
    return facts
