"""The plan of a sweep: which configs, in which order, and what earlier runs already did.

Models (the suite's list, filters, tiers, partitions) x experiment configs (the matrix, filtered by the
support rules) give the Configs; the suite may skip some (a skip record says why); resume leaves out what
the results file already holds (by fingerprint); earlier run times order the rest longest first.
Pure Python: the parent never imports torch (what it must know comes from the probe).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
import statistics
import sys
import time
from typing import Optional

from benchmarks.config import axes, backend_registry, batch_size_file, experiment_config, pure_wall_time, rerun_command
from benchmarks.config.run_options import RunOptions
from benchmarks.features import compile_options, precision
from benchmarks.plumbing import machine_facts
from benchmarks.plumbing.cli_support import UsageError, close_matches, shown, unknown_name
from benchmarks.results import records
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import probe_capabilities
from benchmarks.suites.library_names import plain_name

log = logging.getLogger("benchmarks.runner.plan")


@dataclasses.dataclass
class Config:
    model: dict
    experiment: experiment_config.ExperimentConfig
    verify: bool = False
    round: int = 0  # --rounds: which run of this config (0-based)
    golden: Optional[dict] = None  # the golden flags set (records.golden_request): part of the fingerprint
    # Why the model runs another precision than asked or the suite's default (suite.precision_reason); every
    # record of the config carries it (key precision_reason). Not part of the fingerprint: a fact, not a choice.
    precision_reason: Optional[str] = None

    @functools.cached_property  # asked several times per config (plan, resume, order, the end): computed once
    def fingerprint(self) -> str:
        return records.fingerprint(self.model, self.experiment.to_dict(), self.experiment.batch_size, self.verify,
                                   self.round, self.golden)

    @property
    def first_round(self) -> "Config":
        return dataclasses.replace(self, round=0) if self.round else self

    def label(self) -> str:
        label = f"{shown(self.model['model_name'])} {self.experiment.slug()}"
        return f"{label} round {self.round}" if self.round else label


def single_config_argv(options: RunOptions, config: Config) -> list:
    return rerun_command.single_config_argv(options.child_flags, config.model, config.experiment.to_dict())


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


def expand_experiments(suite, options: RunOptions) -> list:
    """The matrix the flags ask for; an axis not given takes its sweep default (matrix.expand)."""
    asked = {"accelerator": options.accelerator, "xla": options.xla, "xla_flags": options.xla_flags,
             "dynamo": options.dynamo, "test": options.test, "batch_size": options.batch_size,
             "enable_functionalization": (options.enable_functionalization,)}
    asked.update({axis.key: axis.asked(options) for axis in axes.AXES})
    return matrix.expand(asked, suite.extra_axes(options.parsed_flags))


def with_accelerator_model(experiment, caps: matrix.Capabilities):
    model = machine_facts.accelerator_model(experiment.accelerator, caps.cuda_devices, caps.tpu_type)
    return experiment.with_(accelerator_model=model)


@dataclasses.dataclass
class Plan:
    models: list
    kept: list  # experiment configs that can run here
    dropped: list  # (experiment config, reason)
    configs: list  # Configs to run
    skipped: list  # (Config, reason): the suite skips them; the sweep writes a skip record for each
    capabilities: matrix.Capabilities = dataclasses.field(default_factory=matrix.Capabilities)


def check_inductor_settings(experiments: list, caps: matrix.Capabilities) -> None:
    """An unknown Inductor setting or a badly typed value: one line, exit 2, before anything runs. A torch whose
    settings could not be listed (the probe's reason) leaves them to its children, which set them or fail saying so."""
    if caps.inductor_settings_error and any(e.inductor_config for e in experiments):
        log.warning("--inductor-config is not checked before the children run: %s", caps.inductor_settings_error)
    known = dict(caps.inductor_settings)
    for experiment in experiments:
        if experiment.inductor_config and known:
            problem = compile_options.check_settings(compile_options.settings_of(experiment.inductor_config), known)
            if problem:
                raise UsageError(problem)


def model_config(suite, options: RunOptions, model: dict, experiment, golden=None) -> tuple:
    """(Config, skip reason or None) of one model and experiment: the precision and training step the suite runs it
    in, and why the suite (or the precision) can't run it."""
    experiment, why = suite.resolve(model, experiment)
    config = Config(model, experiment, options.verify.enabled, golden=golden, precision_reason=why)
    reason = precision.unsupported_reason(experiment) or suite.skip_reason(model, experiment, options.parsed_flags)
    return config, reason


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


def with_file_batch_size(experiment, sizes: Optional[dict], model: dict, path: str) -> tuple:
    """(experiment at the model's batch size from --batch-size-file, skip reason or None)."""
    size = (sizes or {}).get(model["model_name"])
    if size is None:
        return experiment, None
    if size == batch_size_file.NONE_RAN:
        return experiment, (f"--batch-size-file {path}: {model['model_name']} has {size}, no batch size ran "
                            "(--find-batch-sizes failed at every size down to 1)")
    return experiment.with_(batch_size=size), None


def make_plan(suite, options: RunOptions, models: list) -> Plan:
    experiments = expand_experiments(suite, options)
    caps = probe_capabilities(experiments)
    check_inductor_settings(experiments, caps)
    experiments = check_dynamo_backends(experiments, caps, options)
    rules = matrix.SUPPORT_RULES + pure_wall_time.support_rules(options.timing)
    kept, dropped = matrix.split(experiments, caps, rules)
    kept = [with_accelerator_model(e, caps) for e in kept]
    sizes = file_batch_sizes(options, models)
    configs, skipped = [], []
    golden = records.golden_request(options.golden)
    for model in models:
        seen = set()  # two requested precisions (or steps) may be one for a model (the suite forces one)
        for experiment in kept:
            if not suite.matches(model, experiment):
                continue
            experiment, unset = with_file_batch_size(experiment, sizes, model, options.batch_size_file)
            config, reason = model_config(suite, options, model, experiment, golden)
            if config.fingerprint in seen:
                continue
            seen.add(config.fingerprint)
            reason = unset or reason
            (skipped.append((config, reason)) if reason else configs.append(config))
    return Plan(models, kept, dropped, configs, skipped, caps)


# ---------------------------------------------------------------- resume and order


@dataclasses.dataclass
class Earlier:
    """What the results file already holds: fingerprints not to run again, and each config's last run time."""

    done: set
    records: int
    run_seconds: dict  # a config's fingerprint (its first round's) -> the child's wall time in its latest record


def load_earlier(path: str, retry_failed: bool) -> Earlier:
    if not os.path.exists(path):
        return Earlier(set(), 0, {})
    latest, seconds = {}, {}
    count = 0
    # One record at a time (a results file may hold millions; only these three facts are kept of each).
    fingerprint_of = records.RecordFingerprints()
    for record in records.stream_records(path):
        key = fingerprint_of(record)
        if key is None:
            continue
        latest[key] = records.record_status(record)
        count += 1
        run_seconds = record.get("run_seconds")
        if isinstance(run_seconds, (int, float)) and run_seconds > 0:
            first = key if not records.record_round(record) else records.record_fingerprint(dict(record, round=0))
            seconds[first] = float(run_seconds)
    if retry_failed:
        done = {k for k, status in latest.items() if status not in records.FAILED_STATUSES}
    else:
        done = set(latest)
    return Earlier(done, count, seconds)


def in_model_order(plan: Plan) -> list:
    """The plan's configs and its skips as (config, skip reason) pairs, model by model (the outer loop, as
    upstream), each model's in plan order."""
    planned = [(c, None) for c in plan.configs] + [(c, reason) for c, reason in plan.skipped]
    position = {id(model): index for index, model in enumerate(plan.models)}  # configs hold these very dicts
    planned.sort(key=lambda item: position[id(item[0].model)])
    return planned


def plan_rounds(plan: list, rounds: int, done: set) -> list:
    """The (config, skip reason) entries still to run: every config of `plan` once per round, round by round
    (all configs once, then all again: slow drift of the machine spreads over every config), each round its
    own fingerprint, so a resumed sweep runs only the rounds it lacks. A skip is written once (round 0)."""
    todo = []
    for index in range(rounds):
        for config, reason in plan:
            if reason and index:
                continue
            entry = config if not index else dataclasses.replace(config, round=index)
            if entry.fingerprint not in done:
                todo.append((entry, reason))
    return todo


def longest_first(todo: list, run_seconds: dict) -> list:
    """`todo` ((Config, skip reason) pairs) with the configs whose earlier runs took longest first, within each
    round (rounds stay interleaved), so that the sweep's tail is short; a config never run before counts as
    the median of those that were. Without any earlier run time, plan order is kept (the sort is stable)."""
    seconds = lambda config: run_seconds.get(config.first_round.fingerprint)  # noqa: E731
    known = [s for s in (seconds(c) for c, _ in todo) if s is not None]
    if not known:
        return list(todo)
    typical = statistics.median(known)
    return sorted(todo, key=lambda item: (item[0].round, -(seconds(item[0]) or typical)))


def back_up(path: str) -> Optional[str]:
    if not os.path.exists(path):
        return None
    backup = f"{path}.bak-{time.strftime('%Y%m%d-%H%M%S')}"
    suffix = 1
    while os.path.exists(backup):
        backup = f"{path}.bak-{time.strftime('%Y%m%d-%H%M%S')}-{suffix}"
        suffix += 1
    os.rename(path, backup)
    return backup
