#!/usr/bin/env python3
"""result_analyzer.py's speed and memory: generates synthetic results files of realistic shape and times
the real command on each, printing records/second and the peak resident memory of its process tree.

Shapes: 10 timed samples per metric and 8, 10 or 12 metrics per record (eager/Inductor with profiler
metrics, PyTorch/XLA with its counters, some with CPU profiler times), 2 warm-up runs, the environment;
6% failure records (errors, crashes, timeouts, out-of-memory, with partial metrics) and 1% skips; 10%
upstream-shaped records (no warm-up, no status). Sizes: 10k and 20k (upstream's analyzer took 25 s and
72 s on those: it grows with the square of the records) and --records (default 1,000,000), read by the
compiled reader (benchmarks/analyzer/_jsonl_scan.c, built by `make env`); then 20k by the pure-Python reader, what a
machine without a C compiler gets. --repeat runs the large size again and reports the median.
Target: >= 100,000 records/s at 1M records; the exit status is 1 when it is missed.
"""

import argparse
import os
import statistics
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET_RECORDS_PER_SECOND = 100_000
TARGET_AT = 1_000_000
UPSTREAM_SECONDS = {10_000: 25.0, 20_000: 72.0}  # reference study, upstream result_analyzer.py

XLA_METRICS = ("trace_total_time", "trace_per_iter_time", "xla_CompileTime_time_s", "xla_CompileTime_number",
               "xla_ExecuteTime_time_s", "xla_ExecuteTime_number")
PROFILER_METRICS = ("total_cpu_time_s", "per_iter_cpu_time_s", "total_cuda_time_s", "per_iter_cuda_time_s")
CONFIGS = (  # (xla, dynamo, extra metric names): 8, 10 and 12 metrics with the 4 every record has
    (None, None, PROFILER_METRICS),
    (None, "inductor", PROFILER_METRICS),
    ("PJRT", None, XLA_METRICS),
    ("PJRT", "openxla", XLA_METRICS + PROFILER_METRICS[:2]),
)
ENVIRONMENT = {"python": "3.11.7", "torch": "2.9.1", "torch_xla": "2.9.0", "torchvision": "0.24.1",
               "numpy": "2.4.6", "cpu_model": "Intel(R) Xeon(R) Processor", "cpu_count": 2, "usable_cores": 2,
               "gpu_names": [], "hostname": "bench", "platform": "Linux-x86_64",
               "git_commit": "2fe70944e46a05146538248a3a06767bf07cd15f"}
FAILURES = (("error", "RuntimeError", "run", "CUDA error: an illegal memory access was encountered"),
            ("crash", "SIGSEGV", "compile", "killed by SIGSEGV in phase compile"),
            ("timeout", "Timeout", "run", "timed out after 1800 s in phase run"),
            ("oom", "MemoryLimitExceeded", "load", "resident memory of the process tree passed the limit"))


def generate(path: Path, count: int, seed: int = 0) -> None:
    """`count` records, written in blocks; values from numpy so that generating stays quick."""
    import numpy as np
    import orjson

    rng = np.random.default_rng(seed)
    block = 20_000
    with open(path, "wb") as out:
        for first in range(0, count, block):
            n = min(block, count - first)
            base = rng.lognormal(-6, 1.5, size=n)
            noise = rng.normal(1.0, 0.05, size=(n, 10)).clip(0.5)
            kinds = rng.random(n)
            lines = []
            for i in range(n):
                number = first + i
                xla, dynamo, extra = CONFIGS[number % len(CONFIGS)]
                times = (base[i] * noise[i]).tolist()
                metrics = {"warmup_time": [times[0] * 40, times[1]], "total_time": times, "per_iter_time": times,
                           "peak_rss_bytes": [750_000_000 + 4096 * (number % 977)] * 10}
                for name in extra:
                    if name.endswith("_number"):
                        metrics[name] = [3] + [0] * 9 if "Compile" in name else [1] * 10
                    elif "Compile" in name:
                        metrics[name] = [0.25 + times[0]] + [0.0] * 9
                    else:
                        metrics[name] = [t * 0.7 for t in times]
                experiment = {"accelerator": "cpu", "accelerator_model": "Intel(R) Xeon(R) Processor", "xla": xla,
                              "xla_flags": None, "dynamo": dynamo, "torch_xla2": None,
                              "test": "eval" if number % 8 < 4 else "train", "batch_size": 8 << (number % 3),
                              "enable_functionalization": False}
                record = {"model": {"suite_name": "torchbench", "model_name": f"model_{number // 8 % 5000:04d}"},
                          "experiment": experiment, "repeat": 10, "iterations_per_run": 1, "metrics": metrics,
                          "timestamp": 1_795_000_000.0 + number // 40_000, "verification_code": "VERIFIER_SKIPPED"}
                kind = kinds[i]
                if kind < 0.10:  # upstream-shaped: no warm-up (its first sample compiles), no status
                    metrics.pop("warmup_time")
                    times[0] *= 40
                elif kind < 0.16:  # a failure, keeping what was measured before it
                    status, error_type, phase, message = FAILURES[number % len(FAILURES)]
                    record["metrics"] = {"warmup_time": metrics["warmup_time"]} if phase == "run" else {}
                    record["metrics"]["error"] = f"{error_type}: {message}"
                    record.update(status=status, error={"type": error_type, "message": message, "phase": phase,
                                                        "log": f"logs/{number}.log"}, warmup=2)
                    record["verification_code"] = "VERIFIER_DIDNT_RUN"
                elif kind < 0.17:
                    record["metrics"] = {"error": "SKIP: the suite does not support this config"}
                    record.update(status="skip", error={"type": "Unsupported", "phase": "setup", "log": None,
                                                        "message": "the suite does not support this config"},
                                  warmup=2)
                else:
                    record.update(schema_version=1, status="ok", error=None, warmup=2)
                if kind >= 0.10:
                    record.update(requested_batch_size=None, verify=False, diagnostics={}, artifacts={},
                                  environment=ENVIRONMENT)
                lines.append(orjson.dumps(record))
            out.write(b"\n".join(lines) + b"\n")


def measure(results: Path, report: Path, jobs, reader: str) -> tuple:
    """(seconds, CPU seconds, peak RSS bytes of the analyzer's process tree) of one real run."""
    import psutil

    command = [sys.executable, str(ROOT / "result_analyzer.py"), str(results), f"--output={report}",
               f"--reader={reader}", "--log-level=warning"] + ([f"--jobs={jobs}"] if jobs else [])
    started = time.perf_counter()
    child = subprocess.Popen(command)
    peak, done = 0, threading.Event()

    def sample() -> None:
        nonlocal peak
        try:
            process = psutil.Process(child.pid)
        except psutil.Error:
            return
        while not done.is_set():
            try:
                total = process.memory_info().rss
                for sub in process.children(recursive=True):
                    try:
                        total += sub.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                break
            peak = max(peak, total)
            done.wait(0.1)  # memory stays flat: a finer watch would only take CPU from the run it measures

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(child.pid, 0)  # the usage includes the workers it reaped
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    if child.returncode:
        raise SystemExit(f"result_analyzer.py exited with status {child.returncode} on {results}")
    return seconds, usage.ru_utime + usage.ru_stime, peak


def main() -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=TARGET_AT, help="the large size (default 1,000,000)")
    parser.add_argument("--sizes", default="10000,20000", help="smaller sizes measured first (comma-separated)")
    parser.add_argument("--jobs", type=int, default=None, help="passed to result_analyzer.py (default: its own)")
    parser.add_argument("--workdir", default=None, help="where the files go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--repeat", type=int, default=1, help="runs of the large size (the median counts)")
    parser.add_argument("--reader", default="compiled", choices=["compiled", "python"],
                        help="the reader measured (default compiled; the Python one is measured at 20k anyway)")
    args = parser.parse_args()
    small = [int(s) for s in args.sizes.split(",") if s.strip()]
    runs = [(count, args.reader) for count in small] + [(args.records, args.reader)] * max(1, args.repeat)
    if args.reader != "python":
        runs.append((max(small) if small else min(args.records, 20_000), "python"))
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-analyzer-"))
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for count, reader in runs:
            results = workdir / f"results-{count}.jsonl"
            if not results.exists():
                print(f"generating {count:,} records ...", file=sys.stderr, flush=True)
                generate(results.with_suffix(".part"), count)
                results.with_suffix(".part").rename(results)
            report = workdir / f"report-{count}.csv"
            load = os.getloadavg()[0]
            seconds, cpu, peak = measure(results, report, args.jobs, reader)
            rows.append((count, results.stat().st_size, seconds, cpu, peak, load, reader))
            report.unlink()
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"{'reader':>8}  {'records':>10}  {'input MB':>9}  {'seconds':>8}  {'records/s':>10}  {'CPU s':>7}"
          f"  {'rec/CPU-s':>9}  {'peak RSS MB':>11}  {'load':>5}  upstream")
    for count, size, seconds, cpu, peak, load, reader in rows:
        upstream = f"{UPSTREAM_SECONDS[count]:.0f} s" if count in UPSTREAM_SECONDS else ""
        print(f"{reader:>8}  {count:>10,}  {size / 1e6:>9.1f}  {seconds:>8.2f}  {count / seconds:>10,.0f}"
              f"  {cpu:>7.2f}  {count / cpu:>9,.0f}  {peak / 2**20:>11.0f}  {load:>5.2f}  {upstream}")
    print(f"(wall time of the whole command, Python start-up included; CPU time of it and its workers; peak RSS "
          f"summed over its processes; load: the 1-minute load average before the run; {os.cpu_count()} cores)")
    if max(row[5] for row in rows) > 0.5:
        print("note: other processes were running; records/s is then below what this machine gives alone")
    big = [row for row in rows if row[0] >= TARGET_AT and row[6] == args.reader]
    if big:
        rate = statistics.median(row[0] / row[2] for row in big)
        verdict = "met" if rate >= TARGET_RECORDS_PER_SECOND else "MISSED"
        print(f"target {TARGET_RECORDS_PER_SECOND:,} records/s at {TARGET_AT:,} records: {verdict} ({rate:,.0f})")
        return 0 if rate >= TARGET_RECORDS_PER_SECOND else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
