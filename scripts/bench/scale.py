#!/usr/bin/env python3
"""make bench-scale: does the sweep's parent scale? (a figure, not a test; docs/parallel.md, "A parent that scales")

For each plan size (default 1k, 10k and 100k configs: a suite of generated model names x 4 experiment configs,
no child ever started) and a results file of 10 records per config (1M at 100k: earlier sweeps of half the plan,
a tenth of them failures), one fresh process measures the dry run, then runs the sweep's own run_locked (with a
fake executor that hands back canned records at --rate per second) and times each of its steps (run_locked's
`timed`: a step added there shows here too):

  dry-run        list the models, plan, print every config's command (--dry-run, to /dev/null)
  resume         read the results file and decide what is left (load_earlier, in_model_order, plan_rounds)
  longest-first  order what is left by earlier run times (longest_first)
  noise-check    the sweep's noise check and machine facts
  sweep          the sweep's loop (SweepRun: make each job, write each record, progress) over what is left: the
                 parent's CPU per config
  end-of-sweep   read the results file again for the summary table

Each step prints its wall time and the process's peak memory so far (ru_maxrss). Targets at 100k configs and
1M records: dry-run + resume under 30 s and 2 GB; the parent's CPU per finished config under 5 ms; each figure
growing linearly from 1k to 100k (the "x per 10x" column: about 10 is linear, about 100 quadratic).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EXPERIMENT_FLAGS = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--test=train",
                    "--batch-size=1", "--batch-size=2", "--repeat=10"]
EXPERIMENTS_PER_MODEL = 4
RECORDS_PER_CONFIG = 10


class Step:
    """Wall and CPU seconds of one step (the machine may be shared: CPU seconds are this process's own)."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def generated_suite(models: int):
    from benchmarks.suites import Suite, model_config

    class Generated(Suite):
        """Model names only: nothing is ever built (no child runs)."""

        name = "dummy"  # the name a single-config command would carry; never built here

        def list_models(self, flags):
            return [model_config(self.name, f"generated_model_{index:06d}") for index in range(models)]

    return Generated()


def canned_record(config, options, env_facts: dict, rng: random.Random) -> dict:
    """What a child of this config hands back: the record's keys a real eager record has, 10 repeats."""
    from benchmarks.results import records

    record = records.config_record(config.model, config.experiment, options, env_facts)
    per_iter = [rng.uniform(0.001, 0.1) for _ in range(options.repeat)]
    record["metrics"] = {"total_time": list(per_iter), "per_iter_time": per_iter,
                         "warmup_time": [p * 5 for p in per_iter[:2]],
                         "peak_rss_bytes": [rng.randrange(2**28, 2**30) for _ in per_iter]}
    record["model_info"] = {"parameters": 123456, "batch_size": config.experiment.batch_size}
    return record


def write_results_file(path: str, configs: list, options, env_facts: dict, total: int) -> None:
    """`total` records of earlier sweeps over the first half of `configs`; one in ten a failure."""
    from benchmarks.results import records

    rng = random.Random(0)
    half = configs[: max(1, len(configs) // 2)]
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(total):
            config = half[index % len(half)]
            record = canned_record(config, options, env_facts, rng)
            if index % 10 == 9:
                records.mark_failed(record, records.RecordStatus.ERROR, "RuntimeError", "canned failure", "run")
            record["run_seconds"] = round(rng.uniform(1, 100), 3)
            record["round"] = 0
            handle.write(json.dumps(record) + "\n")


class FakeExecutor:
    """The executor interface (docs/architecture.md, "Executors") with no child: the k-th job's canned record is
    due k/rate seconds after the first start (or at its own start, if the parent starts it late), up to `jobs`
    at once. Children end on their own clock: a parent that falls behind gets the records in batches."""

    kind = "fake"

    def __init__(self, options, env_facts: dict, rate: float, jobs: int = 64):
        self.options, self.env_facts, self.rate, self.jobs = options, env_facts, rate, jobs
        self._running = collections.OrderedDict()  # key -> (job, due time)
        self._first_start = None
        self.started = 0
        self._rng = random.Random(1)

    def describe(self) -> str:
        return f"executor: fake, {self.rate:g} records/s"

    def prepare(self, request) -> None:
        pass  # no fork server to start

    def impossible(self, job):
        return None

    def running(self) -> list:
        return [job for job, _ in self._running.values()]

    def try_start(self, job) -> bool:
        if len(self._running) >= self.jobs:
            return False
        now = time.monotonic()
        if self._first_start is None:
            self._first_start = now
        self.started += 1
        self._running[job.key] = (job, max(now, self._first_start + self.started / self.rate))
        return True

    def wait(self, timeout: float) -> list:
        from benchmarks.runner import launcher
        from benchmarks.runner.executor import Finished

        if not self._running:
            return []
        due = min(d for _, d in self._running.values())
        time.sleep(max(0.0, min(timeout, due - time.monotonic())))
        now = time.monotonic()
        finished = []
        for key, (job, due) in list(self._running.items()):
            if due <= now:
                del self._running[key]
                result = launcher.ChildResult(record=canned_record(job.config, self.options, self.env_facts, self._rng),
                                              returncode=0, seconds=self._rng.uniform(1, 100))
                facts = {"kind": self.kind, "jobs": self.jobs, "host": "fake", "cores": None, "gpus": [],
                         "running_beside_at_start": 0, "running_beside_at_end": 0}
                finished.append(Finished(job, result, facts))
        return finished

    def stop_all(self) -> None:
        self._running.clear()

    def close(self) -> None:
        pass


class Timings:
    """run_locked's `timed`: each step's wall and CPU seconds and the peak memory after it, in the order they ran."""

    def __init__(self):
        self.steps = {}

    @contextlib.contextmanager
    def timed(self, name: str):
        with Step() as step:
            yield
        self.steps[name] = [step.wall, step.cpu, peak_mb(), ""]


def measure(size: int, rate: float, workdir: str) -> dict:
    """Every step at one plan size, in this (fresh) process: {"steps": {step: [wall s, CPU s, peak MB so far,
    note]}, "cpu-per-config-ms": the sweep step's CPU per config}. After the dry run, the sweep's own
    run_locked runs (with the fake executor), timed step by step."""
    import logging

    from benchmarks.config.run_options import build_parser
    from benchmarks.runner import sweep
    from benchmarks.runner.dry_run import print_dry_run
    from benchmarks.runner.plan import make_plan
    from benchmarks.suites import all_suites

    suite = generated_suite(size // EXPERIMENTS_PER_MODEL)
    options = build_parser(all_suites()).options(EXPERIMENT_FLAGS + [f"--output-dirname={workdir}"])
    env_facts = noise_free_environment()
    results_path = os.path.join(workdir, options.output_basename)
    timings = Timings()

    with timings.timed("dry-run"):
        plan = make_plan(suite, options)
        with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
            print_dry_run(options, plan, FakeExecutor(options, env_facts, rate), suite)
    timings.steps["dry-run"][3] = f"{len(plan.configs)} configs"
    assert len(plan.configs) == size, (len(plan.configs), size)

    records_written = size * RECORDS_PER_CONFIG
    write_results_file(results_path, plan.configs, options, env_facts, records_written)
    file_mb = os.path.getsize(results_path) / 2**20

    ours = logging.getLogger("benchmarks")
    level = ours.level
    ours.setLevel(logging.WARNING)  # no line per config on the terminal; put back after (a test calls this)
    executor = FakeExecutor(options, env_facts, rate)
    try:
        with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):  # the end-of-sweep table
            sweep.run_locked(options, plan, executor, results_path, timed=timings.timed)
    finally:
        ours.setLevel(level)
    ran = executor.started
    timings.steps["resume"][3] = f"{records_written} records ({file_mb:.0f} MB), {ran} left"
    sweep_wall, sweep_cpu = timings.steps["sweep"][:2]
    per_config = sweep_cpu / max(ran, 1) * 1e3
    timings.steps["sweep"][3] = f"{per_config:.2f} ms CPU per config, {ran / sweep_wall:.0f} configs/s"
    return {"steps": timings.steps, "cpu-per-config-ms": per_config}


def noise_free_environment() -> dict:
    """The environment of the canned records written before the sweep (the sweep makes its own)."""
    from benchmarks.plumbing import machine_facts
    from benchmarks.runner import noise

    return noise.annotate({"environment": machine_facts.collect()}, None)["environment"]


def run_size(size: int, rate: float) -> dict:
    """measure() in a fresh interpreter, so that each size's peak memory is its own."""
    workdir = tempfile.mkdtemp(prefix="bench-scale-")
    try:
        done = subprocess.run([sys.executable, "-m", __spec__.name, "--one", str(size), "--rate", str(rate),
                               "--workdir", workdir], capture_output=True, text=True, cwd=ROOT)
        if done.returncode:
            sys.stderr.write(done.stderr)
            raise SystemExit(f"bench-scale: the {size}-config run failed")
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="plan sizes in configs (default 1000,10000,100000)")
    parser.add_argument("--rate", type=float, default=200.0, help="records the fake executor hands back per second "
                        "(default 200)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.rate, args.workdir)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"bench-scale: {EXPERIMENTS_PER_MODEL} experiment configs per generated model, {RECORDS_PER_CONFIG} "
          f"records per config in the results file, records handed back at {args.rate:g}/s; no child is started")
    print(f"{'configs':>8}  {'step':<14} {'wall s':>8} {'CPU s':>8} {'x per 10x':>9} {'peak MB':>8}  notes")
    previous = {}
    for size in sizes:
        figures = run_size(size, args.rate)
        for step, (wall, cpu, peak, note) in figures["steps"].items():
            growth = ""  # CPU seconds' growth per 10x configs: ~10 is linear, ~100 quadratic
            if step in previous and previous[step][0] > 0 and size > previous[step][1]:
                growth = f"{(cpu / previous[step][0]) ** (1 / math.log10(size / previous[step][1])):.1f}"
            print(f"{size:>8}  {step:<14} {wall:8.2f} {cpu:8.2f} {growth:>9} {peak:8.0f}  {note}")
            previous[step] = (cpu, size)
        steps = figures["steps"]
        planning = steps["dry-run"][0] + steps["resume"][0]
        print(f"{size:>8}  {'plan+resume':<14} {planning:8.2f} {'':>8} {'':>9} {steps['resume'][2]:8.0f}  "
              f"targets at 100k: < 30 s, < 2048 MB; CPU per config {figures['cpu-per-config-ms']:.2f} ms (< 5 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
