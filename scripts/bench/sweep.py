#!/usr/bin/env python3
"""`make bench`'s sweep for the machine it runs on: the GPU's where torch sees a CUDA device, else the CPU's
(README.md; docs/runner.md, "make bench on a GPU"). The Makefile asks this script three things:

    python -m scripts.bench.sweep --accelerator      # cuda or cpu: what this machine has (BENCH_ACCELERATOR chooses)
    python -m scripts.bench.sweep --flags cuda       # experiment_runner.py's sweep flags for that accelerator
    python -m scripts.bench.sweep --describe cuda    # the line `make bench` prints: which sweep it runs, and why
                                                     # (--chosen: BENCH_ACCELERATOR chose it, torch was not asked;
                                                     # --own-sweep: BENCH_SWEEP gave the flags)

BENCH_ACCELERATOR=cpu or =cuda (the environment's, or make's) chooses without asking torch (how the tests check the
CUDA branch on a machine without a GPU); any other value is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys

VARIABLE = "BENCH_ACCELERATOR"
# The dummy models (an MLP, a CNN, a dict-output model), inference and training, 5 timed runs; --verify is the
# recipe's, for both.
SUITE, COMMON = ["--suite-name=dummy"], ["--test=eval", "--test=train", "--repeat=5"]
SWEEPS = {
    # eager, Inductor, PyTorch/XLA lazy tensors and PyTorch/XLA + openxla (PJRT_DEVICE=CPU)
    "cpu": ["--accelerator=cpu", "--xla=None", "--xla=PJRT", "--dynamo=None", "--dynamo=inductor", "--dynamo=openxla"],
    # eager, Inductor without CUDA graphs (torch.compile's default) and with them (reduce-overhead); no XLA on CUDA
    "cuda": ["--accelerator=cuda", "--xla=None", "--dynamo=None", "--dynamo=inductor", "--compile-mode=default",
             "--compile-mode=reduce-overhead"],
}
WHAT = {
    "cpu": "eager, Inductor, PyTorch/XLA lazy tensors and PyTorch/XLA + openxla on the CPU",
    "cuda": "eager, and Inductor without and with CUDA graphs (--compile-mode=reduce-overhead), on the GPU",
}


class Refused(Exception):
    """A bad BENCH_ACCELERATOR value: one line, exit 2."""


def chosen(environ) -> str | None:
    """BENCH_ACCELERATOR's value (cpu or cuda), None when unset; Refused for another."""
    value = (environ.get(VARIABLE) or "").strip().lower()
    if not value:
        return None
    if value not in SWEEPS:
        raise Refused(f"{VARIABLE}={environ[VARIABLE]!r}: make bench runs on cpu or cuda")
    return value


def cuda_device() -> tuple:
    """(the first CUDA device's name or None, why not): asked of torch, in this process (never the sweep's)."""
    try:
        import torch
    except Exception as exc:  # no torch, or one that does not load: the CPU sweep says why the runner would fail
        return None, f"torch does not import ({type(exc).__name__})"
    if not torch.cuda.is_available():
        return None, "torch.cuda.is_available() is False"
    return torch.cuda.get_device_name(0), None


def accelerator(environ) -> str:
    """The accelerator `make bench` sweeps: BENCH_ACCELERATOR's, else cuda where torch sees a device, else cpu."""
    return chosen(environ) or ("cuda" if cuda_device()[0] else "cpu")


def flags(accelerator_name: str) -> list:
    return SUITE + SWEEPS[accelerator_name] + COMMON


def describe(accelerator_name: str, by_variable: bool, own_sweep: bool = False) -> str:
    """Which sweep `make bench` runs here, and why (`by_variable`: BENCH_ACCELERATOR chose it; `own_sweep`: BENCH_SWEEP
    gave its flags)."""
    if by_variable:
        why = f"{VARIABLE}={accelerator_name}"
    else:
        name, missing = cuda_device()
        why = f"CUDA device found: {name}" if name else f"no CUDA device: {missing}"
    sweep = "the GPU's sweep" if accelerator_name == "cuda" else "the CPU sweep"
    what = "BENCH_SWEEP's flags" if own_sweep else WHAT[accelerator_name]
    return f"make bench: {sweep} ({why}): {what}, each config checked against eager (--verify)"


def main(argv=None, environ=None) -> int:
    environ = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    ask = parser.add_mutually_exclusive_group(required=True)
    ask.add_argument("--accelerator", action="store_true", help="print cuda or cpu: what make bench sweeps here")
    ask.add_argument("--flags", metavar="ACCELERATOR", help="print experiment_runner.py's sweep flags for it")
    ask.add_argument("--describe", metavar="ACCELERATOR", help="print which sweep make bench runs, and why")
    parser.add_argument("--chosen", action="store_true", help="with --describe: BENCH_ACCELERATOR chose it")
    parser.add_argument("--own-sweep", action="store_true", help="with --describe: BENCH_SWEEP gave the flags")
    args = parser.parse_args(argv)
    try:
        asked = args.flags or args.describe
        if asked is not None and asked not in SWEEPS:  # make's BENCH_ACCELERATOR, as given
            raise Refused(f"{VARIABLE}={asked!r}: make bench runs on cpu or cuda")
        if args.accelerator:
            print(accelerator(environ))
        elif args.flags:
            print(" ".join(flags(args.flags)))
        else:
            print(describe(args.describe, args.chosen, args.own_sweep))
    except Refused as exc:
        print(f"bench_sweep.py: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
