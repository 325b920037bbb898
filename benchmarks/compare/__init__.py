"""compare.py's library: match two result sets, bootstrap their ratios, give outcomes, write the report.

How it compares:

`compare/matching.py` pairs the records of two result sets by the fingerprint of the real config (so
`accelerator_model`, the environment, timestamps and the round don't count: `Measurement.config_key`); the selection
flags (`results/selection.py`) choose which records of both sides are compared; `metrics.py` takes a record's
samples through its `Measurement` (time, compile = the first run's time, memory, or any metric; upstream records'
first sample holds compilation and is left out, as the analyzer does); `bootstrap.py` bootstraps the ratio of pooled
medians over processes (each record is one process: `--rounds R` gives R per config, interleaved), widened for few
processes, vectorised and seeded so the same inputs give the same output; `outcomes.py` turns an interval and the
statuses into an outcome, slower / faster / same / unsure / new-failure / fixed / ... (`results/change_words.py`'s
words; the output calls it the row's `verdict`, the name users know); `comparison.py` builds the rows, the geomean
and the exit status; `report_formats.py` the table, CSV, JSON, Markdown and the forest plot. Round 0 keeps the
fingerprint a config had before rounds existed, so older results files resume unchanged.
"""
