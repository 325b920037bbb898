"""The plan of a sweep, made in one call (`make_plan`): which configs run, and which the suite skips.

Models (runner/model_selection.py: the suite's list, filters, tiers, partitions) x experiment configs (the matrix,
checked against what the probe says torch can do here, runner/flag_checks.py, and filtered by the support rules)
give the Configs; the suite may skip some (a skip record says why). What earlier runs already did and the order of
the rest are runner/resume.py's. Pure Python: the parent never imports torch (what it must know comes from the probe).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import sys
from typing import Optional

from benchmarks import features
from benchmarks.config import batch_size_file, experiment_config, pure_wall_time
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing.cli_support import UsageError, shown
from benchmarks.results import records
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities, probe_capabilities
from benchmarks.runner.flag_checks import check_dynamo_backends, check_inductor_settings
from benchmarks.runner.model_selection import models_to_run

log = logging.getLogger("benchmarks.runner.plan")


@dataclasses.dataclass
class Config:
    model: dict
    experiment: experiment_config.ExperimentConfig
    verify: bool = False
    round: int = 0  # --rounds: which run of this config (0-based)
    golden: Optional[dict] = None  # the golden flags set (GoldenOptions.request): part of the fingerprint
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


@dataclasses.dataclass
class Plan:
    models: list
    kept: list  # experiment configs that can run here
    dropped: list  # (experiment config, reason)
    configs: list  # Configs to run
    skipped: list  # (Config, reason): the suite skips them; the sweep writes a skip record for each
    capabilities: Capabilities = dataclasses.field(default_factory=Capabilities)
    experiments: list = dataclasses.field(default_factory=list)  # the matrix the flags ask for, before the checks


def model_config(suite, options: RunOptions, model: dict, experiment, golden=None) -> tuple:
    """(Config, skip reason or None) of one model and experiment: the precision and training step the suite runs it
    in, and why the suite (or the precision) can't run it."""
    experiment, why = suite.resolve(model, experiment)
    config = Config(model, experiment, options.verify.enabled, golden=golden, precision_reason=why)
    reason = (next(filter(None, (why(experiment) for why in features.declared("resolved_skip_reason"))), None)
              or suite.skip_reason(model, experiment, options.parsed_flags))
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


def model_configs(suite, options: RunOptions, models: list, kept: list) -> tuple:
    """(Configs to run, (Config, skip reason) pairs) of every model and kept experiment config the suite matches."""
    sizes = file_batch_sizes(options, models)
    golden = options.golden.request()
    planned = []  # (Config, skip reason or None), model by model
    for model in models:
        chosen = {}  # by fingerprint: two precisions (or steps) asked may be one for a model (the suite forces one)
        for experiment in kept:
            if not suite.matches(model, experiment):
                continue
            experiment, unset = with_file_batch_size(experiment, sizes, model, options.batch_size_file)
            config, reason = model_config(suite, options, model, experiment, golden)
            chosen.setdefault(config.fingerprint, (config, unset or reason))
        planned.extend(chosen.values())
    configs = [config for config, reason in planned if not reason]
    skipped = [(config, reason) for config, reason in planned if reason]
    return configs, skipped


def shard_of(plan: Plan, options: RunOptions) -> Plan:
    """--shard I/N: the plan's configs (and skips) that are in part I (config/shards.py)."""
    if not options.shard:
        return plan
    holds = options.shard.holds
    configs = [c for c in plan.configs if holds(c.fingerprint)]
    skipped = [(c, why) for c, why in plan.skipped if holds(c.fingerprint)]
    log.info("shard %s: %d of the sweep's %d config(s) to run, %d of its %d skipped", options.shard, len(configs),
             len(plan.configs), len(skipped), len(plan.skipped))
    return dataclasses.replace(plan, configs=configs, skipped=skipped)


def make_plan(suite, options: RunOptions) -> Plan:
    """The whole plan of a sweep, in one call: the models selected (none: an empty plan, said on stderr), the
    experiment configs expanded, what torch can do here probed, the flags checked against it, the configs that
    can't run here dropped with their reasons, each model's configs and skips, --shard's part of them."""
    models = models_to_run(suite, options)
    if not models:
        return Plan([], [], [], [], [])
    experiments = asked = matrix.expand_experiments(suite, options)
    rules = matrix.SUPPORT_RULES + pure_wall_time.support_rules(options.timing)
    caps = probe_capabilities(experiments)
    check_inductor_settings(experiments, caps)
    experiments = check_dynamo_backends(experiments, caps, options)
    kept, dropped = matrix.split(experiments, caps, rules)
    kept = [matrix.with_accelerator_model(e, caps) for e in kept]
    configs, skipped = model_configs(suite, options, models, kept)
    return shard_of(Plan(models, kept, dropped, configs, skipped, caps, asked), options)


def nothing_to_run(plan: Plan, options: RunOptions) -> bool:
    """True when the plan holds nothing to run and that is legitimate: no model selected (said, or refused, by
    runner/model_selection.py), or no experiment config asked for can run here (said on stderr)."""
    if not plan.models:
        return True
    if plan.kept or options.dry_run or options.find_batch_sizes:  # a search says why itself (searched_experiment)
        return False
    reasons = sorted({reason for _, reason in plan.dropped})
    if not reasons:  # --allow-empty left every name out
        print("nothing to run: no experiment config is left (--allow-empty left out the unknown names)",
              file=sys.stderr)
    else:
        print(f"nothing to run: no experiment config asked for can run on this machine ({'; '.join(reasons[:3])}"
              f"{'; ...' if len(reasons) > 3 else ''}; --dry-run lists each)", file=sys.stderr)
    return True
