"""The sweep's execution (the parent), once runner/cli.py has the plan and the executor: the results file locked,
resume, each config's child handed to the executor, every record written, the end-of-sweep table.

The parent never imports torch or torch_xla: what it must know from them comes from one probe child. It is
the only writer of the results file, whatever the executor: children (local or on Ray nodes) hand their
records back, and the parent appends each as its child ends (docs/architecture.md, "What flows where").
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import sys
import time

from benchmarks.config import rerun_command
from benchmarks.config.process_env import child_environment
from benchmarks.config.run_options import RunOptions
from benchmarks.fork_server import client
from benchmarks.plumbing import disk_writes, safe_paths
from benchmarks.plumbing.cli_support import EXIT_BAD_NEWS, UsageError, command_line
from benchmarks.plumbing.cpu_affinity import requested_cores
from benchmarks.results import record_check, records
from benchmarks.runner import launcher, noise, progress, results_lock, warm_start
from benchmarks.runner.executor import Job
from benchmarks.runner.job_resources import Needs
from benchmarks.runner.plan import Plan
from benchmarks.runner.resume import left_to_run
from benchmarks.runner.result_records import child_record, skipped_record

log = logging.getLogger("benchmarks.runner.sweep")

WAIT_SECONDS = 0.5  # how often the parent looks up from waiting (progress, Ctrl-C)


def make_job(key: int, options: RunOptions, config, echo) -> Job:
    argv = rerun_command.single_config_argv(options.child_flags, config.model, config.experiment.to_dict())
    env = child_environment(config.experiment, options, dict(os.environ), config.model)
    pair = warm_start.is_pair(config.experiment)  # two children in turn, both spawned (runner/warm_start.py)
    request = launcher.ChildRequest(
        argv=argv,
        env=env,
        log_path=safe_paths.log_path(options.output_dirname, config.model, config.experiment, config.round),
        timeout=options.subprocess_timeout,
        memory_limit=options.subprocess_memory_limit,
        echo=echo,
        cpu_affinity=requested_cores(options.noise),
        fork=client.server_spec(config.experiment, options, env, argv, rerun_command.entry_argv())
        if options.launch == "fork" and not pair else None,
        shared_compile_cache=config.experiment.compile_cache == "shared",
        uses_cuda=config.experiment.accelerator == "cuda",
        warm_start=pair,
    )
    return Job(key, config, request, Needs.of(config.experiment, options.gpus_per_job))


def typed_command() -> list:
    """How the user started this process, as typed: the interpreter and script (`.venv/bin/python
    experiment_runner.py`, `python -m benchmarks`, or a console script's path), without the flags."""
    flags = len(sys.argv) - 1
    typed = list(getattr(sys, "orig_argv", None) or [])
    if len(typed) > flags and typed[len(typed) - flags:] == sys.argv[1:]:
        return typed[:len(typed) - flags]
    return [sys.executable, sys.argv[0] or "experiment_runner.py"]


def resume_command(options: RunOptions) -> str:
    argv = [a for a in sys.argv[1:] if a != "--no-resume" and not a.startswith("--timestamp")]
    return command_line(typed_command() + argv + [f"--timestamp={options.timestamp}"])


class SweepRun:
    """One sweep's execution: offers the plan's configs to the executor in order, writes each record as its
    child ends, keeps the counts and the progress display."""

    def __init__(self, options: RunOptions, executor, writer, bar, env_facts: dict, echo):
        self.options, self.executor, self.writer, self.bar = options, executor, writer, bar
        self.env_facts, self.echo = env_facts, echo
        self.counts = {"ok": 0, "failed": 0, "skipped": 0}
        self.finished = 0
        self.beside = 0  # records timed while other children ran

    def write(self, config, record: dict) -> None:
        record_check.written(record, log)  # the writer's check: a schema problem is a warning (strict: raises)
        self.writer.append(record, sync=False)  # run() syncs once per batch: an fsync per record caps the rate
        status = record["status"]
        self.counts["ok" if status == records.RecordStatus.OK else "skipped" if status == records.RecordStatus.SKIP
                    else "failed"] += 1
        facts = record["environment"].get("executor") or {}
        if facts.get("running_beside_at_start") or facts.get("running_beside_at_end"):
            self.beside += 1
        self.finished += 1
        self.bar.done(self.finished, config, record, self.counts)

    def run(self, todo: list) -> None:
        pending = collections.deque(enumerate(todo))
        job = None
        while pending or self.executor.running():
            while pending:
                key, (config, reason) = pending[0]
                if reason:  # the suite skips it: no child
                    pending.popleft()
                    self.write(config, skipped_record(config, self.options, reason, self.env_facts,
                                                      self.executor_facts_without_child()))
                    continue
                job = job if job is not None and job.key == key else make_job(key, self.options, config, self.echo)
                impossible = self.executor.impossible(job)
                if impossible:
                    pending.popleft()
                    self.write(config, skipped_record(config, self.options, impossible, self.env_facts,
                                                      self.executor_facts_without_child()))
                    continue
                if not self.executor.try_start(job):
                    break  # it waits for resources; nothing overtakes it
                pending.popleft()
                job = None
            self.bar.running([j.config for j in self.executor.running()], self.counts)
            refused = None
            for done in self.executor.wait(WAIT_SECONDS):
                request = done.job.request
                if done.result.write_failed:  # the disk's failure, not the config's: no record, the sweep stops
                    refused = refused or disk_writes.from_description(done.result.write_failed)
                    continue
                self.write(done.job.config, child_record(done.job.config, self.options, done.result,
                                                         request.log_path, self.env_facts, done.facts))
            self.writer.sync()  # every record written so far is on disk before the sweep looks up again
            if refused:
                raise refused

    def executor_facts_without_child(self) -> dict:
        return {"kind": self.executor.kind, "jobs": self.executor.jobs, "host": None, "cores": None, "gpus": [],
                "running_beside_at_start": None, "running_beside_at_end": None}


def execute(options: RunOptions, plan: Plan, executor) -> int:
    """The lock first, then the executor started: a sweep refused the results file never starts (or joins) Ray,
    nor a fork server."""
    results_path = safe_paths.under(options.output_dirname, options.output_basename)
    try:  # held for the sweep's life: one parent per results file (docs/runner.md)
        lock = results_lock.take(options.output_dirname, results_path, wait=options.wait, on_wait=lambda holder: print(
            f"waiting for the sweep writing {results_path} ({results_lock.describe(holder)}) to end", file=sys.stderr))
    except KeyboardInterrupt:
        print(f"\nInterrupted while waiting for {results_path}; nothing was run", file=sys.stderr)
        return 130
    with lock:
        executor.start()
        return run_locked(options, plan, executor, results_path)


def untimed(step: str):
    """run_locked's steps, not timed (the sweep's default)."""
    return contextlib.nullcontext()


def run_locked(options: RunOptions, plan: Plan, executor, results_path: str, timed=untimed) -> int:
    """The sweep, once this parent holds the results file: resume, run what is left, the end-of-sweep table.
    `timed(step)` is a context around each step (scripts/bench/scale.py times them: a step added here is measured
    there too)."""
    todo = left_to_run(plan, results_path, options, timed)
    already = len(plan.configs) * options.rounds + len(plan.skipped) - len(todo)
    log.info("%d model(s) x %d experiment config(s): %d to run, %d already in %s, %d dropped; %s", len(plan.models),
             len(plan.kept), len(todo), already, results_path, len(plan.dropped), executor.describe())
    if not todo:  # a legitimate empty sweep: said, then the table of what the file holds; exit as its records say
        print(f"nothing to run: every config is already in {results_path} (--retry-failed re-runs the failed ones, "
              "--no-resume starts a new file)", file=sys.stderr)
    first = next((config for config, reason in todo if not reason), None)
    with timed("noise-check"):
        if first is not None:  # its fork server (or the nodes') starts while the noise check runs
            executor.prepare(make_job(-1, options, first, None).request)
        env_facts = noise.sweep_environment(options.noise)  # once per sweep: warns, and every record carries it
    bar = progress.Progress(len(todo), enabled=options.progress_bar or sys.stderr.isatty())
    echo = bar.write if options.print_subprocess else None
    started = time.monotonic()
    try:
        with timed("sweep"), records.ResultsWriter(results_path) as writer, bar:
            run = SweepRun(options, executor, writer, bar, env_facts, echo)
            try:
                run.run(todo)
            except KeyboardInterrupt:
                executor.stop_all()  # every running child's process group; their records are not written
                print(f"\nInterrupted: every record written so far is in {results_path}.\n"
                      f"Resume with: {resume_command(options)}", file=sys.stderr)
                return 130
            except disk_writes.WriteFailed:
                executor.stop_all()  # the configs running have no record: they run again on resume
                raise
    except disk_writes.WriteFailed as exc:  # a full disk is a clear stop (docs/runner.md, "A full disk")
        raise UsageError(f"{exc}: the sweep stopped; every record written before is in {results_path} and no "
                         "config was blamed; free some space and run the same command to resume") from None
    elapsed = time.monotonic() - started
    with timed("end-of-sweep"):
        latest = progress.latest_records(results_path, plan.configs)
        print(progress.end_of_sweep(results_path, latest, options, run.counts, already, elapsed,
                                    resume_command(options), beside=run.beside, jobs=executor.jobs))
    # docs/command-line.md: a sweep whose configs' latest records include a failure (a failed status, or a verdict
    # that fails: --verify's, the golden check's) is bad news (exit 1), resumed or not; every record is written all
    # the same.
    return EXIT_BAD_NEWS if progress.not_passing(latest) else 0
