#!/usr/bin/env python3
"""The roofline's two known kernels on this CPU, eager, through experiment_runner.py (docs/roofline.md): the
microbench matmul (compute-bound) against the FLOP ceiling, and the microbench add (memory-bound: arrays far larger
than the last-level cache) against the bandwidth ceiling; each one's fraction of its ceiling, checked against a stated
floor in the exit status (0: both reach it, 1: one does not, 2: a config failed or had no fraction).

The ceilings are the user's cached ones (measured by the first child on this machine, each figure raised since to the
best any remeasurement saw: the machine's best, which a ceiling is); --fresh-ceilings measures them afresh into a
cache of this run's own (on a busy machine such ceilings are low, and the kernels beat them: no fraction).

Floors: matmul >= 0.7 of the FLOP ceiling, add >= 0.6 of the bandwidth ceiling. The ceilings are the best of 3 runs
of the same library kernels (a GEMM, an add and a copy into arrays allocated once); a config's fraction is its median
over --repeat runs against that best, so on an idle machine matmul reads about 0.8-0.95 and add 0.85-1.0 (measured
here: docs/roofline.md). Below the floors is a real loss (threads, an allocation in the timed loop, a wrong count) or
a busy machine: the load average is printed beside each figure."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from benchmarks.results.records import RecordStatus
FLOORS = {"matmul": 0.7, "add": 0.6}


def run(op: str, shape: str, dtype: str, out: Path, env: dict, repeat: int) -> dict:
    target = out / op
    subprocess.run([sys.executable, str(ROOT / "experiment_runner.py"), "--suite-name=microbench", f"--op={op}",
                    f"--shapes={shape}", f"--dtype={dtype}", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                    "--test=eval", f"--repeat={repeat}", "--warmup=2", f"--output-dirname={target}",
                    "--log-level=warning"], check=True, env=env, stdout=subprocess.DEVNULL)
    with open(target / "results.jsonl", encoding="utf-8") as handle:
        [record] = [json.loads(line) for line in handle if line.strip()]
    return record


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matmul-shape", default="2048x2048x2048")
    parser.add_argument("--add-shape", default="512x512x512", help="M*K*N elements per array (default 512 MiB in float32)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--fresh-ceilings", action="store_true", help="ceilings measured afresh, not the user's cached ones")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="bench-roofline-"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    if args.fresh_ceilings:
        env["BENCHMARKS_PROBE_CACHE"] = str(out / "cache")
    status = 0
    ceilings_shown = False
    for op, shape in (("matmul", args.matmul_shape), ("add", args.add_shape)):
        before = load()
        record = run(op, shape, args.dtype, out, env, args.repeat)
        after = load()
        ceilings = record["environment"].get("ceilings") or {}
        if not ceilings_shown and ceilings.get("flops_per_second"):
            flops = ", ".join(f"{d} {v / 1e9:.1f} GFLOP/s" for d, v in ceilings["flops_per_second"].items())
            flops += "".join(f", {d} {v / 1e9:.3g} GFLOP/s (slower than float32: held to its roof)"
                             for d, v in (ceilings.get("slower_than_float32") or {}).items())
            print(f"ceilings ({ceilings.get('threads')} threads, measured at load {ceilings.get('load_average')}): "
                  f"{flops}; memory {ceilings['bytes_per_second'] / 1e9:.1f} GB/s, caches "
                  f"{(ceilings.get('cache_bytes_per_second') or 0) / 1e9:.1f} GB/s")
            ceilings_shown = True
        roofline = record.get("roofline") or {}
        name = record["model"]["model_name"]
        if record["status"] != RecordStatus.OK or "fraction_of_attainable" not in roofline:
            why = roofline.get("why_not") or (record.get("error") or {}).get("message")
            print(f"{name}: no fraction ({record['status']}: {why})")
            status = 2
            continue
        fraction = roofline["fraction_of_attainable"]
        floor = FLOORS[op]
        verdict = "ok" if fraction >= floor else "BELOW"
        print(f"{name}: {roofline['bound']}-bound ({roofline['memory_level']} bandwidth), fraction "
              f"{fraction:.3f} of attainable (floor {floor}) {verdict}; achieved "
              f"{roofline['achieved_flops_per_second'] / 1e9:.1f} GFLOP/s, "
              f"{roofline['achieved_bytes_per_second'] / 1e9:.2f} GB/s; counted in {roofline['count_seconds']:.3f} s; "
              f"load {before} -> {after}")
        if fraction < floor and status == 0:
            status = 1
    print(f"records under {out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
