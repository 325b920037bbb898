"""aggregate.py's library: geomean speedup reports, tables and plots (docs/architecture.md)."""
