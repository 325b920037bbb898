"""What a lent GPU machine runs: `make gpu-check` (check.py), `make gpu-slice` (slice.py, with its plan in slice_plan.py
and its report in slice_report.py), the plain CUDA loop both time ours against (plain_loop.py), and `make gpu-harness`
(harness_subset.py: the dynamo harness's part of a TorchBench checkout, to carry there). They run from the repository
root on the machine's own Python and torch, the project not installed (`python -m scripts.gpu.check`): at module top
they import only the standard library and the project's own torch-free code; what needs a wheel is imported after the
wheels are unpacked."""
