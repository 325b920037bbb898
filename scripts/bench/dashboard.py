#!/usr/bin/env python3
"""A small TorchInductor-dashboard-like sweep on this CPU (`make bench-dashboard`): the dummy mlp and a few
torchvision models (64 px, random weights), eager and Inductor, inference, across precision (fp32, bf16) x
compile mode x dynamic batch (static, batch) (and any other axis given in DASHBOARD_AXES), then ONE table: per
config its steady per-iteration time, speedup over its eager baseline (benchmarks/results/against_eager.py: eager at
the same precision and other axes, torch.compile's own aside), compile time and dynamo's statistics. Resumable
(the sweep is)."""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.results import against_eager, records
from benchmarks.results.measurement import Measurement

SWEEPS = (
    ["--suite-name=dummy", "-k", "^mlp$"],
    ["--suite-name=torchvision", "-k", "^(resnet18|mobilenet_v3_small)$", '--model-params={"image_size": 64}'],
)
MATRIX = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=inductor", "--test=eval",
          "--precision=fp32", "--precision=bf16", "--compile-mode=default", "--compile-mode=max-autotune-no-cudagraphs",
          "--dynamic=static", "--dynamic=batch", "--repeat=5", "--warmup=2"]


def run_sweeps(out: str, extra: list) -> str:
    for sweep in SWEEPS:
        command = [sys.executable, os.path.join(ROOT, "experiment_runner.py"), *sweep, *MATRIX, *extra,
                   f"--output-dirname={out}"]
        print("+", " ".join(map(shlex.quote, command)), file=sys.stderr, flush=True)
        subprocess.run(command, check=False)
    return os.path.join(out, "results.jsonl")


def table(path: str) -> str:
    views = [Measurement(record) for record in records.stream_records(path)]  # a torn last line is skipped
    # only the eager configs are baselines: the others' medians are computed once, for their own rows
    eager = against_eager.EagerIndex((m, None, statistics.median(m.per_iter_time())) for m in views
                                     if m.base_backend == against_eager.EAGER and m.ok
                                     and m.per_iter_time() is not None)
    rows = [("model", "test", "backend", "ms/iter", "speedup", "compile s", "graphs", "breaks", "recompiles")]
    for m in sorted(views, key=lambda v: (v.model_name or "", v.test or "", v.backend)):
        times = m.per_iter_time() if m.ok else None
        if times is None:
            rows.append((m.model_name, m.test, m.backend, m.status, "", "", "", "", ""))
            continue
        median = statistics.median(times)
        base = eager.find(m)
        stats = [m.dynamo_stat(name) for name in ("graphs", "graph_breaks", "recompiles")]
        compile_s = m.compile_time() if m.base_backend != "eager" else None
        rows.append((m.model_name, m.test, m.backend, f"{median * 1e3:.3f}", f"{base / median:.2f}x" if base else "",
                     f"{compile_s:.1f}" if compile_s is not None else "",
                     *("" if stat is None else str(stat) for stat in stats)))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__)
    parser.add_argument("--output-dirname", default="output/bench-dashboard")
    parser.add_argument("--axes", default=os.environ.get("DASHBOARD_AXES", ""),
                        help="more experiment_runner.py axis flags, e.g. '--precision=fp32 --precision=bf16'")
    options = parser.parse_args()
    path = run_sweeps(options.output_dirname, shlex.split(options.axes))
    if not os.path.exists(path):
        print(f"bench_dashboard: no results in {path}", file=sys.stderr)
        return 3
    sys.stdout.write(table(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
