#!/usr/bin/env python3
"""Parallel sweeps against a serial one, side by side in one run: the same sweep serially, with --jobs 2 and
with Ray (2 CPUs), wall time and throughput ratio of each.

Two sweeps: (1) 8 configs of the faults suite's `sleepy` model, whose forward sleeps (it waits, using no
core), so that a 2-core machine can show the executors' scheduling efficiency (targets: --jobs 2 >= 1.8x
serial, Ray >= 1.6x); (2) a small compile-bound sweep (dummy models under Inductor and PyTorch/XLA + openxla),
the real-world gain on this machine, where two compiles share two cores.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SLEEPY = ["--suite-name=faults", "-k", "^sleepy$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
          "--test=eval", "--test=train", "--batch-size=1", "--batch-size=2", "--batch-size=3", "--batch-size=4",
          "--repeat=8", "--warmup=1"]
COMPILED = ["--suite-name=dummy", "-k", "^(mlp|cnn)$", "--accelerator=cpu", "--xla=None", "--xla=PJRT",
            "--dynamo=inductor", "--dynamo=openxla", "--test=eval", "--repeat=3", "--warmup=1"]
WAYS = (("serial", []), ("--jobs 2", ["--jobs=2"]), ("ray (2 CPUs)", ["--executor=ray", "--jobs=2"]))


def timed_sweep(sweep: list, extra: list) -> float:
    out = Path(tempfile.mkdtemp(prefix="bench-parallel-"))
    try:
        started = time.perf_counter()
        # A fresh Inductor cache per run: a warm one would favour whichever sweep runs after the first.
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(out / "inductor-cache"))
        subprocess.run([sys.executable, str(ROOT / "experiment_runner.py"), *sweep, *extra, f"--output-dirname={out}",
                        "--log-level=warning"], check=True, stdout=subprocess.DEVNULL, env=env)
        return time.perf_counter() - started
    finally:
        shutil.rmtree(out, ignore_errors=True)


def compare(title: str, sweep: list, configs: int, targets: dict) -> None:
    print(f"{title}: {configs} configs")
    seconds = {name: timed_sweep(sweep, extra) for name, extra in WAYS}
    serial = seconds["serial"]
    for name, value in seconds.items():
        ratio = serial / value
        target = f" (target >= {targets[name]:.1f}x)" if name in targets else ""
        print(f"  {name:<14} {value:7.1f} s   throughput {ratio:4.2f}x serial{target}")


def main() -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("sleepy", "compiled"), help="run one of the two sweeps")
    args = parser.parse_args()
    if args.only != "compiled":
        compare("sleepy (waits, no CPU)", SLEEPY, 8, {"--jobs 2": 1.8, "ray (2 CPUs)": 1.6})
    if args.only != "sleepy":
        compare("compile-bound (Inductor, PJRT + openxla)", COMPILED, 4, {})
    return 0


if __name__ == "__main__":
    sys.exit(main())
