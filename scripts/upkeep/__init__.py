"""Checks and chores that keep the project sound rather than measure it: the fuzzers of the compiled reader
(fuzz_scanner.py) and of the record validation (fuzz_records.py), the soak under faults (soak.py), a venv built on
another torch (make_venv.py, `make env TORCH=...`) and the newest torch's small sweep (torch_sweep.py,
`make test-torch-latest`). Run as `python -m scripts.upkeep.<tool>` from the repository root."""
