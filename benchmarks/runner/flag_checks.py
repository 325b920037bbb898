"""The checks of a sweep's flags against what the sweep finds: a -k pattern that matches no model, an unknown --dynamo
backend, an unknown Inductor setting (one line, exit 2, or under --allow-empty a warning and the name left out), and
the --batch-size-file read. The checks of flags against each other are config/run_options.check_combinations'."""

from __future__ import annotations

import logging
import re
from typing import Optional

from benchmarks import features
from benchmarks.config import backend_registry, batch_size_file
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing.cli_support import UsageError, close_matches, unknown_name
from benchmarks.runner import matrix
from benchmarks.suites.library_names import plain_name

log = logging.getLogger("benchmarks.runner.flag_checks")


def refuse_or_warn(problem: str, options: RunOptions) -> None:
    """An unknown name in the flags: exit 2 (UsageError), or under --allow-empty a warning, the name left out."""
    if not options.allow_empty:
        raise UsageError(f"{problem} (--allow-empty: leave it out and go on)")
    log.warning("%s: left out (--allow-empty)", problem)


def check_filters_match(suite, options: RunOptions, models: list) -> None:
    """Each -k pattern must match a model of the suite's whole list (before partitions): one that matches none
    is a typo, refused with the close matches (the same words as a library suite's unknown name)."""
    names = [m["model_name"] for m in models]
    for pattern in options.filter:
        if not any(re.search(pattern, name, re.IGNORECASE) for name in names):
            spelled = plain_name(pattern) or re.sub(r"[^A-Za-z0-9_.\-]", "", pattern)
            close = close_matches(spelled, names)
            hint = (f"close matches: {', '.join(close)}" if close else f"its models: {', '.join(names)}"
                    if len(names) <= 10 else "no close match")
            refuse_or_warn(f"-k {pattern!r} matches no model of suite {suite.name}; {hint}", options)


def check_dynamo_backends(experiments: list, caps: matrix.Capabilities, options: RunOptions) -> list:
    """The experiments whose --dynamo backend torch knows (or an export backend); an unknown name is a typo,
    refused with the close matches (or left out under --allow-empty). Without the probe's list (no dynamo
    config, or the probe failed) nothing is judged here: the support rules say why a config can't run."""
    known = set(caps.dynamo_backends)
    if not known:
        return experiments
    unknown = sorted({e.dynamo for e in experiments
                      if e.dynamo is not None and not backend_registry.available(e.dynamo, known)})
    for name in unknown:
        refuse_or_warn(unknown_name("--dynamo backend", name, backend_registry.known(known)), options)
    return [e for e in experiments if e.dynamo not in unknown]


def check_inductor_settings(experiments: list, caps: matrix.Capabilities) -> None:
    """An unknown Inductor setting or a badly typed value: one line, exit 2, before anything runs. A torch whose
    settings could not be listed (the probe's reason) leaves them to its children, which set them or fail saying so."""
    if caps.inductor_settings_error and any(e.inductor_config for e in experiments):
        log.warning("--inductor-config is not checked before the children run: %s", caps.inductor_settings_error)
    known = dict(caps.inductor_settings)
    checks = features.declared("inductor_settings_problem") if known else ()
    for experiment in experiments:
        for settings_problem in checks:
            problem = settings_problem(experiment, known)
            if problem:
                raise UsageError(problem)


def file_batch_sizes(options: RunOptions, models: list) -> Optional[dict]:
    """--batch-size-file's {model name: batch size} (None without it); a file that can't be read is a UsageError,
    the models it lacks a warning (they run at their own batch size)."""
    if not options.batch_size_file:
        return None
    try:
        sizes = batch_size_file.read(options.batch_size_file)
    except batch_size_file.BatchSizeFileError as exc:
        raise UsageError(f"--batch-size-file {exc}") from None
    lacking = [m["model_name"] for m in models if m["model_name"] not in sizes]
    if lacking:
        log.warning("--batch-size-file %s has no row for %s: run at their own batch size", options.batch_size_file,
                    ", ".join(lacking[:10]) + (f" and {len(lacking) - 10} more" if len(lacking) > 10 else ""))
    return sizes
