#!/usr/bin/env python3
"""Does the runner's time per iteration tell the truth? Each config is timed, in pairs interleaved in separate
processes, by our runner (a real experiment_runner.py sweep of that one config; its record's median per_iter_time)
and by a plain loop in a fresh process (the suite's same model and inputs, the child's allocator settings,
torch.compile'd for Inductor, timed by torch.utils.benchmark.Timer.blocked_autorange under one torch.no_grad(), on
as many threads as the runner's child). Each line: the median ratio ours/plain over the pairs, its distribution-free
interval (the order statistics around the median, with their coverage), both medians, the block size the runner
used, and the load average over the pairs. Goal: every ratio within 3% of 1 on a quiet machine (docs/measurement.md,
"The timed region").

    python -m scripts.bench.timing [--pairs N] [--configs cnn-eager,mlp-inductor,...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.results.records import RecordStatus

ROOT = Path(__file__).resolve().parents[2]
RESNET_PARAMS = '{"image_size": 64}'
# name -> (suite, model, dynamo backend or None, --model-params or None)
CONFIGS = {
    "cnn-eager": ("dummy", "cnn", None, None),
    "cnn-inductor": ("dummy", "cnn", "inductor", None),
    "mlp-eager": ("dummy", "mlp", None, None),
    "mlp-inductor": ("dummy", "mlp", "inductor", None),
    "resnet18-64px-eager": ("torchvision", "resnet18", None, RESNET_PARAMS),
    "resnet18-64px-inductor": ("torchvision", "resnet18", "inductor", RESNET_PARAMS),
}
DEFAULT_CONFIGS = ("cnn-eager", "cnn-inductor", "mlp-eager", "mlp-inductor", "resnet18-64px-eager")
GOAL = 0.03  # every ratio within 3% of 1
PLAIN_MIN_RUN_TIME = 0.5  # seconds blocked_autorange measures for (its default is 0.2)


def ours(name: str, out: Path) -> dict:
    """Our runner on one config, a whole sweep in its own processes: its record's median per_iter_time."""
    suite, model, dynamo, params = CONFIGS[name]
    target = out / f"{name}-{time.monotonic_ns()}"
    command = [sys.executable, str(ROOT / "experiment_runner.py"), f"--suite-name={suite}", "-k", f"^{model}$",
               "--accelerator=cpu", "--xla=None", f"--dynamo={dynamo}", "--test=eval", "--no-roofline",
               f"--output-dirname={target}", "--log-level=warning"]
    if params:
        command.append(f"--model-params={params}")
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    with open(target / "results.jsonl", encoding="utf-8") as handle:
        (record,) = [json.loads(line) for line in handle if line.strip()]
    shutil.rmtree(target, ignore_errors=True)
    if record["status"] != RecordStatus.OK:
        raise SystemExit(f"{name}: our runner's record is {record['status']}: {record.get('error')}")
    return {"seconds": statistics.median(record["metrics"]["per_iter_time"]), "block": record["iterations_per_run"]}


def plain(name: str) -> dict:
    """The plain loop on one config, in a fresh process (this module's --plain), under the C allocator's settings
    the runner's child has by default (glibc's thresholds fixed: features/allocator), so that the two differ by
    their timed region alone."""
    from benchmarks.features.allocator import GLIBC_VARIABLES

    done = subprocess.run([sys.executable, "-m", "scripts.bench.timing", "--plain", name], check=True, cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, **GLIBC_VARIABLES})
    return json.loads(done.stdout.strip().splitlines()[-1])


def plain_loop(name: str) -> dict:
    """In this process: the suite's model and inputs as the runner builds them (eval, CPU, its seed), compiled as
    the runner compiles them, warmed up, then timed by blocked_autorange with gradients off around it all."""
    import torch
    import torch.utils.benchmark as benchmark

    from benchmarks.child import backends
    from benchmarks.config.experiment_config import ExperimentConfig
    from benchmarks.suites import load_suite

    suite, model, dynamo, params = CONFIGS[name]
    experiment = ExperimentConfig("cpu", None, dynamo, "eval")
    model_config = {"suite_name": suite, "model_name": model, **({"params": json.loads(params)} if params else {})}
    backends.seed_everything(experiment)
    bm = load_suite(suite).build(model_config, experiment, "cpu", None)
    module = bm.module.eval()
    call = torch.compile(module, backend=dynamo) if dynamo else module
    args, kwargs = tuple(bm.example_inputs), dict(bm.example_kwargs)
    with torch.no_grad():
        for _ in range(3):  # the first compiles
            call(*args, **kwargs)
        timer = benchmark.Timer("call(*args, **kwargs)", globals={"call": call, "args": args, "kwargs": kwargs},
                                num_threads=torch.get_num_threads())  # Timer's default is one thread
        measured = timer.blocked_autorange(min_run_time=PLAIN_MIN_RUN_TIME)
    return {"seconds": measured.median, "block": measured.number_per_run}


def binomial_tail(k: int, n: int) -> float:
    """P(B <= k) for B ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


def median_interval(values: list, confidence: float = 0.9) -> tuple:
    """(low, high, coverage): the narrowest pair of order statistics s[k], s[n-1-k] that holds the median with at
    least `confidence` (distribution-free), else the widest (min, max) with its own coverage."""
    ordered, n = sorted(values), len(values)
    k = 0
    while k + 1 < n - 1 - (k + 1) and 1 - 2 * binomial_tail(k + 1, n) >= confidence:
        k += 1
    return ordered[k], ordered[n - 1 - k], 1 - 2 * binomial_tail(k, n)


def run_pairs(names: list, pairs: int, out: Path) -> tuple:
    """Every config once per pair index, ours and the plain loop in alternating order; the loads seen."""
    found = {name: [] for name in names}
    loads = []
    for index in range(pairs):
        for name in names:
            loads.append(os.getloadavg()[0])
            if index % 2:
                theirs = plain(name)
                mine = ours(name, out)
            else:
                mine = ours(name, out)
                theirs = plain(name)
            found[name].append((mine, theirs))
            print(f"  pair {index + 1}/{pairs} {name}: ours {mine['seconds'] * 1e6:.1f} us (block {mine['block']}), "
                  f"plain {theirs['seconds'] * 1e6:.1f} us (block {theirs['block']})", file=sys.stderr, flush=True)
    loads.append(os.getloadavg()[0])
    return found, loads


def report(found: dict, loads: list) -> bool:
    """The table; True when every ratio is within the goal."""
    print(f"load average (1 min) over the pairs: {min(loads):.2f}-{max(loads):.2f}; cpu: {os.cpu_count()} cores")
    print(f"{'config':24} {'ours/plain':>10} {'interval':>17} {'cover':>5} {'ours us':>9} {'plain us':>9} "
          f"{'block':>6}  goal")
    every = True
    for name, pairs in found.items():
        ratios = [mine["seconds"] / theirs["seconds"] for mine, theirs in pairs]
        low, high, coverage = median_interval(ratios)
        ratio = statistics.median(ratios)
        within = abs(ratio - 1) <= GOAL
        every &= within
        mine = statistics.median(m["seconds"] for m, _ in pairs) * 1e6
        theirs = statistics.median(t["seconds"] for _, t in pairs) * 1e6
        blocks = sorted({m["block"] for m, _ in pairs})
        print(f"{name:24} {ratio:10.3f} {f'[{low:.3f}, {high:.3f}]':>17} {coverage:5.0%} {mine:9.1f} {theirs:9.1f} "
              f"{'/'.join(map(str, blocks)):>6}  {'ok' if within else 'MISSED'}")
    return every


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3, help="interleaved pairs per config (default 3)")
    parser.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                        help=f"comma-separated, of {', '.join(CONFIGS)} (default: {', '.join(DEFAULT_CONFIGS)})")
    parser.add_argument("--plain", choices=sorted(CONFIGS), help=argparse.SUPPRESS)  # one plain loop, as a child
    args = parser.parse_args(argv)
    if args.plain:
        print(json.dumps(plain_loop(args.plain)))
        return 0
    names = [name.strip() for name in args.configs.split(",") if name.strip()]
    unknown = [name for name in names if name not in CONFIGS]
    if unknown or not names or args.pairs < 1:
        parser.error(f"--configs takes {', '.join(CONFIGS)} (got {args.configs!r}); --pairs at least 1")
    out = Path(tempfile.mkdtemp(prefix="bench-timing-"))
    try:
        found, loads = run_pairs(names, args.pairs, out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return 0 if report(found, loads) else 1


if __name__ == "__main__":
    sys.exit(main())
