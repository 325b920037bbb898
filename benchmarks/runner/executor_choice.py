"""The executor a sweep's flags ask for (--executor): the local one (runner/executor.py), or Ray's
(runner/ray/cluster_executor.py, imported only when asked for)."""

from __future__ import annotations

from benchmarks.config.run_options import RunOptions
from benchmarks.fork_server import client
from benchmarks.runner.executor import LocalExecutor


def make_executor(options: RunOptions, plan):
    """The executor the flags ask for, checked but not started (`start()`: Ray is started or joined there); a
    request this machine can't meet is a UsageError."""
    preloads = client.preloads_for(plan.kept, counts_work=not options.diagnostics.no_roofline)  # what each child would import: its fork server imports it first
    if options.executor == "ray":
        from benchmarks.runner.ray import cluster_executor

        return cluster_executor.RayExecutor(options, preloads)
    return LocalExecutor(options, len(plan.capabilities.cuda_devices), preloads)
