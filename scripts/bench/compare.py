#!/usr/bin/env python3
"""compare.py's statistics over many seeded synthetic A/B trials of known truth (`make bench-compare`).

Each trial: CONFIGS configs, SLOWED of them truly slower by SLOWDOWN in the treatment; each side of each
config has PROCESSES records (as from --rounds) of SAMPLES samples; lognormal noise of WITHIN inside a
process and BETWEEN across processes. Through compare.py's own path (records -> matching -> bootstrap ->
verdicts), it prints:
  detection rate     slowed configs called `slower`                         (target >= 95%)
  false positives    unchanged configs called `slower` or `faster`          (target <= 5%)
  coverage           intervals that hold the true ratio                      (target: confidence +- 2 points)
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks.compare import comparison, matching
from benchmarks.results.change_words import Word
from benchmarks.results.records import RecordStatus


def side(rng, factors: np.ndarray, processes: int, samples: int, within: float, between: float) -> list:
    """Our records: one per (round, config), warm-up apart, per-iteration times around 10 ms x factor."""
    out = []
    for round_ in range(processes):
        levels = 0.010 * factors * np.exp(rng.normal(0, between, len(factors)))
        values = levels[:, None] * np.exp(rng.normal(0, within, (len(factors), samples)))
        for index, row in enumerate(values.tolist()):
            out.append({"model": {"suite_name": "synthetic", "model_name": f"model{index:03d}"},
                        "experiment": {"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval",
                                       "batch_size": 1},
                        "metrics": {"warmup_time": [1.0], "per_iter_time": row}, "warmup": 1, "status": RecordStatus.OK,
                        "round": round_, "timestamp": 1.0})
    return out


def main() -> int:
    p = argparse.ArgumentParser(prog=f"python -m {__spec__.name}",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--configs", type=int, default=30)
    p.add_argument("--slowed", type=int, default=10)
    p.add_argument("--slowdown", type=float, default=0.05)
    p.add_argument("--processes", type=int, default=5)
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--within", type=float, default=0.02)
    p.add_argument("--between", type=float, default=0.01)
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--threshold", type=float, default=0.02)
    p.add_argument("--resamples", type=int, default=2000)
    args = p.parse_args()

    truth = np.ones(args.configs)
    truth[:args.slowed] = 1 + args.slowdown
    detected = false_positive = called_same = covered = intervals = geomean_covered = 0
    started = time.monotonic()
    for trial in range(args.trials):
        rng = np.random.default_rng(1000 + trial)
        control = side(rng, np.ones(args.configs), args.processes, args.samples, args.within, args.between)
        treatment = side(rng, truth, args.processes, args.samples, args.within, args.between)
        settings = comparison.Settings(confidence=args.confidence, threshold=args.threshold,
                                       resamples=args.resamples, seed=trial)
        report = comparison.compare(matching.pair(control, treatment), settings)
        for row in report.rows:
            true_ratio = truth[int(row["model_name"][5:])]
            if true_ratio > 1:
                detected += row["verdict"] == Word.SLOWER
            else:
                false_positive += row["verdict"] in (Word.SLOWER, Word.FASTER)
                called_same += row["verdict"] == Word.SAME
            covered += row["ci"][0] <= true_ratio <= row["ci"][1]
            intervals += 1
        true_geomean = float(np.exp(np.log(truth).mean()))
        geomean_covered += report.geomean["ci"][0] <= true_geomean <= report.geomean["ci"][1]
    seconds = time.monotonic() - started

    slowed, unchanged = args.trials * args.slowed, args.trials * (args.configs - args.slowed)
    detection, false_rate, coverage = detected / slowed, false_positive / unchanged, covered / intervals
    print(f"{args.trials} trials x {args.configs} configs ({args.slowed} {args.slowdown:.0%} slower), "
          f"{args.processes} processes x {args.samples} samples, noise {args.within:.0%} within / "
          f"{args.between:.0%} between processes, {args.confidence:.0%} intervals, threshold {args.threshold:.0%}, "
          f"{args.resamples} resamples")
    checks = [
        ("detection rate of the slowdowns", detection, detection >= 0.95, ">= 95%"),
        ("false positives on unchanged configs", false_rate, false_rate <= 0.05, "<= 5%"),
        ("interval coverage of the true ratio", coverage, abs(coverage - args.confidence) <= 0.02,
         f"{args.confidence:.0%} +- 2 points"),
    ]
    for name, value, ok, target in checks:
        print(f"  {name:<40} {value:7.2%}   target {target:<14} {'ok' if ok else 'MISSED'}")
    print(f"  {'unchanged configs called same':<40} {called_same / unchanged:7.2%}   (the rest: unsure)")
    print(f"  {'geomean interval coverage':<40} {geomean_covered / args.trials:7.2%}   ({args.trials} geomeans)")
    print(f"  {'time per trial':<40} {seconds / args.trials:7.3f} s ({2 * args.configs} sides x "
          f"{args.resamples} resamples)")
    return 0 if all(ok for _, _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
