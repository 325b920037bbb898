"""result_analyzer.py's library: results files -> CSV / JSON Lines rows, with its compiled reader
(docs/architecture.md)."""
