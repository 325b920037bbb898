"""--dry-run's listing of a sweep's plan (docs/runner.md): what runner/sweep.py would run, config by config, each as
the exact command of its child (a search's dry run is runner/batch_size_search.py's)."""

from __future__ import annotations

import sys

from benchmarks.config import rerun_command
from benchmarks.config.run_options import RunOptions
from benchmarks.runner import warm_start
from benchmarks.runner.plan import Plan


def print_dry_run(options: RunOptions, plan: Plan, executor, suite) -> None:
    """--dry-run: the suite's own lines, each config's exact single-config command, the skips and drops, the
    executor and the counts; nothing runs and nothing is written."""
    out = sys.stdout
    for line in suite.dry_run_lines(options.parsed_flags):
        print(f"# {line}", file=out)
    print(f"# {len(plan.configs)} config(s) to run; each line is its exact single-config command", file=out)
    for config in plan.configs:
        print(rerun_command.child_command_line(options.child_flags, config.model, config.experiment.to_dict()),
              file=out)
        if warm_start.is_pair(config.experiment):
            print(f"# {warm_start.DRY_RUN_NOTE}", file=out)
    if plan.skipped:
        print(f"# {len(plan.skipped)} config(s) the suite skips (a skip record is written when the sweep runs)",
              file=out)
        for config, reason in plan.skipped:
            print(f"skip: {config.label()}: {reason}", file=out)
    if plan.dropped:
        print(f"# {len(plan.dropped)} experiment config(s) dropped", file=out)
        for experiment, reason in plan.dropped:
            print(f"dropped: {experiment.describe()}: {reason}", file=out)
    print(f"# {executor.describe()}", file=out)
    if options.rounds > 1:
        print(f"# --rounds {options.rounds}: each config runs {options.rounds} times, all configs once per round",
              file=out)
    print(f"# {len(plan.models)} model(s) x {len(plan.kept)} experiment config(s): {len(plan.configs)} to run, "
          f"{len(plan.skipped)} skipped, {len(plan.dropped)} experiment config(s) dropped", file=out)
