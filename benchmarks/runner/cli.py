"""experiment_runner.py's parent: the checks of the sweep's own flags, then the sweep's stages in order, each once:
the suite, the plan (runner/plan.py), the executor (runner/executor_choice.py), then the dry run's listing
(runner/dry_run.py) or the execution (runner/sweep.py). --find-batch-sizes takes the same stages: the search's
options first (runner/batch_size_search.py), then its plan, its executor, its dry run's listing, and the search
itself instead of the sweep's execution (it runs each step through runner/sweep.py).
The flags are declared and parsed in config/run_options.py; benchmarks/__main__.py dispatches here, or to the child
for one config."""

from __future__ import annotations

import logging
import re

from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing import scratch_dirs, torch_support
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.plumbing.safe_paths import PathEscapes
from benchmarks.runner import batch_size_search, sweep
from benchmarks.runner.dry_run import print_dry_run
from benchmarks.runner.executor_choice import make_executor
from benchmarks.runner.plan import make_plan, nothing_to_run
from benchmarks.suites import load_suite

log = logging.getLogger("benchmarks.runner.cli")


def validate(options: RunOptions) -> None:
    for flag in ("filter", "exclude"):
        for pattern in getattr(options, flag):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UsageError(f"--{flag} {pattern!r} is not a valid regular expression: {exc}")
    if options.partition_id >= options.total_partitions:
        raise UsageError(f"--partition-id must be below --total-partitions ({options.total_partitions})")


def run(options: RunOptions) -> int:
    """The sweep of `options` (UsageError: bad flags or input)."""
    validate(options)
    if options.shard and options.output_basename == RunOptions.output_basename:  # each part its own file
        options = options.with_(output_basename=options.shard.basename(options.output_basename))
    problem = torch_support.environment_problem()  # before anything starts: one line, not a failure per config
    if problem:
        raise UsageError(problem)
    try:
        suite = load_suite(options.suite_name)
        if options.find_batch_sizes:  # not a sweep: a search per model, of the one experiment config it asks for
            options = batch_size_search.search_options(options)
        plan = make_plan(suite, options)
        if nothing_to_run(plan, options):
            return 0
        if not options.dry_run:
            for path in scratch_dirs.collect_stale():  # what killed sweeps, servers and children left in /tmp
                log.info("removed stale scratch %s", path)
        executor = make_executor(options, plan)  # a request the machine can't meet fails here, before any write
        try:
            if options.find_batch_sizes:  # the search's dry run, or the search, instead of the sweep's
                return batch_size_search.run(options, plan, suite, executor)
            if options.dry_run:
                executor.start()  # to describe it (a Ray cluster's size); a dry run takes no lock
                print_dry_run(options, plan, executor, suite)
                return 0
            return sweep.execute(options, plan, executor)
        finally:
            executor.close()
    except PathEscapes as exc:  # --output-basename, or a link in the output directory that points out of it
        raise UsageError(f"nothing is written outside --output-dirname: {exc}") from None
