#!/usr/bin/env python3
"""The runner's own cost, each child spawned (a fresh interpreter) and forked (from a fork server), in one run:
wall time per config of a sweep of eager configs of the smallest dummy model, beside `python -c "import torch"`
measured in the same run (the floor of a spawned child), and their ratio (targets: <= 1.5 spawned, <= 0.3
forked); then a sweep of 50 microbenchmark configs end to end, forked against spawned (target: >= 2x)."""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAUNCHES = ("spawn", "fork")


def import_torch_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - started


def run_sweep(args: list, out: Path, launch: str) -> tuple:
    """(wall seconds of the whole sweep, median run_seconds of its children) with --launch=`launch`."""
    target = out / launch
    started = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "experiment_runner.py"), *args, f"--launch={launch}",
                    f"--output-dirname={target}", "--log-level=warning"], check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    with open(target / "results.jsonl", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    assert all(r["status"] == "ok" and r["environment"]["launch"] == launch for r in records), target
    return seconds, statistics.median(r["run_seconds"] for r in records)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-sizes", type=int, default=4, help="batch sizes per test (configs = 2 x this)")
    parser.add_argument("--microbench-configs", type=int, default=50, help="shapes in the microbench sweep")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    eager = ["--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
             "--test=train", *[f"--batch-size={2 ** i}" for i in range(args.batch_sizes)]]
    micro = ["--suite-name=microbench", "--op=matmul", f"--shapes=square:8:{8 * args.microbench_configs}:8",
             "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=3", "--warmup=1"]
    configs = 2 * args.batch_sizes
    try:
        floor = [import_torch_seconds() for _ in range(3)]
        overhead = {launch: run_sweep(eager, out / "eager", launch) for launch in LAUNCHES}
        sweeps = {launch: run_sweep(micro, out / "micro", launch) for launch in LAUNCHES}
        floor += [import_torch_seconds() for _ in range(3)]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    torch_import = statistics.median(floor)
    print(f'python -c "import torch": {torch_import:.3f} s (median of {len(floor)}, before and after)')
    print(f"{configs} eager configs of dummy/mlp (parent, probe, fork server and children included):")
    for launch, (seconds, child) in overhead.items():
        per_config = seconds / configs
        target = 1.5 if launch == "spawn" else 0.3
        print(f"  {launch:5}  sweep {seconds:6.2f} s  per config {per_config:.3f} s  ratio {per_config / torch_import:.2f} "
              f"(target <= {target})  child alone {child:.3f} s  ratio {child / torch_import:.2f}")
    print(f"{args.microbench_configs} microbench configs (matmul, square shapes), end to end:")
    for launch, (seconds, child) in sweeps.items():
        print(f"  {launch:5}  sweep {seconds:6.2f} s  child alone {child:.3f} s (median)")
    print(f"  fork is {sweeps['spawn'][0] / sweeps['fork'][0]:.2f}x faster end to end (target >= 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
