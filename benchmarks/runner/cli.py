"""experiment_runner.py's command line: flags (upstream PyTorch/XLA's names), validation, dispatch.

Without --model-config/--experiment-config this is the parent (a sweep); with both, one config in
this process (the child, or a user running one config by hand). Importing this module is cheap.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time

from benchmarks.child import diagnostics, precise_timing, single_config, verify
from benchmarks.common import experiment_config, quantization
from benchmarks.common.cli_support import (Parser, UsageError, forwarded_args, non_negative_int, positive_float,
                                           positive_int, setup_logging)
from benchmarks.common.run_options import RunOptions
from benchmarks.runner import noise, sweep
from benchmarks.suites import all_suites, suite_names

log = logging.getLogger("benchmarks")

# Flags that shape the sweep (the parent's business); every other flag is forwarded to each child.
PARENT_ONLY = {
    "filter", "exclude", "filter_by_tier", "exclude_by_tier", "accelerator", "xla", "dynamo",
    "test", "xla_flags", "batch_size", "enable_functionalization", "total_partitions", "partition_id",
    "dry_run", "print_subprocess", "subprocess_timeout", "subprocess_memory_limit", "progress_bar",
    "no_resume", "retry_failed", "rounds", "experiment_config", "model_config", "record_fd", "help",
    "jobs", "executor", "ray_address", "gpus_per_job", "launch",
    "quantization", "op", "shapes", "dtype",  # microbench: a child's operator, shape and dtype are in its model/experiment config
}

# Features that register their own flags (cheap to import: no torch at module level); their values are
# the sections of RunOptions.
FEATURE_MODULES = (verify, diagnostics, precise_timing, noise)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def memory_size(text: str) -> int:
    """'8G', '512M', '1.5GiB', '1000000' -> bytes (binary multiples)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (try 8G or 512M)")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 1024 ** " kmgt".index(unit or " "))


def xla_choice(text: str):
    value = experiment_config.parse_none(text)
    if value is not None and value.upper() == "PJRT":
        return "PJRT"
    if value is None:
        return None
    if value.upper() == "XRT":
        raise argparse.ArgumentTypeError("XRT was removed from PyTorch/XLA; use PJRT")
    raise argparse.ArgumentTypeError(f"invalid choice {text!r} (choose None or PJRT)")


def quantization_recipe(text: str):
    try:
        return quantization.parse(text)
    except quantization.RecipeError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def build_parser() -> Parser:
    p = Parser(
        prog="experiment_runner.py",
        description="Run a matrix of PyTorch model benchmarks, one child process per (model, experiment).",
        epilog="Example: experiment_runner.py --suite-name=dummy --accelerator=cpu --xla=None --xla=PJRT "
        "--dynamo=None --dynamo=inductor --dynamo=openxla --test=eval --test=train",
    )
    sel = p.add_argument_group("model selection")
    sel.add_argument("--suite-name", default="dummy", choices=suite_names(), help="model suite (default: dummy)")
    sel.add_argument("--filter", "-k", action="append", default=[], metavar="REGEX",
                     help="keep models whose name matches (case-insensitive search; repeatable)")
    sel.add_argument("--exclude", "-x", action="append", default=[], metavar="REGEX",
                     help="drop models whose name matches (repeatable)")
    sel.add_argument("--filter-by-tier", action="append", type=int, default=[], metavar="N",
                     help="keep the models of the suite's tier N (repeatable)")
    sel.add_argument("--exclude-by-tier", action="append", type=int, default=[], metavar="N",
                     help="drop the models of the suite's tier N (repeatable)")
    sel.add_argument("--total-partitions", type=positive_int, default=1, help="split the model list in N slices")
    sel.add_argument("--partition-id", type=non_negative_int, default=0, help="which slice to run (0-based)")

    mx = p.add_argument_group("experiment matrix (each flag repeatable; the product is run)")
    mx.add_argument("--accelerator", action="append", choices=experiment_config.ACCELERATORS,
                    help="default: cpu, cuda, tpu (those not present are dropped, with the reason)")
    mx.add_argument("--xla", action="append", type=xla_choice, metavar="{None,PJRT}", help="default: None, PJRT")
    mx.add_argument("--dynamo", action="append", type=experiment_config.parse_none, metavar="BACKEND",
                    help="None or any registered dynamo backend (inductor, openxla, openxla_eval, aot_eager, ...); "
                    "default: None, inductor, openxla")
    mx.add_argument("--test", action="append", choices=experiment_config.TESTS, help="default: eval, train")
    mx.add_argument("--xla-flags", action="append", type=experiment_config.parse_none, metavar="FLAGS",
                    help="one whole XLA_FLAGS string per value")
    mx.add_argument("--batch-size", action="append", type=positive_int, metavar="N",
                    help="requested batch size (repeatable: a batch-size sweep); default: the model's")
    mx.add_argument("--quantization", action="append", type=quantization_recipe, metavar="RECIPE",
                    help="TorchAO recipe applied after the model is built (repeatable): none (default), "
                    + quantization.KNOWN_TEXT.replace("none, ", "") + "; experiment key `quantization`")
    mx.add_argument("--enable-functionalization", action="store_true",
                    help="keep XLA functionalization on (default: XLA_DISABLE_FUNCTIONALIZATION=1)")

    meas = p.add_argument_group("measurement")
    meas.add_argument("--repeat", type=positive_int, default=10, help="timed runs per config (default 10)")
    meas.add_argument("--iterations-per-run", type=positive_int, default=1, help="iterations per timed run (default 1)")
    meas.add_argument("--warmup", type=non_negative_int, default=2,
                      help="untimed-for-statistics warm-up runs, recorded apart (default 2; the first compiles)")

    run = p.add_argument_group("sweep")
    run.add_argument("--dry-run", action="store_true", help="print the configs (and those dropped, with why); run nothing")
    run.add_argument("--print-subprocess", action="store_true", help="stream each child's output to the terminal too")
    run.add_argument("--subprocess-timeout", type=positive_float, default=1800, metavar="SECONDS",
                     help="kill a child's whole process group after this long (default 1800)")
    run.add_argument("--subprocess-memory-limit", type=memory_size, default=None, metavar="SIZE",
                     help="kill a child whose process tree's resident memory passes SIZE (e.g. 8G): an oom record")
    run.add_argument("--progress-bar", action="store_true", help="show a progress bar even when stderr is not a terminal")
    run.add_argument("--output-dirname", default="./output/", help="results, logs and artifacts go here")
    run.add_argument("--output-basename", default="results.jsonl", help="results file name")
    run.add_argument("--no-resume", action="store_true",
                     help="start a new results file (an existing one is kept as a .bak-<time> backup)")
    run.add_argument("--retry-failed", action="store_true", help="re-run configs whose latest record failed")
    run.add_argument("--rounds", type=positive_int, default=1, metavar="R",
                     help="run each config R times, each in a fresh child, interleaved (every config once, then "
                          "every config again ...): R records per config, for compare.py's intervals (default 1)")
    run.add_argument("--timestamp", type=float, default=None, help="sweep timestamp for every record (default: now)")
    run.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])

    par = p.add_argument_group("parallel sweeps (README: when to use --jobs, and running on a Ray cluster)")
    par.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                     help="run up to N children at once; locally each gets its own share of the cores (default 1; "
                     "with Ray: the cluster's CPUs)")
    par.add_argument("--executor", choices=("local", "ray"), default="local",
                     help="where children run: this machine, or the nodes of a Ray cluster (default local)")
    par.add_argument("--ray-address", default=None, metavar="HOST:PORT",
                     help="the Ray cluster to join (or auto; default: $RAY_ADDRESS, else a Ray instance started "
                     "for this sweep on this machine)")
    par.add_argument("--launch", choices=("fork", "spawn"), default="fork",
                     help="fork: start each child from a fork server that has imported torch (faster; a config "
                     "whose environment must be set before `import torch`, and every child under Ray, is spawned); "
                     "spawn: a fresh interpreter per child (default fork; the record's environment.launch)")
    par.add_argument("--gpus-per-job", type=positive_int, default=1, metavar="N",
                     help="GPUs each CUDA config's child gets (default 1)")

    single = p.add_argument_group("single config (what each child runs; also by hand)")
    single.add_argument("--experiment-config", metavar="JSON", help="one experiment config")
    single.add_argument("--model-config", metavar="JSON", help="one model config")
    single.add_argument("--record-fd", type=int, default=None, help=argparse.SUPPRESS)

    for module in FEATURE_MODULES:
        module.add_arguments(p)
    for suite in all_suites():
        suite.add_arguments(p)
    return p


def parse_single_config(options) -> tuple:
    """(model_config dict, ExperimentConfig) from the two JSON flags, or UsageError."""
    if (options.model_config is None) != (options.experiment_config is None):
        raise UsageError("--model-config and --experiment-config go together")
    try:
        model = json.loads(options.model_config)
    except ValueError as exc:
        raise UsageError(f"--model-config is not valid JSON: {exc}")
    try:
        experiment_data = json.loads(options.experiment_config)
    except ValueError as exc:
        raise UsageError(f"--experiment-config is not valid JSON: {exc}")
    if not isinstance(model, dict) or not model.get("model_name"):
        raise UsageError('--model-config must be a JSON object with "model_name" (and "suite_name")')
    suite = model.setdefault("suite_name", options.suite_name)
    if suite not in suite_names():
        raise UsageError(f"--model-config names suite {suite!r}; known suites: {', '.join(suite_names())}")
    try:
        experiment = experiment_config.ExperimentConfig.from_dict(experiment_data)
    except experiment_config.ConfigError as exc:
        raise UsageError(f"--experiment-config: {exc}")
    return model, experiment


def validate(options: RunOptions) -> None:
    for flag in ("filter", "exclude"):
        for pattern in getattr(options, flag):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UsageError(f"--{flag} {pattern!r} is not a valid regular expression: {exc}")
    if options.partition_id >= options.total_partitions:
        raise UsageError(f"--partition-id must be below --total-partitions ({options.total_partitions})")
    diagnostics.validate_options(options)  # a feature's own flag combinations (raises UsageError)


def main(argv=None) -> int:
    parser = build_parser()
    flags = parser.parse_args(argv)
    setup_logging(flags.log_level)
    if flags.timestamp is None:
        flags.timestamp = time.time()
    # Built once; the sweep hands `child_flags` to every child, which parses them into the same options.
    options = RunOptions.from_flags(flags, child_flags=forwarded_args(parser, flags, PARENT_ONLY))
    try:
        validate(options)
        if options.model_config is not None or options.experiment_config is not None:
            model, experiment = parse_single_config(options)
            return single_config.main(options, model, experiment)
        return sweep.run_sweep(options)
    except UsageError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
