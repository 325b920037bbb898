"""What a sweep asks for: experiment_runner.py's flags and options, the experiment config and its axes, each axis's
names and support rules, tolerances and the accuracy rule, tiers, and the environment a config's child runs in.
Imports only config/ and plumbing/ (docs/architecture.md, "Layout")."""
