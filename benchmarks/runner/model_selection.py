"""Which models a sweep runs: the suite's list and the models named with -k, each -k pattern checked against them,
the filters and tiers, the partition; why none is selected, when none is."""

from __future__ import annotations

import logging
import re
import sys
from typing import Optional

from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing.cli_support import UsageError, close_matches, refuse_or_warn
from benchmarks.suites.library_names import plain_name

log = logging.getLogger("benchmarks.runner.model_selection")


def select_models(suite, options: RunOptions) -> list:
    """The models the flags select in --partition-id's part of the suite's list."""
    return selection(suite, options)[0]


def selection(suite, options: RunOptions) -> tuple:
    """(the models the flags select in this partition, how many they select in the whole list). A -k pattern that
    matches no model of the whole list is a typo, refused with the close matches (the same words as a library
    suite's unknown name), or under --allow-empty warned about."""
    spelled = {pattern: plain_name(pattern) for pattern in options.filter}
    models = suite.list_models(options.parsed_flags)
    named = [name for pattern, name in spelled.items()
             if name and not any(re.search(pattern, m["model_name"], re.IGNORECASE) for m in models)]
    if named:  # exact names outside the suite's list: a library suite builds any model it knows
        models = models + suite.named_models(named, options.parsed_flags)
    names = [m["model_name"] for m in models]
    for pattern in options.filter:
        if not any(re.search(pattern, name, re.IGNORECASE) for name in names):
            close = close_matches(spelled[pattern] or re.sub(r"[^A-Za-z0-9_.\-]", "", pattern), names)
            hint = (f"close matches: {', '.join(close)}" if close else f"its models: {', '.join(names)}"
                    if len(names) <= 10 else "no close match")
            refuse_or_warn(f"-k {pattern!r} matches no model of suite {suite.name}; {hint}", options.allow_empty, log)
    tiers = suite.tiers()
    keep = [re.compile(p, re.IGNORECASE) for p in options.filter]
    drop = [re.compile(p, re.IGNORECASE) for p in options.exclude]
    for tier in options.filter_by_tier:
        names = tiers.get(tier)
        if names is None:
            raise UsageError(f"suite {suite.name} has no tier {tier} (tiers: {sorted(tiers) or 'none'})")
        keep.append(re.compile("^(" + "|".join(map(re.escape, names)) + ")$"))
    for tier in options.exclude_by_tier:
        names = tiers.get(tier)
        if names is None:
            raise UsageError(f"suite {suite.name} has no tier {tier} (tiers: {sorted(tiers) or 'none'})")
        drop.append(re.compile("^(" + "|".join(map(re.escape, names)) + ")$"))
    whole = [m for m in models if (not keep or any(p.search(m["model_name"]) for p in keep))
             and not any(p.search(m["model_name"]) for p in drop)]
    # Partitions slice the suite's whole list first, as upstream does, so shards are stable under filters.
    total, index = options.total_partitions, options.partition_id
    size = len(models) // total
    end = len(models) if index == total - 1 else (index + 1) * size
    part = {id(model) for model in models[index * size:end]}
    return [model for model in whole if id(model) in part], len(whole)


def models_to_run(suite, options: RunOptions) -> Optional[list]:
    """The selected models; None when there are none and that is legitimate (or --allow-empty), said on stderr; a
    selection of nothing by mistake is a UsageError. Legitimate: this partition holds none of the models the
    filters select (the other partitions do)."""
    models, whole = selection(suite, options)
    if models:
        return models
    if whole:
        print(f"nothing to run: partition {options.partition_id} of {options.total_partitions} holds none of the "
              f"{whole} model(s) the filters select", file=sys.stderr)
        return None
    message = f"nothing to run: no model of suite {suite.name} is selected by the filters"
    if not options.allow_empty:
        raise UsageError(f"{message}; --allow-empty exits 0 instead")
    print(message, file=sys.stderr)
    return None
