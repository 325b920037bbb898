"""The sweep (the parent): plan the matrix, resume, launch one child per config, write every record.

The parent never imports torch or torch_xla: what it must know from them comes from one probe child.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import shlex
import subprocess
import sys
import time
from typing import Optional

from benchmarks.common import experiment_config
from benchmarks.common.cli_support import UsageError
from benchmarks.common.cpu_affinity import requested_cores
from benchmarks.common.run_options import RunOptions

from benchmarks.runner import matrix

from benchmarks.runner import launcher, noise, progress

from benchmarks.child import diagnostics, precise_timing

from benchmarks.common import machine_facts, output_paths, records
from benchmarks.child.process_env import child_environment
from benchmarks.suites import load_suite

log = logging.getLogger("benchmarks.runner.sweep")

DEFAULT_ACCELERATORS = ["cpu", "cuda", "tpu"]
DEFAULT_XLA = [None, "PJRT"]
DEFAULT_DYNAMO = [None, "inductor", "openxla"]
DEFAULT_TESTS = ["eval", "train"]


@dataclasses.dataclass
class Config:
    model: dict
    experiment: experiment_config.ExperimentConfig
    verify: bool = False

    @property
    def fingerprint(self) -> str:
        return records.fingerprint(self.model, self.experiment.to_dict(), self.experiment.batch_size, self.verify)

    def label(self) -> str:
        return f"{self.model['model_name']} {self.experiment.slug()}"


def entry_argv() -> list:
    """How to start experiment_runner.py in a child: the top-level script when present, else the package."""
    script = os.path.join(machine_facts.PROJECT_ROOT, "experiment_runner.py")
    if os.path.exists(script):
        return [sys.executable, script]
    return [sys.executable, "-m", "benchmarks"]


def single_config_argv(options: RunOptions, config: Config) -> list:
    return entry_argv() + list(options.child_flags) + [
        "--model-config=" + json.dumps(config.model, sort_keys=True),
        "--experiment-config=" + json.dumps(config.experiment.to_dict()),
    ]


# ---------------------------------------------------------------- planning


def select_models(suite, options: RunOptions) -> list:
    models = suite.list_models(options.suite_flags)
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


def expand_experiments(suite, options: RunOptions) -> list:
    return matrix.expand(
        accelerators=options.accelerator or DEFAULT_ACCELERATORS,
        xlas=options.xla or DEFAULT_XLA,
        dynamos=options.dynamo or DEFAULT_DYNAMO,
        tests=options.test or DEFAULT_TESTS,
        xla_flags=options.xla_flags or [None],
        batch_sizes=options.batch_size or [None],
        enable_functionalization=options.enable_functionalization,
        extra_axes=suite.extra_axes(options.suite_flags),
        quantizations=options.quantization or [None],
    )


def probe(experiments: list) -> matrix.Capabilities:
    """One child that imports torch (and torch_xla only if a config wants XLA) and says what it found.
    Only what some config needs is asked; a sweep of plain eager CPU configs needs no probe at all."""
    kinds = sorted({e.accelerator.upper() for e in experiments if e.xla})
    need_dynamo = any(e.dynamo for e in experiments)
    need_cuda = any(e.accelerator == "cuda" for e in experiments)
    if not (kinds or need_dynamo or need_cuda):
        return matrix.Capabilities()
    argv = [sys.executable, "-m", "benchmarks.runner.probe"] + [f"--xla-kind={k}" for k in kinds]
    argv += ["--dynamo"] * need_dynamo + ["--cuda"] * need_cuda
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [machine_facts.PROJECT_ROOT,
                                                                    os.environ.get("PYTHONPATH")])))
    started = time.monotonic()
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    log.debug("probe took %.1f s", time.monotonic() - started)
    try:
        facts = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        detail = records.short_message(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "no output")
        raise UsageError(f"cannot start torch in a child process ({detail}); is the environment built? (make)")
    return matrix.Capabilities.from_dict(facts)


def with_accelerator_model(experiment, caps: matrix.Capabilities):
    model = machine_facts.accelerator_model(experiment.accelerator, caps.cuda_devices, caps.tpu_type)
    return experiment.with_(accelerator_model=model)


# ---------------------------------------------------------------- resume


def load_done(path: str, retry_failed: bool) -> tuple:
    """(fingerprints not to run again, count of earlier records) from an existing results file."""
    if not os.path.exists(path):
        return set(), 0
    latest = {}
    count = 0
    for record in records.read_records(path):
        key = records.record_fingerprint(record)
        if key is not None:
            latest[key] = records.record_status(record)
            count += 1
    if retry_failed:
        return {k for k, status in latest.items() if status not in records.FAILED_STATUSES}, count
    return set(latest), count


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


# ---------------------------------------------------------------- one config


def failure_record(config: Config, options: RunOptions, result: launcher.ChildResult, log_path: str, env_facts: dict) -> dict:
    record = records.config_record(config.model, config.experiment, options, env_facts)
    rel_log = output_paths.relative(log_path, options.output_dirname)
    if result.timed_out:
        return records.mark_failed(record, records.STATUS_TIMEOUT, "Timeout",
                                   f"timed out after {options.subprocess_timeout:g} s in phase {result.last_phase}",
                                   result.last_phase, rel_log)
    if result.out_of_memory:
        limit = options.subprocess_memory_limit / 2**30
        return records.mark_failed(record, records.STATUS_OOM, "MemoryLimitExceeded",
                                   f"resident memory of the process tree passed the limit of {limit:.2f} GiB "
                                   f"(reached {result.peak_tree_rss / 2**30:.2f} GiB)", result.last_phase, rel_log)
    signal_name = result.signal_name()
    if signal_name:
        why = {"SIGKILL": " (killed from outside, possibly by the kernel's out-of-memory killer)"}.get(signal_name, "")
        return records.mark_failed(record, records.STATUS_CRASH, signal_name,
                                   f"killed by {signal_name}{why} in phase {result.last_phase}", result.last_phase,
                                   rel_log)
    tail = launcher.log_tail(log_path)
    message = f"exited with status {result.returncode} without handing back a record"
    if tail and result.returncode:
        message += f"; last output: {tail}"
    return records.mark_failed(record, records.STATUS_CRASH, "NoRecord", message, result.last_phase, rel_log)


def run_one(options: RunOptions, config: Config, env_facts: dict, echo) -> dict:
    log_path = output_paths.log_path(options.output_dirname, config.model, config.experiment)
    request = launcher.ChildRequest(
        argv=single_config_argv(options, config),
        env=child_environment(config.experiment, options, dict(os.environ), config.model),
        log_path=log_path,
        timeout=options.subprocess_timeout,
        memory_limit=options.subprocess_memory_limit,
        echo=echo,
        cpu_affinity=requested_cores(options.noise),
    )
    result = launcher.run_child(request)
    if result.record is None:
        record = failure_record(config, options, result, log_path, env_facts)
        record["artifacts"].update(diagnostics.env_artifacts(options, config.model, config.experiment))  # XLA dumps
        return noise.annotate(record, env_facts.get("noise"), result.cpu_affinity)
    record = noise.annotate(result.record, env_facts.get("noise"), result.cpu_affinity)  # the sweep's facts
    if record.get("error"):
        record["error"]["log"] = output_paths.relative(log_path, options.output_dirname)
    if result.returncode:
        log.warning("%s: exited with status %s after handing back its record", config.label(), result.returncode)
    return record


def skip_record(config: Config, options: RunOptions, reason: str, env_facts: dict) -> dict:
    record = records.config_record(config.model, config.experiment, options, env_facts)
    return records.mark_failed(record, records.STATUS_SKIP, "Unsupported", reason, "setup",
                               verification_code=records.VERIFIER_SKIPPED)


# ---------------------------------------------------------------- the sweep


def print_dry_run(options: RunOptions, configs: list, skipped: list, dropped: list, models: list, kept: list) -> None:
    out = sys.stdout
    print(f"# {len(configs)} config(s) to run; each line is its exact single-config command", file=out)
    for config in configs:
        print(shlex.join(single_config_argv(options, config)), file=out)
    if skipped:
        print(f"# {len(skipped)} config(s) the suite skips (a skip record is written when the sweep runs)", file=out)
        for config, reason in skipped:
            print(f"skip: {config.label()}: {reason}", file=out)
    if dropped:
        print(f"# {len(dropped)} experiment config(s) dropped", file=out)
        for experiment, reason in dropped:
            print(f"dropped: {experiment.describe()}: {reason}", file=out)
    print(f"# {len(models)} model(s) x {len(kept)} experiment config(s): {len(configs)} to run, "
          f"{len(skipped)} skipped, {len(dropped)} experiment config(s) dropped", file=out)


def resume_command(options: RunOptions) -> str:
    argv = [a for a in sys.argv[1:] if a != "--no-resume" and not a.startswith("--timestamp")]
    return shlex.join(["python", os.path.basename(sys.argv[0]) or "experiment_runner.py"] + argv
                      + [f"--timestamp={options.timestamp}"])


def run_sweep(options: RunOptions) -> int:
    suite = load_suite(options.suite_name)
    models = select_models(suite, options)
    if not models:
        print(f"nothing to run: no model of suite {suite.name} is selected by the filters", file=sys.stderr)
        return 0
    experiments = expand_experiments(suite, options)
    caps = probe(experiments)
    kept, dropped = matrix.split(experiments, caps, matrix.SUPPORT_RULES + precise_timing.support_rules(options.timing))
    kept = [with_accelerator_model(e, caps) for e in kept]
    verify = options.verify.enabled
    configs, skipped = [], []
    for model in models:
        for experiment in kept:
            if not suite.matches(model, experiment):
                continue
            config = Config(model, experiment, verify)
            reason = suite.skip_reason(model, experiment, options.suite_flags)
            (skipped.append((config, reason)) if reason else configs.append(config))
    if options.dry_run:
        print_dry_run(options, configs, skipped, dropped, models, kept)
        return 0
    if not kept:
        print("nothing to run: every experiment config was dropped (see --dry-run for why)", file=sys.stderr)
        return 0

    problem = records.check_writable_dir(options.output_dirname)
    if problem:
        raise UsageError(problem)
    results_path = os.path.join(options.output_dirname, options.output_basename)
    if options.no_resume:
        backup = back_up(results_path)
        if backup:
            log.info("--no-resume: the earlier results were kept as %s", backup)
    done, _ = load_done(results_path, options.retry_failed)
    for config, reason in dropped:
        log.info("dropped %s: %s", config.describe(), reason)
    plan = [(c, None) for c in configs] + [(c, reason) for c, reason in skipped]
    plan.sort(key=lambda item: models.index(item[0].model))  # outer loop models, as upstream
    todo = [(c, reason) for c, reason in plan if c.fingerprint not in done]
    already = len(plan) - len(todo)
    log.info("%d model(s) x %d experiment config(s): %d to run, %d already in %s, %d dropped", len(models),
             len(kept), len(todo), already, results_path, len(dropped))
    noise_facts = noise.sweep_check(options.noise)  # once per sweep: warns, and every record carries it
    env_facts = noise.annotate({"environment": machine_facts.collect()}, noise_facts)["environment"]
    counts = {"ok": 0, "failed": 0, "skipped": 0}
    bar = progress.Progress(len(todo), enabled=options.progress_bar or sys.stderr.isatty())
    echo = bar.write if options.print_subprocess else None
    started = time.monotonic()
    try:
        with records.ResultsWriter(results_path) as writer, bar:
            for index, (config, reason) in enumerate(todo, start=1):
                bar.describe(config, counts)
                if reason:
                    record = skip_record(config, options, reason, env_facts)
                else:
                    record = run_one(options, config, env_facts, echo)
                writer.append(record)
                status = record["status"]
                counts["ok" if status == records.STATUS_OK else "skipped" if status == records.STATUS_SKIP
                       else "failed"] += 1
                bar.done(index, config, record, counts)
    except KeyboardInterrupt:
        print(f"\nInterrupted: every record written so far is in {results_path}.\n"
              f"Resume with: {resume_command(options)}", file=sys.stderr)
        return 130
    elapsed = time.monotonic() - started
    print(progress.end_of_sweep(results_path, configs, options, counts, already, elapsed, resume_command(options)))
    return 0
