"""experiment_runner.py's parent: flags, the matrix and its support rules, the sweep, the launcher and
probe, noise checks, progress. Never imports torch (docs/architecture.md)."""
