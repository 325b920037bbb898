"""What every tool shares: the record, the experiment config, experiment_runner.py's flags and options (what
its parent and child both read), statistics, tiers, output paths, machine facts and the command-line helpers.
Imports nothing from the tools (docs/architecture.md)."""
