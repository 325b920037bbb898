"""Which models a sweep runs: the suite's list and the models named with -k, the filters and tiers, the partition; why
none is selected, when none is."""

from __future__ import annotations

import re
import sys
from typing import Optional

from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.runner.flag_checks import check_filters_match
from benchmarks.suites.library_names import plain_name


def select_models(suite, options: RunOptions, check_names: bool = True) -> list:
    models = suite.list_models(options.parsed_flags)
    named = [plain_name(p) for p in options.filter
             if plain_name(p) and not any(re.search(p, m["model_name"], re.IGNORECASE) for m in models)]
    if named:  # exact names outside the suite's list: a library suite builds any model it knows
        models = models + suite.named_models(named, options.parsed_flags)
    if check_names:
        check_filters_match(suite, options, models)
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
    # Partitions slice the suite's whole list first, as upstream does, so shards are stable under filters.
    total, index = options.total_partitions, options.partition_id
    size = len(models) // total
    end = len(models) if index == total - 1 else (index + 1) * size
    models = models[index * size:end]
    selected = []
    for model in models:
        name = model["model_name"]
        if keep and not any(p.search(name) for p in keep):
            continue
        if any(p.search(name) for p in drop):
            continue
        selected.append(model)
    return selected


def nothing_selected(suite, options: RunOptions):
    """Why select_models chose no model: (message, legitimate). Legitimate: this partition holds none of the
    models the filters select (the other partitions do)."""
    whole = select_models(suite, options.with_(total_partitions=1, partition_id=0), check_names=False)
    if whole:
        return (f"nothing to run: partition {options.partition_id} of {options.total_partitions} holds none of the "
                f"{len(whole)} model(s) the filters select"), True
    return f"nothing to run: no model of suite {suite.name} is selected by the filters", False


def models_to_run(suite, options: RunOptions) -> Optional[list]:
    """The selected models; None when there are none and that is legitimate (or --allow-empty), said on stderr; a
    selection of nothing by mistake is a UsageError."""
    models = select_models(suite, options)
    if models:
        return models
    message, legitimate = nothing_selected(suite, options)
    if not (legitimate or options.allow_empty):
        raise UsageError(f"{message}; --allow-empty exits 0 instead")
    print(message, file=sys.stderr)
    return None
