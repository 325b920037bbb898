"""result_analyzer.py's compiled reader (benchmarks/analyzer/_jsonl_scan.c, built by `make env`), loaded once:
the module, or why it cannot be used. Without it every range is read by the Python reader (same report)."""

from __future__ import annotations

import importlib

ABI = 1  # the interface this code expects of benchmarks/analyzer/_jsonl_scan.c (its ABI constant)
MODULE_NAME = "benchmarks.analyzer._jsonl_scan"


def load(name: str = MODULE_NAME) -> tuple:
    """(the compiled reader module, None), or (None, why not): not built (no C compiler at install time), or
    built from another version of benchmarks/analyzer/_jsonl_scan.c (an update since the last `make env`)."""
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None, "not built (benchmarks/analyzer/_jsonl_scan.c; `make env` or `pip install -e .` builds it when a C " \
                     "compiler is installed)"
    if getattr(module, "ABI", None) != ABI:
        return None, "built from another version of benchmarks/analyzer/_jsonl_scan.c (run `make env` to rebuild it)"
    return module, None


# Read at call time (compiled_reader.module), never copied: a test sets it to None to run without it.
module, why_unavailable = load()
