#!/usr/bin/env python3
"""Benchmark results (JSON Lines) -> a report with one row per record (CSV or JSON Lines). See --help."""

import sys

from benchmarks.analyzer.cli import main

if __name__ == "__main__":
    sys.exit(main())
