"""The words compare.py and history.py say of what changed between runs, and their --fail-on lists, from one table:
each tool's tuples below are rows of `Word`, so a word means the same in both (docs/command-line.md, "Names that mean
one thing"; history never imports compare's command line for them).

compare.py: a config's outcome (its row's `verdict` key and column in compare's output: the name users know), the
gates beside it, `geomean` for the geomean's outcome. history.py: a change's direction and the events between runs.
"""

from __future__ import annotations

from benchmarks.results.str_enum import StrEnum


class Word(StrEnum):
    SLOWER = "slower"  # compare's outcome; history's change and bisect's bad side
    FASTER = "faster"  # likewise, the other way
    SAME = "same"  # compare: the interval lies within the threshold
    UNSURE = "unsure"  # compare: the interval is too wide; history: a change whose interval straddles 1
    NEW_FAILURE = "new-failure"  # compare's outcome and history's event: ran before, fails now
    FIXED = "fixed"  # the other way round
    FAILING = "failing"  # compare: fails on both sides
    NO_DATA = "no-data"  # compare: no samples of the metric on a side
    ONLY_CONTROL = "only-control"  # compare: a config on one side only
    ONLY_TREATMENT = "only-treatment"
    GEOMEAN = "geomean"  # compare's --fail-on: the geomean's outcome is slower
    ACCURACY = "accuracy"  # compare's gate: the verdict (`accuracy`) went from a pass to anything else
    GRAPH_BREAKS = "graph-breaks"  # compare's gate and history's event: more graph breaks than before
    RECOMPILES = "recompiles"  # compare's gates: more recompiles; compression ratio or compile latency past the limit
    COMPRESSION = "compression"
    COMPILE_LATENCY = "compile-latency"
    ACCURACY_FAILURE = "accuracy-failure"  # history's events: the verdict passed and now doesn't, and back
    ACCURACY_FIXED = "accuracy-fixed"


# compare.py: the outcomes in the order of its counts line (also the sort order of rows with no ratio), its gates.
COMPARE_OUTCOMES = (Word.SLOWER, Word.NEW_FAILURE, Word.UNSURE, Word.FASTER, Word.FIXED, Word.SAME, Word.FAILING,
                    Word.NO_DATA, Word.ONLY_CONTROL, Word.ONLY_TREATMENT)
COMPARE_GATES = (Word.ACCURACY, Word.GRAPH_BREAKS, Word.RECOMPILES, Word.COMPRESSION, Word.COMPILE_LATENCY)
COMPARE_FAIL_ON = COMPARE_OUTCOMES + (Word.GEOMEAN,) + COMPARE_GATES
COMPARE_DEFAULT_FAIL_ON = (Word.SLOWER, Word.NEW_FAILURE)

# history.py: a change's direction, the events, what detect's --fail-on names.
HISTORY_DIRECTIONS = (Word.SLOWER, Word.FASTER, Word.UNSURE)
HISTORY_EVENTS = (Word.NEW_FAILURE, Word.FIXED, Word.ACCURACY_FAILURE, Word.ACCURACY_FIXED, Word.GRAPH_BREAKS)
HISTORY_FAIL_ON = (Word.SLOWER, Word.FASTER) + HISTORY_EVENTS
HISTORY_DEFAULT_FAIL_ON = (Word.SLOWER, Word.NEW_FAILURE, Word.ACCURACY_FAILURE)
