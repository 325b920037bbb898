#!/usr/bin/env python3
"""Run a matrix of PyTorch model benchmarks, one child process per config. See --help and README.md."""

import sys

from benchmarks.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
