#!/usr/bin/env python3
"""`make test-torch-latest`'s sweep, on the torch of the interpreter that runs it (README.md, "Your own torch"): the
dummy suite (eval and train) and torchvision's resnet18 at 64 px (eval), eager, aot_eager and Inductor, each config
checked against eager (--verify); then result_analyzer.py, aggregate.py (the speedup table and the HTML page) and
compare.py (Inductor against aot_eager in this sweep, and, with --against, every config against another torch's
sweep of the same configs). Prints the speedups and compile times per config; exit 1 unless every config is ok and
passes.

    .venv-torch-latest/bin/python -m scripts.upkeep.torch_sweep --output-dirname=output/torch-latest
    .venv/bin/python -m scripts.upkeep.torch_sweep --output-dirname=output/torch-lock  # the lock's, beside them
    .venv-torch-latest/bin/python -m scripts.upkeep.torch_sweep --output-dirname=output/torch-latest \
        --against output/torch-lock
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from benchmarks.plumbing.cli_support import command_line
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.records import RecordStatus

COMMON = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=aot_eager", "--dynamo=inductor", "--verify",
          "--repeat=5"]
# resnet18 inference only: its training step is a minute of CI's 30 (the dummy models train on this torch)
SWEEPS = {
    "dummy": ["--suite-name=dummy", "--test=eval", "--test=train"],
    "torchvision": ["--suite-name=torchvision", "-k", "^resnet18$", '--model-params={"image_size": 64}', "--test=eval"],
}


def tool(*argv, ok=(0,)) -> subprocess.CompletedProcess:
    print("+", command_line([sys.executable, *argv]), flush=True)
    done = subprocess.run([sys.executable, *map(str, argv)], cwd=ROOT, text=True, capture_output=True)
    if done.returncode not in ok:
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        raise SystemExit(f"torch_sweep: {argv[0]} exited {done.returncode}")
    return done


def figures(records: list) -> list:
    """One line per config: median ms per iteration, the Inductor / aot_eager speedup over eager, the first warm-up
    run (compilation), dynamo's total compile seconds."""
    eager = {(r["model"]["model_name"], r["experiment"]["test"]): statistics.median(r["metrics"]["per_iter_time"])
             for r in records if r["experiment"]["dynamo"] is None and r["status"] == RecordStatus.OK}
    lines = []
    for r in records:
        key = (r["model"]["model_name"], r["experiment"]["test"])
        backend = r["experiment"]["dynamo"] or "eager"
        if r["status"] != RecordStatus.OK:
            lines.append(f"{r['model']['suite_name']:<12} {key[0]:<13} {key[1]:<5} {backend:<9} {r['status']}: "
                         f"{(r.get('error') or {}).get('message', '')[:80]}")
            continue
        median = statistics.median(r["metrics"]["per_iter_time"])
        speedup = f"{eager[key] / median:.2f}x" if backend != "eager" and key in eager else ""
        compile_s = ((r.get("dynamo_stats") or {}).get("compile_seconds_by_phase") or {}).get("total_wall_time")
        lines.append(f"{r['model']['suite_name']:<12} {key[0]:<13} {key[1]:<5} {backend:<9} {median * 1e3:9.3f} "
                     f"{speedup:>8} {r['metrics']['warmup_time'][0]:8.2f} "
                     f"{'' if compile_s is None else f'{compile_s:8.2f}':>8} {r['accuracy']}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--output-dirname", type=Path, required=True, help="emptied first")
    parser.add_argument("--against", type=Path, help="another torch's output of this script: compare.py against it")
    parser.add_argument("--runner-flag", action="append", default=[],
                        help="one more flag for experiment_runner.py (repeatable), e.g. --runner-flag=--cpu-affinity=1")
    args = parser.parse_args(argv)
    out = args.output_dirname
    shutil.rmtree(out, ignore_errors=True)
    started = time.monotonic()
    for name, flags in SWEEPS.items():
        tool("experiment_runner.py", *flags, *COMMON, *args.runner_flag, f"--output-dirname={out}", ok=(0, 1))
    swept = time.monotonic() - started
    tool("result_analyzer.py", f"--output-dirname={out}", "--log-level=warning")
    for test in ("inference", "training"):
        table = tool("aggregate.py", out / "results.jsonl", "--accelerator=cpu", f"--test={test}",
                     "--report=latest_grouped", "--format=table", "--log-level=warning").stdout
        (out / f"report-{test}.txt").write_text(table)
    tool("aggregate.py", out / "results.jsonl", "--accelerator=cpu", "--test=inference", "--format=html",
         f"--output={out / 'report-inference.html'}", "--log-level=warning")
    pair = tool("compare.py", out, "--pair", "dynamo=aot_eager:inductor", ok=(0, 1)).stdout
    (out / "compare-inductor-vs-aot_eager.txt").write_text(pair)
    against = None
    if args.against:
        against = tool("compare.py", args.against, out, ok=(0, 1)).stdout
        (out / "compare-against.txt").write_text(against)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    torch = sorted({r["environment"].get("torch") for r in records} - {None})
    print(f"\n== torch {', '.join(torch)}: {len(records)} configs in {swept:.0f} s ==")
    print(f"{'suite':<12} {'model':<13} {'test':<5} {'backend':<9} {'ms/iter':>9} {'speedup':>8} {'1st run':>8} "
          f"{'compile':>8} accuracy")
    print("\n".join(figures(records)))
    if against is not None:
        print(f"\n== compare.py {args.against} {out} ==\n{against}")
    failed = [r for r in records if r["status"] != RecordStatus.OK or r.get("accuracy") != AccuracyStatus.PASS]
    if failed:
        print(f"torch_sweep: {len(failed)} config(s) not ok and passing", file=sys.stderr)
        return 1
    print(f"every config ok and pass; reports in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
