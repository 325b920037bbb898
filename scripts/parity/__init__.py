"""PyTorch's dynamo benchmark harness beside ours (`make parity`, docs/parity.md): harness.py finds a checkout and runs
it offline (its shims and environment), table.py reads both sides and lays out the side-by-side table with every
difference named (the GPU slice's report uses it too), report.py is the command. Run as
`python -m scripts.parity.report` from the repository root."""
