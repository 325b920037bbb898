"""The plumbing every tool and process shares: command-line conventions, safe paths and durable writes, the fork
server's messages, CPU affinity, scratch and output paths, XLA dump variables, machine facts and the torch it needs.
Knows nothing of configs or records: imports only plumbing/ (docs/architecture.md, "Layout")."""
