"""experiment_runner.py's parent: the matrix and its support rules, the sweep, the launcher and probe, noise
checks, progress. Never imports torch, nor the child (docs/architecture.md)."""
