"""The one compiled part: result_analyzer.py's reader (benchmarks/analyzer/_jsonl_scan.c). It is optional: without a C
compiler the install still succeeds and the analyzer reads with its pure-Python reader, only slower."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("benchmarks.analyzer._jsonl_scan", ["benchmarks/analyzer/_jsonl_scan.c"], optional=True,
                             extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter"])])
