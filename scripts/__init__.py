"""The project's own tools beside the library, in four families, each run from the repository root as a module
(`python -m scripts.bench.sweep`): the root is then first on the import path, so they import `benchmarks` and each
other plainly, installed or not. Not part of the installed package (pyproject.toml's discovery includes only
benchmarks*).

- bench/: measurements that print figures (the `make bench-*` targets, and `make bench`'s choice of sweep).
- gpu/: what a lent GPU machine runs with its own Python and torch, without the project installed (`make gpu-check`,
  `make gpu-slice`, and `make gpu-harness`'s subset of the dynamo harness to carry there); the slice's plan and report
  are libraries of their own.
- parity/: PyTorch's dynamo harness beside ours (`make parity`): finding and shimming the harness, the side-by-side
  table (also the GPU slice's).
- upkeep/: checks and chores that keep the project sound rather than measure it: the fuzzers (`make fuzz-scanner`,
  `make fuzz-records`), the soak under faults (`make soak`), building a venv on another torch (`make env TORCH=...`)
  and the newest torch's small sweep (`make test-torch-latest`).
"""
