"""experiment_runner.py's parent: the checks of the sweep's own flags, then the sweep. The flags are declared
and parsed in config/run_options.py; benchmarks/__main__.py dispatches here, or to the child for one config."""

from __future__ import annotations

import re

from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing import torch_support
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.plumbing.safe_paths import PathEscapes
from benchmarks.runner import sweep


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
        if options.find_batch_sizes:  # not a sweep: a search per model (runner/batch_size_search.py)
            from benchmarks.runner import batch_size_search

            return batch_size_search.run(options)
        return sweep.run_sweep(options)
    except PathEscapes as exc:  # --output-basename, or a link in the output directory that points out of it
        raise UsageError(f"nothing is written outside --output-dirname: {exc}") from None
