#!/usr/bin/env python3
"""The runner's own cost: wall time per config of a sweep of eager configs of the smallest dummy model,
beside `python -c "import torch"` measured in the same run (the floor: every child imports torch).
Prints both and their ratio (target: <= 1.5)."""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def import_torch_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-sizes", type=int, default=4, help="batch sizes per test (configs = 2 x this)")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    sweep = [sys.executable, str(ROOT / "experiment_runner.py"), "--suite-name=dummy", "-k", "^mlp$",
             "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--test=train",
             *[f"--batch-size={2 ** i}" for i in range(args.batch_sizes)], f"--output-dirname={out}",
             "--log-level=warning"]
    configs = 2 * args.batch_sizes
    try:
        floor = [import_torch_seconds() for _ in range(3)]
        started = time.perf_counter()
        subprocess.run(sweep, check=True, stdout=subprocess.DEVNULL)
        sweep_seconds = time.perf_counter() - started
        floor += [import_torch_seconds() for _ in range(3)]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    per_config = sweep_seconds / configs
    torch_import = statistics.median(floor)
    print(f"sweep: {configs} eager configs of dummy/mlp in {sweep_seconds:.2f} s (parent, probe and children included)")
    print(f"runner wall time per config:  {per_config:.3f} s")
    print(f'python -c "import torch":     {torch_import:.3f} s (median of {len(floor)}, before and after)')
    print(f"ratio: {per_config / torch_import:.2f} (target <= 1.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
