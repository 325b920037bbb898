"""Measurements that print figures, one tool per `make bench-*` target (and `make bench`'s choice of sweep, sweep.py);
each module's docstring says what it measures. Run as `python -m scripts.bench.<tool>` from the repository root."""
