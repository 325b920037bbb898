"""One config in one process: backends and sync, the measured loop, precise timing, --verify and the
diagnostics. The only part that imports torch and torch_xla (docs/architecture.md)."""
