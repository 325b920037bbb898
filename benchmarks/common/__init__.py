"""What every tool shares: the record, the experiment config, statistics, tiers, output paths,
machine facts and the command-line helpers. Imports nothing from the tools (docs/architecture.md)."""
