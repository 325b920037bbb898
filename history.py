#!/usr/bin/env python3
"""Regressions over time: ingest results into a history database, show series, detect changes and events,
bisect a git repository to the commit. See --help and docs/history.md."""

import sys

from benchmarks.history.cli import main

if __name__ == "__main__":
    sys.exit(main())
