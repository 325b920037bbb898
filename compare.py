#!/usr/bin/env python3
"""A/B comparison of two results sets: ratios with confidence intervals, verdicts, an exit status for CI.
See --help and README.md."""

import sys

from benchmarks.compare.cli import main

if __name__ == "__main__":
    sys.exit(main())
