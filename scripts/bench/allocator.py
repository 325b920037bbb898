#!/usr/bin/env python3
"""How much a child's C allocator moves its time (`make bench-allocator`; docs/runner.md, "The C allocator").

Runs the same models, eager and Inductor (inference, fp32), under each --allocator policy, each config in
--rounds fresh processes (Inductor's from the machine's compile cache after the first, so only the first round
pays a cold compile; the compiled code is the same), then prints per model, backend and policy: the median time
per iteration of each process, their spread ((largest - smallest) / smallest: what a second run of the same
sweep may differ by), the minor page faults per iteration and Inductor's speedup over eager under that policy
(median of the per-process medians). Resumable (the sweep is): the same command finishes an interrupted run, and
--report-only prints the table from what is there. A figure, not a test.

Default models: timm and Hugging Face ones built from code (nothing downloaded); --models takes SUITE:NAME
entries, TorchBench ones with --torchbench-dir.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.features import allocator
from benchmarks.results import records
from benchmarks.results.measurement import Measurement

DEFAULT_MODELS = ["timm:mobilenetv2_100", "timm:ghostnet_100", "huggingface:DistilBertForQuestionAnswering"]
DEFAULT_BATCH = {"torchbench": 2, "timm": 8, "huggingface": 1}


def parse(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="SUITE:NAME, comma-separated (default: %(default)s)")
    parser.add_argument("--allocators", default="system,glibc",
                        help=f"policies, comma-separated, from {', '.join(allocator.NAMES)} (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=5, help="processes per config (default 5)")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per process (default 10)")
    parser.add_argument("--batch-size", action="append", default=[], metavar="SUITE=N",
                        help="per suite (default: " + ", ".join(f"{k}={v}" for k, v in DEFAULT_BATCH.items()) + ")")
    parser.add_argument("--cpu-affinity", help="pin every child to these cores (e.g. 1): a steadier figure")
    parser.add_argument("--torchbench-dir", help="TorchBench's checkout, for torchbench:NAME models")
    parser.add_argument("--out", default="output/bench-allocator", help="the sweep's output directory")
    parser.add_argument("--report-only", action="store_true", help="run nothing: the table from what is there")
    options = parser.parse_args(argv)
    options.batch = dict(DEFAULT_BATCH)
    for item in options.batch_size:
        suite, _, size = item.partition("=")
        if not size.isdigit() or int(size) < 1:
            parser.error(f"--batch-size {item}: expected SUITE=N, N >= 1")
        options.batch[suite] = int(size)
    options.by_suite = {}
    for entry in filter(None, (e.strip() for e in options.models.split(","))):
        suite, colon, name = entry.partition(":")
        if not colon or not name:
            parser.error(f"--models {entry}: expected SUITE:NAME")
        options.by_suite.setdefault(suite, []).append(name)
    options.allocators = [a.strip() for a in options.allocators.split(",") if a.strip()]
    bad = [a for a in options.allocators if a not in allocator.NAMES]
    if bad:
        parser.error(f"--allocators: {', '.join(bad)} is not one of {', '.join(allocator.NAMES)}")
    if options.rounds < 2:
        parser.error("--rounds must be at least 2 (a spread needs two processes)")
    return options


def sweep_command(suite: str, names: list, options) -> list:
    command = [sys.executable, os.path.join(ROOT, "experiment_runner.py"), f"--suite-name={suite}",
               "-k", "^(" + "|".join(names) + ")$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
               "--dynamo=inductor", "--test=eval", "--precision=fp32", f"--batch-size={options.batch.get(suite, 1)}",
               f"--repeat={options.repeat}", f"--rounds={options.rounds}", "--compile-cache=shared",
               *(f"--allocator={name}" for name in options.allocators), f"--output-dirname={options.out}"]
    if options.cpu_affinity:
        command.append(f"--cpu-affinity={options.cpu_affinity}")
    if suite == "torchbench" and options.torchbench_dir:
        command.append(f"--torchbench-dir={options.torchbench_dir}")
    return command


def per_process(path: str) -> dict:
    """(model, backend, policy) -> [(median seconds per iteration, median faults per iteration)], one per process."""
    groups: dict = {}
    for record in records.stream_records(path):
        m = Measurement(record)
        times = m.per_iter_time() if m.ok else None
        if times is None or not len(times):
            continue
        faults = (record.get("metrics") or {}).get("minor_faults_per_iter") or [float("nan")]
        policy = m.experiment.get("allocator") or allocator.DEFAULT
        key = (m.model_name, m.base_backend, policy)
        groups.setdefault(key, []).append((float(statistics.median(times)), float(statistics.median(faults))))
    return groups


def table(groups: dict) -> str:
    rows = [("model", "backend", "allocator", "processes", "ms/iter per process", "spread", "faults/iter",
             "speedup")]
    eager = {(model, policy): statistics.median(t for t, _ in runs)
             for (model, backend, policy), runs in groups.items() if backend == "eager"}
    for (model, backend, policy), runs in sorted(groups.items()):
        times = sorted(t for t, _ in runs)
        spread = times[-1] / times[0] - 1
        median = statistics.median(times)
        base = eager.get((model, policy))
        speedup = f"{base / median:.2f}x" if base and backend != "eager" else ""
        rows.append((model, backend, policy, str(len(times)),
                     f"{times[0] * 1e3:.2f}-{times[-1] * 1e3:.2f} (median {median * 1e3:.2f})", f"{spread:.0%}",
                     f"{statistics.median(f for _, f in runs):,.0f}", speedup))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows) + "\n"


def main(argv=None) -> int:
    options = parse(sys.argv[1:] if argv is None else argv)
    if not options.report_only:
        for suite, names in options.by_suite.items():
            command = sweep_command(suite, names, options)
            print("+", " ".join(map(shlex.quote, command)), file=sys.stderr, flush=True)
            subprocess.run(command, check=False)  # failed configs are records; the table shows what ran
    path = os.path.join(options.out, "results.jsonl")
    if not os.path.exists(path):
        print(f"bench_allocator: no results at {path}", file=sys.stderr)
        return 2
    sys.stdout.write(table(per_process(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
