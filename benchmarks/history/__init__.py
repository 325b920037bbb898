"""history.py's library: a run history in an embedded database, change points, events and bisection.

How it works:

`history ingest` puts records into one SQLite file (the standard library's: a history is small and read a series at
a time, and it needs no new dependency); a run is its timestamp, host and commit (`environment.git_commit`, or
`--commit`); a record's digest is unique, so ingesting a file again adds nothing. `records_view.view` is the one
place history reads a record, through its `Measurement`: config key (with the accelerator model: one series per kind
of machine), labels and backend label, status, the per-iteration samples as compare.py takes them (its warm-up
policy), the first run's time (compare's compile figure), the peak memory, the graph breaks
(`Measurement.dynamo_stat`, as compare.py's gate reads them) and a generate run's figures
(`metric_words.generation_figures`: each generate figure's `Measurement.median` over the timed runs, kept as JSON in
schema 4's `measurements.figures`); what is history's own (run identity, digest, verification code) stays there.
show and detect select configs with the shared selection flags (`results/selection.py`, `--precision` included),
matched on the labels the database keeps. `detect` finds change points in each config's per-run medians (log scale)
with E-divisive means and its permutation test (`detection.py`: the first test on a series without a change rejects
with probability alpha, the stated false-alarm rate), sizes each change with compare.py's bootstrap over the runs'
processes on either side, and groups changes of different configs at the same run (a platform-wide group moves most
models). `bisect` works in a clone of the user's repository under the output directory, runs experiment_runner.py
with `--rounds` per commit and decides with compare.py's statistics and outcomes against both ends; state.json makes
it resumable. `make bench-history` measures detection against the two fixed rules the field uses.
"""
