#!/usr/bin/env python3
"""A plain CUDA timing loop for one model, in a process of its own: the yardstick of `make gpu-check`
(scripts/gpu/check.py) for our runner's times. The same model and inputs as our sweep (built by our suite), and
nothing else of ours: torch.compile as asked, autocast or a cast as the precision says, `--warmup` untimed calls,
then `--iterations` calls, each closed by torch.cuda.synchronize() and timed on the host's clock. Prints one JSON
line: the median, minimum and mean milliseconds per iteration, and the setup it ran under.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time

from benchmarks.features import precision as precisions


def parse(argv):
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", required=True, help="our suite that builds the model (torchvision, timm, dummy)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--model-params", default="{}", help="our --model-params JSON (e.g. image_size)")
    parser.add_argument("--backend", choices=("eager", "inductor"), default="eager")
    parser.add_argument("--cudagraphs", action="store_true", help="Inductor with CUDA graphs (triton.cudagraphs)")
    parser.add_argument("--precision", choices=sorted(precisions.PRECISIONS), default="fp32",
                        help="our precision names: the dtypes they mean on the device (features/precision/__init__.py)")
    parser.add_argument("--tf32", action="store_true", help="TF32 for float32 matmuls and cuDNN")
    parser.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: the script's own test")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=30)
    return parser.parse_args(argv)


def build(options):
    """Our suite's model and inputs on the GPU (random weights, nothing downloaded)."""
    import torch

    from benchmarks.config.experiment_config import ExperimentConfig
    from benchmarks.config.run_options import RunOptions
    from benchmarks.suites import load_suite, model_config

    suite = load_suite(options.suite)
    params = json.loads(options.model_params)
    config = model_config(options.suite, options.model, **({"params": params} if params else {}))
    experiment = ExperimentConfig(options.device, None, None, "eval", batch_size=options.batch_size)
    torch.manual_seed(0)
    bm = suite.build(config, experiment, options.device, RunOptions().parsed_flags)
    return bm.module.eval(), tuple(bm.example_inputs), dict(bm.example_kwargs)


def main(argv=None) -> int:
    options = parse(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = options.tf32
    torch.backends.cudnn.allow_tf32 = options.tf32
    torch.backends.cudnn.benchmark = options.cudnn_benchmark
    module, args, kwargs = build(options)
    autocast = precisions.autocast_dtype(options.precision, options.device)
    cast = precisions.cast_dtype(options.precision)
    if cast:
        dtype = getattr(torch, cast)
        module = module.to(dtype)
        args = tuple(a.to(dtype) if torch.is_tensor(a) and a.is_floating_point() else a for a in args)
    if options.backend == "inductor":
        import torch._inductor.config as inductor_config

        inductor_config.triton.cudagraphs = options.cudagraphs
        module = torch.compile(module, backend="inductor")

    device = options.device
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step():
        with torch.no_grad(), torch.autocast(device, dtype=getattr(torch, autocast or "bfloat16"),
                                             enabled=autocast is not None):
            return module(*args, **kwargs)

    gc.collect()
    for _ in range(options.warmup):
        step()
    sync()
    times = []
    for _ in range(options.iterations):
        start = time.perf_counter()
        step()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"median_ms": statistics.median(times), "min_ms": min(times), "mean_ms": statistics.fmean(times),
                      "iterations": options.iterations, "warmup": options.warmup, "torch": torch.__version__,
                      "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
