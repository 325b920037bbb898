#!/usr/bin/env python3
"""Geomean speedup reports and plots over results files. See --help and README.md."""

import sys

from benchmarks.aggregate.cli import main

if __name__ == "__main__":
    sys.exit(main())
