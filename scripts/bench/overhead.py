#!/usr/bin/env python3
"""The runner's own cost, each child spawned (a fresh interpreter) and forked (from a fork server), in one run,
beside `python -c "import torch"` measured in the same run (the floor of a spawned child):
- per eager config of the smallest dummy model: the slope between a short and a long sweep (what one more
  config costs), and what a sweep pays once (the parent, the fork server's imports); targets for the ratio to
  `import torch`: <= 1.5 spawned, <= 0.3 forked; and the whole sweep of 8 configs divided by 8;
- a sweep of 50 microbenchmark configs end to end, forked against spawned (target: >= 2x)."""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


def eager_args(configs: int) -> list:
    """`configs` eager configs of dummy/mlp: eval and train at configs/2 small batch sizes."""
    return ["--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
            "--test=train", *[f"--batch-size={b}" for b in range(1, configs // 2 + 1)]]


def main() -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--microbench-configs", type=int, default=50, help="shapes in the microbench sweep")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    # Two sweep sizes per launch (a spawned config costs seconds, a forked one a fraction): the common size, 8,
    # gives the whole-sweep figure for both.
    sizes = {"spawn": (4, 8), "fork": (8, 24)}
    micro = ["--suite-name=microbench", "--op=matmul", f"--shapes=square:8:{8 * args.microbench_configs}:8",
             "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=3", "--warmup=1"]
    try:
        floor = [import_torch_seconds() for _ in range(3)]
        eager = {launch: {n: run_sweep(eager_args(n), out / f"eager{n}", launch) for n in sizes[launch]}
                 for launch in LAUNCHES}
        sweeps = {launch: run_sweep(micro, out / "micro", launch) for launch in LAUNCHES}
        floor += [import_torch_seconds() for _ in range(3)]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    torch_import = statistics.median(floor)
    print(f'python -c "import torch": {torch_import:.3f} s (median of {len(floor)}, before and after)')
    print("eager configs of dummy/mlp (eval and train): per config = the slope between the two sweeps; once = what "
          "the sweep pays besides (parent, fork server's imports):")
    for launch in LAUNCHES:
        (short, (short_s, _)), (long, (long_s, child)) = sorted(eager[launch].items())
        per_config = (long_s - short_s) / (long - short)
        whole = eager[launch][8][0]
        target = 1.5 if launch == "spawn" else 0.3
        print(f"  {launch:5}  per config {per_config:.3f} s  ratio {per_config / torch_import:.2f} (target <= {target})"
              f"  once {short_s - short * per_config:5.2f} s  |  sweep of 8: {whole:5.2f} s, {whole / 8:.3f} s per "
              f"config, ratio {whole / 8 / torch_import:.2f}  |  child alone {child:.3f} s (median)")
    print(f"{args.microbench_configs} microbench configs (matmul, square shapes), end to end:")
    for launch, (seconds, child) in sweeps.items():
        print(f"  {launch:5}  sweep {seconds:6.2f} s  child alone {child:.3f} s (median)")
    print(f"  fork is {sweeps['spawn'][0] / sweeps['fork'][0]:.2f}x faster end to end (target >= 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
