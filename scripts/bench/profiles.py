#!/usr/bin/env python3
"""What profiling costs the timings (`make bench-profiles`; docs/runner.md, "Diagnostics").

Runs the same configs twice, each sweep its own processes: without profilers, and with torch.profiler's flags
(--dump-pytorch-profiles, --profile-cuda-cpu, --profile-cuda-cpu-individual-ops). The profilers run in repeats of
their own after the timed ones (pytorch#181043), so a profiled config's median time per iteration should read as
the unprofiled one's (within the machine's noise between two processes); the profiled repeats' own median shows the
overhead that timing them would have added (what the timed repeats held before). Prints per model and backend the
three medians and their ratios to the unprofiled one, and the load average before and after. Resumable (the sweeps
are): the same command finishes an interrupted run, and --report-only prints the table from what is there. A
figure, not a test.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.results import records
from benchmarks.results.measurement import Measurement

PROFILER_FLAGS = ("--dump-pytorch-profiles", "--profile-cuda-cpu", "--profile-cuda-cpu-individual-ops")
PROFILED_PER_ITER = "profiled_per_iter_time"  # the profiled repeats' own times (child/measured_loop.py)
SIDES = ("unprofiled", "profiled")
BACKENDS = {"eager": "None", "inductor": "inductor", "aot_eager": "aot_eager"}


def parse(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp,cnn", help="dummy-suite models, comma-separated (default: %(default)s)")
    parser.add_argument("--backends", default="eager,inductor",
                        help=f"comma-separated, from {', '.join(BACKENDS)} (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per config (default 10)")
    parser.add_argument("--iterations", type=int, default=20, help="iterations per run (default 20)")
    parser.add_argument("--cpu-affinity", help="pin every child to these cores (e.g. 1): a steadier figure")
    parser.add_argument("--out", default="output/bench-profiles", help="the sweeps' output directory")
    parser.add_argument("--report-only", action="store_true", help="run nothing: the table from what is there")
    options = parser.parse_args(argv)
    options.models = [m.strip() for m in options.models.split(",") if m.strip()]
    options.backends = [b.strip() for b in options.backends.split(",") if b.strip()]
    bad = [b for b in options.backends if b not in BACKENDS]
    if bad or not options.backends:
        parser.error(f"--backends: {', '.join(bad) or 'none given'}: choose from {', '.join(BACKENDS)}")
    if not options.models:
        parser.error("--models: none given")
    if options.repeat < 3 or options.iterations < 1:
        parser.error("--repeat must be at least 3 (a median) and --iterations at least 1")
    return options


def sweep_command(side: str, options) -> list:
    command = [sys.executable, os.path.join(ROOT, "experiment_runner.py"), "--suite-name=dummy",
               "-k", "^(" + "|".join(options.models) + ")$", "--accelerator=cpu", "--xla=None",
               *(f"--dynamo={BACKENDS[b]}" for b in options.backends), "--test=eval", f"--repeat={options.repeat}",
               f"--iterations-per-run={options.iterations}", f"--output-dirname={os.path.join(options.out, side)}"]
    if options.cpu_affinity:
        command.append(f"--cpu-affinity={options.cpu_affinity}")
    return command + (list(PROFILER_FLAGS) if side == "profiled" else [])


def medians(path: str) -> dict:
    """(model, backend) -> (median seconds per iteration of the timed runs, of the profiled runs or None), of the
    newest ok record of each config."""
    out = {}
    for record in records.stream_records(path):
        m = Measurement(record)
        times = m.per_iter_time() if m.ok else None
        if times is None or not len(times):
            continue
        profiled = m.raw(PROFILED_PER_ITER)
        out[(m.model_name, m.base_backend)] = (float(statistics.median(times)),
                                               float(statistics.median(profiled)) if profiled is not None else None)
    return out


def table(unprofiled: dict, profiled: dict) -> str:
    rows = [("model", "backend", "unprofiled ms/iter", "profiled config ms/iter", "ratio", "profiled runs ms/iter",
             "ratio")]
    for key in sorted(set(unprofiled) | set(profiled)):
        base = unprofiled.get(key, (None, None))[0]
        timed, runs = profiled.get(key, (None, None))
        cells = [key[0], key[1], _ms(base), _ms(timed), _ratio(timed, base), _ms(runs), _ratio(runs, base)]
        rows.append(tuple(cells))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows) + "\n"


def _ms(seconds) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f}"


def _ratio(value, base) -> str:
    return "-" if value is None or not base else f"{value / base:.2f}x"


def load_average() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg()) + f" on {os.cpu_count()} core(s)"


def main(argv=None) -> int:
    options = parse(sys.argv[1:] if argv is None else argv)
    print(f"before: {load_average()}", flush=True)
    if not options.report_only:
        for side in SIDES:
            command = sweep_command(side, options)
            print("+", " ".join(map(shlex.quote, command)), file=sys.stderr, flush=True)
            subprocess.run(command, check=False)  # failed configs are records; the table shows what ran
    found = {}
    for side in SIDES:
        path = os.path.join(options.out, side, "results.jsonl")
        if not os.path.exists(path):
            print(f"bench_profiles: no results at {path}", file=sys.stderr)
            return 2
        found[side] = medians(path)
    print(f"after: {load_average()}")
    sys.stdout.write(table(found["unprofiled"], found["profiled"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
