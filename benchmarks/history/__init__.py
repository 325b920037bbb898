"""history.py's library: a run history in an embedded database, change points, events and bisection."""
