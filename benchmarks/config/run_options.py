"""experiment_runner.py's options as one typed value, and the declaration of every one of its flags.

Each field below is its flag (`flags.Group.option` / `.axis`: spelling, type, default, help, --help section,
and who reads it: the parent, the child or both), so adding a flag is one field here plus its use. The parser
(`build_parser`), `RunOptions.from_flags` and each child's command line (`child_flags`) are built from these
fields, with the suites' own flags (`Suite.flags`). A feature's values are one section (verify, diagnostics,
timing, noise, golden: config/feature_options.py); our experiment axes' flags are one too (`axes`), made from
config/axes.py's table. No torch, no behaviour but parsing (docs/architecture.md, "Options").
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import sys
import time
from typing import Any, Optional

from benchmarks.config import experiment_config, shards
from benchmarks.config.axes import AXES
from benchmarks.config.feature_options import (DiagnosticsOptions, GoldenOptions, NoiseOptions, TimingOptions,
                                               VerifyOptions, file_path)
from benchmarks.config.flags import (BOTH, CHILD, PARENT, SUITE_NAMES, Group, child_args, field_flags, from_namespace,
                                     tool_parser)
from benchmarks.plumbing.cli_support import (LOG_LEVELS, Parser, UsageError, epilog, memory_size, non_negative_int,
                                             positive_float, positive_int)
from benchmarks.plumbing.cli_support import timestamp as timestamp_type


def iterations_per_run_type(text: str) -> Optional[int]:
    """--iterations-per-run: `auto` (None: calibrated by the child) or a positive integer."""
    return None if text.strip().lower() == "auto" else positive_int(text)


def xla_choice(text: str):
    value = experiment_config.parse_none(text)
    if value is not None and value.upper() == "PJRT":
        return "PJRT"
    if value is None:
        return None
    if value.upper() == "XRT":
        raise argparse.ArgumentTypeError("XRT was removed from PyTorch/XLA; use PJRT")
    raise argparse.ArgumentTypeError(f"invalid choice {text!r} (choose None or PJRT)")


# The --help sections, in --help's order.
SELECTION = Group("model selection")
MATRIX = Group("experiment matrix (each flag repeatable; the product is run)")
MEASUREMENT = Group("measurement")
SWEEP = Group("sweep")
PARALLEL = Group("parallel sweeps (README: when to use --jobs, and running on a Ray cluster)")
SINGLE = Group("single config (what each child runs; also by hand)")


def axis_option(axis) -> Any:
    """An axis's flag (config/axes.py) as a field: repeatable (empty: the axis's sweep default), or one value (None:
    unset)."""
    flag = {name: value for name, value in (("choices", axis.choices), ("type", axis.type), ("metavar", axis.metavar),
                                            ("bare", axis.flag_bare)) if value is not None}
    if axis.flag_is_repeatable:
        return MATRIX.option((), PARENT, axis.help, repeatable=True, **flag)
    return MATRIX.option(None, PARENT, axis.help, **flag)


# Our axes' flags (RunOptions.axes): a field per axis of config/axes.py, named by its key, in the table's order.
AxisOptions = dataclasses.make_dataclass("AxisOptions", [(axis.key, Any, axis_option(axis)) for axis in AXES],
                                         frozen=True)

SECTIONS = {"axes": AxisOptions, "verify": VerifyOptions, "diagnostics": DiagnosticsOptions, "timing": TimingOptions,
            "noise": NoiseOptions, "golden": GoldenOptions}


@dataclasses.dataclass(frozen=True)
class RunOptions:
    suite_name: str = SELECTION.option("dummy", BOTH, "model suite (default: dummy)", choices=SUITE_NAMES)
    filter: tuple = SELECTION.option(
        (), PARENT, "keep models whose name matches (case-insensitive search; repeatable)", short="-k",
        repeatable=True, metavar="REGEX")
    exclude: tuple = SELECTION.option((), PARENT, "drop models whose name matches (repeatable)", short="-x",
                                      repeatable=True, metavar="REGEX")
    filter_by_tier: tuple = SELECTION.option((), PARENT, "keep the models of the suite's tier N (repeatable)",
                                             repeatable=True, type=int, metavar="N")
    exclude_by_tier: tuple = SELECTION.option((), PARENT, "drop the models of the suite's tier N (repeatable)",
                                              repeatable=True, type=int, metavar="N")
    total_partitions: int = SELECTION.option(1, PARENT, "split the model list in N slices", type=positive_int,
                                             metavar="N")
    partition_id: int = SELECTION.option(0, PARENT, "which slice to run (0-based)", type=non_negative_int,
                                         metavar="I")
    shard: Optional[shards.Shard] = SELECTION.option(
        None, PARENT, "run part I (1..N) of N stable parts of the expanded configs (by fingerprint; each part resumes "
        "on its own, into results.shard-I-of-N.jsonl unless --output-basename names another)", type=shards.parse,
        metavar="I/N")
    # the matrix: each an axis's values as given (empty: the runner's default values, runner/plan.py)
    accelerator: tuple = MATRIX.axis("default: cpu, cuda, tpu (those not present are dropped, with the reason)",
                                     choices=experiment_config.ACCELERATORS)
    xla: tuple = MATRIX.axis("default: None, PJRT", type=xla_choice, metavar="{None,PJRT}")
    dynamo: tuple = MATRIX.axis("None or any registered dynamo backend (inductor, openxla, openxla_eval, aot_eager, "
                                "...), export / export_nonstrict (torch.export, strict or not), aot_inductor "
                                "(export + AOTInductor package; eval); default: None, inductor, openxla", type=experiment_config.parse_none,
                                metavar="BACKEND")
    test: tuple = MATRIX.axis("default: eval, train", choices=experiment_config.TESTS)
    xla_flags: tuple = MATRIX.axis("one whole XLA_FLAGS string per value", type=experiment_config.parse_none,
                                   metavar="FLAGS")
    batch_size: tuple = MATRIX.axis("requested batch size (repeatable: a batch-size sweep); default: the model's",
                                    type=positive_int, metavar="N")
    batch_size_file: Optional[str] = MATRIX.option(
        None, PARENT, "each model's requested batch size from FILE, in the dynamo harness's format (`name,batch` rows, "
        "as --find-batch-sizes writes them): a model the file lacks runs at its own, one at -1 (none ran) is a skip "
        "record", type=file_path, metavar="FILE")
    # our axes: a field of AxisOptions per axis of config/axes.py (--quantization, --precision, ...)
    axes: AxisOptions = AxisOptions()
    freezing: bool = MATRIX.switch(PARENT, "--inductor-config freezing=True (the dashboard's freezing; eval only)")
    cpp_wrapper: bool = MATRIX.switch(PARENT, "--inductor-config cpp_wrapper=True (the dashboard's cpp_wrapper)")
    enable_functionalization: bool = MATRIX.switch(PARENT, "keep XLA functionalization on (default: "
        "XLA_DISABLE_FUNCTIONALIZATION=1)")
    # measurement (the parent reads them too: a failure record says what was asked)
    repeat: int = MEASUREMENT.option(10, BOTH, "timed runs per config (default 10)", type=positive_int, metavar="N")
    iterations_per_run: Optional[int] = MEASUREMENT.option(  # None: auto, found by the child (child/timing_block.py)
        None, BOTH, "back-to-back iterations per timed run, timed as one block: N, or auto (default: as many as make "
        "one run last at least 10 ms on a CPU, 2 ms on a GPU, found after the first warm-up call; never fewer than 1); "
        "the record's iterations_per_run says how many ran, its timing_block how they were chosen",
        type=iterations_per_run_type, metavar="N|auto")
    warmup: int = MEASUREMENT.option(
        2, BOTH, "untimed-for-statistics warm-up runs, recorded apart (default 2; the first compiles)",
        type=non_negative_int, metavar="N")
    # the sweep
    dry_run: bool = SWEEP.switch(PARENT, "print the configs (and those dropped, with why); run nothing")
    print_subprocess: bool = SWEEP.switch(PARENT, "stream each child's output to the terminal too")
    subprocess_timeout: float = SWEEP.option(1800.0, PARENT, "kill a child's whole process group after this long "
                                             "(default 1800)", type=positive_float, metavar="SECONDS")
    subprocess_memory_limit: Optional[int] = SWEEP.option(
        None, PARENT, "kill a child whose process tree's resident memory passes SIZE (e.g. 8G): an oom record",
        type=memory_size, metavar="SIZE")
    progress_bar: bool = SWEEP.switch(PARENT, "show a progress bar even when stderr is not a terminal")
    output_dirname: str = SWEEP.option("./output/", BOTH, "results, logs and artifacts go here (created if missing)",
                                       metavar="DIR")
    output_basename: str = SWEEP.option("results.jsonl", BOTH, "results file name, in --output-dirname",
                                        metavar="NAME")
    no_resume: bool = SWEEP.option(False, PARENT,
                                   "start a new results file (an existing one is kept as a .bak-<time> backup)")
    retry_failed: bool = SWEEP.switch(PARENT, "re-run configs whose latest record failed")
    allow_empty: bool = SWEEP.switch(PARENT, "exit 0 when the flags select nothing to run: a -k pattern that matches no "
                                     "model, or an unknown --dynamo backend, is then a warning and left out "
                                     "(default: exit 2, naming the close matches)")
    find_batch_sizes: bool = SWEEP.switch(
        PARENT, "instead of a sweep, find each model's batch size by the dynamo harness's rule: eager only, one "
        "attempt per child, starting at 1024 and halving on any failure; writes <output-dir>/batch_sizes.csv "
        "(`name,batch` rows, for --batch-size-file) and each attempt's record to <output-dir>/batch-size-search.jsonl; "
        "on the CPU each attempt is bounded by memory (--subprocess-memory-limit, default half the memory available)")
    wait: bool = SWEEP.switch(PARENT, "when another sweep is writing the same results file, wait for it to end, then "
                              "resume (default: say who holds it and exit 2)")
    rounds: int = SWEEP.option(
        1, PARENT, "run each config R times, each in a fresh child, interleaved (every config once, then every config "
        "again ...): R records per config, for compare.py's intervals (default 1)", type=positive_int, metavar="R")
    timestamp: Optional[float] = SWEEP.option(
        None, BOTH, "the sweep's time for every record: epoch seconds or an ISO date or datetime (2026-11-18, "
        "2026-11-18T03:00; UTC unless an offset is given) (default: now)", type=timestamp_type, metavar="TIME")
    log_level: str = SWEEP.option("info", BOTH, "messages on stderr",
                                  choices=LOG_LEVELS)
    # sweeps as files (config/sweep_files.py)
    sweep_file: Optional[str] = SWEEP.option(
        None, PARENT, "run the sweep saved in FILE (TOML, one key per flag); flags on the command line override "
        "its", name="--sweep", metavar="FILE")
    save_sweep: Optional[str] = SWEEP.option(
        None, PARENT, "write this sweep's flags to FILE (TOML, each with its help) and exit, running nothing; "
        "--sweep FILE runs it", metavar="FILE")
    # where the children run (docs/architecture.md, "Executors")
    jobs: Optional[int] = PARALLEL.option(  # None: 1 locally, the cluster's CPUs with Ray
        None, PARENT, "run up to N children at once; locally each gets its own share of the cores (default 1; with "
        "Ray: the cluster's CPUs)", type=positive_int, metavar="N")
    executor: str = PARALLEL.option("local", PARENT, "where children run: this machine, or the nodes of a Ray cluster "
                                    "(default local)", choices=("local", "ray"))
    ray_address: Optional[str] = PARALLEL.option(
        None, PARENT, "the Ray cluster to join (or auto; default: $RAY_ADDRESS, else a Ray instance started for this "
        "sweep on this machine)", metavar="HOST:PORT")
    gpus_per_job: int = PARALLEL.option(1, PARENT, "GPUs each CUDA config's child gets (default 1)",
                                        type=positive_int, metavar="N")
    cores_per_job: Optional[int] = PARALLEL.option(  # None: locally the equal split, under Ray 1
        None, PARENT, "CPU cores (and threads) each child gets, pinned and held by no other child of the sweep on its "
        "node; locally it replaces the equal split of --jobs (default: that split; with Ray: 1)", type=positive_int,
        metavar="N")
    artifacts_uri: Optional[str] = PARALLEL.option(
        None, PARENT, "with Ray: where a node puts a config's files too big to return with its result, for the driver "
        "to fetch (a directory every node mounts, or an fsspec URL such as s3://bucket/path; needs fsspec)",
        metavar="URI")
    artifacts_max_size: int = PARALLEL.option(
        2**30, PARENT, "with Ray: the most a config's files may bring back from its node (default 1G); a file past "
        "it stays on the node and the record's environment.executor.artifacts_left_behind says where",
        type=memory_size, metavar="SIZE")
    launch: str = PARALLEL.option(
        "fork", PARENT, "fork (default): start each child from a fork server that has imported torch (faster; a "
        "config whose environment must be set before `import torch` is spawned; under Ray each node has its own); "
        "spawn: a fresh interpreter per child (the record's environment.launch says which)", choices=("fork", "spawn"))
    # one config (the child, or by hand): the parent writes these itself, per config
    experiment_config: Optional[str] = SINGLE.option(None, CHILD, "one experiment config", metavar="JSON")
    model_config: Optional[str] = SINGLE.option(None, CHILD, "one model config", metavar="JSON")
    record_fd: Optional[int] = SINGLE.option(None, CHILD, "", type=int, hidden=True)
    # feature sections
    verify: VerifyOptions = VerifyOptions()
    diagnostics: DiagnosticsOptions = DiagnosticsOptions()
    timing: TimingOptions = TimingOptions()
    noise: NoiseOptions = NoiseOptions()
    golden: GoldenOptions = GoldenOptions()
    # every flag as argparse parsed it, the whole command line: what the suites are given, to read their own flags
    # from (--torchbench-dir, --model-params, --op, ...; the scripts suite also --output-dirname, for its cache)
    parsed_flags: argparse.Namespace = dataclasses.field(default_factory=argparse.Namespace, compare=False)
    # what each child is given on its command line to see these same options
    child_flags: tuple = ()

    @classmethod
    def from_flags(cls, flags: argparse.Namespace, child_flags=()) -> "RunOptions":
        sections = {name: from_namespace(section, flags) for name, section in SECTIONS.items()}
        return from_namespace(cls, flags, **sections, parsed_flags=flags, child_flags=tuple(child_flags))

    @property
    def single_config(self) -> bool:
        """One config in this process (--model-config/--experiment-config): the child, or a config by hand."""
        return self.model_config is not None or self.experiment_config is not None

    def with_(self, **changes) -> "RunOptions":
        return dataclasses.replace(self, **changes)


class RunnerParser(Parser):
    """experiment_runner.py's parser; `declared` holds every flag it was built from, in order."""

    declared: tuple = ()

    def options(self, argv=None) -> RunOptions:
        """The command line -> RunOptions, with the flags each child is to be given (the timestamp set here, so
        that every record of the sweep shares it)."""
        from benchmarks.config import sweep_files

        argv = list(sys.argv[1:] if argv is None else argv)
        fresh = lambda: build_parser(self.suites)  # noqa: E731 (a parser that records what was given, as given)
        try:
            argv = sweep_files.merged_argv(self, fresh, argv)
        except UsageError as exc:
            self.error(str(exc))
        flags = self.parse_args(argv)
        if flags.save_sweep:
            content, left_out = sweep_files.text(self, fresh, argv)
            try:
                sweep_files.save(flags.save_sweep, content)
            except UsageError as exc:
                self.error(str(exc))
            self.exit(0, f"wrote {flags.save_sweep}; run it with: {self.prog} --sweep {flags.save_sweep}"
                      + (f" ({' '.join(left_out)} left out: give them on the command line)" if left_out else "")
                      + "\n")
        if flags.timestamp is None:
            flags.timestamp = time.time()
        return RunOptions.from_flags(flags, child_flags=child_args(self.declared, flags))


# --help: the common tasks first, then only these flags (a shorter help where the full one is long, None: the
# flag's own); --help-all shows every flag with its whole help (docs/runner.md, "Flags").
EXAMPLES = (
    ("built-in models, eager vs Inductor, inference on this CPU (into ./output/)",
     "experiment_runner.py --suite-name=dummy --accelerator=cpu --xla=None --dynamo=None --dynamo=inductor --test=eval"),
    ("what it would run, and why a config is dropped; runs nothing",
     "experiment_runner.py --suite-name=dummy --accelerator=cpu --dry-run"),
    ("two torchvision models, accuracy checked, 3 rounds each (for compare.py)",
     "experiment_runner.py --suite-name=torchvision -k '^resnet(18|50)$' --accelerator=cpu --xla=None "
     "--dynamo=None --dynamo=inductor --test=eval --verify --rounds=3 --output-dirname=runs/base"),
    ("run again to resume; --retry-failed re-runs the failed configs too",
     "experiment_runner.py ... --output-dirname=runs/base --retry-failed"),
    ("two children at once on their own cores (--executor=ray: a Ray cluster)",
     "experiment_runner.py --suite-name=dummy --accelerator=cpu --jobs=2"),
)
BRIEF = {
    "--suite-name": None,
    "--filter": "keep models whose name matches (case-insensitive; repeatable); a pattern that matches no model "
                "is an error naming the close ones",
    "--exclude": None,
    "--accelerator": "cpu, cuda, tpu (default: all three; those not here are dropped, with the reason)",
    "--xla": "None or PJRT (default: both)",
    "--dynamo": "None (eager), inductor, aot_eager, openxla, any registered dynamo backend, export, aot_inductor "
                "(default: None, inductor, openxla)",
    "--test": None,
    "--batch-size": None,
    "--precision": "fp32, bf16, fp16, amp, amp_bf16, amp_fp16 (default: the suite's)",
    "--repeat": None,
    "--warmup": None,
    "--dry-run": None,
    "--output-dirname": None,
    "--no-resume": None,
    "--retry-failed": None,
    "--allow-empty": "exit 0, not 2, when the flags select nothing to run (a -k or --dynamo name that matches "
                     "nothing is then a warning)",
    "--rounds": "run each config R times, interleaved, each in a fresh child (default 1)",
    "--timestamp": "the sweep's time for every record: epoch seconds or an ISO date or datetime (2026-11-18, "
                   "2026-11-18T03:00, UTC unless an offset is given) (default: now)",
    "--log-level": None,
    "--jobs": None,
    "--executor": None,
    "--sweep": None,
    "--save-sweep": None,
    "--verify": "also judge each config's accuracy against an fp64 eager reference (the record's `accuracy`)",
}


def declared_flags() -> list:
    """RunOptions' flags in declaration order, a section's (axes, verify, ...) where its field stands."""
    own = dict(field_flags(RunOptions))
    flags = []
    for field in dataclasses.fields(RunOptions):
        if field.name in SECTIONS:
            flags += [flag for _, flag in field_flags(SECTIONS[field.name])]
        elif field.name in own:
            flags.append(own[field.name])
    return flags


def build_parser(suites) -> RunnerParser:
    """The parser of every declared flag: RunOptions' and its sections', then each suite's (`suites`: the
    Suite objects, given by the caller because config/ imports no tool). Made as every tool's (flags.tool_parser):
    --help shows the examples and the flags of BRIEF, --help-all every flag with its whole help; both parse
    every flag."""
    declared = declared_flags()
    for suite in suites:
        declared += list(suite.flags)
    parser = RunnerParser(
        prog="experiment_runner.py",
        usage="%(prog)s [--suite-name=SUITE] [-k REGEX] [--dynamo=BACKEND ...] [options]",
        description="Run a matrix of PyTorch model benchmarks, one child process per (model, experiment); "
                    "docs/runner.md.",
        examples=EXAMPLES,
        epilog=epilog(ok="every config of the sweep has an ok or skip record (or the config run by hand did)",
                      bad_news="a config's latest record is a failure (error, crash, timeout, oom): every record "
                      "is written all the same; or the config run by hand (--model-config) failed"),
        brief=BRIEF,
        more="diagnostics, golden, noise control, Ray, single config, each suite's own ...",
    )
    tool_parser(declared, None, parser=parser, choices={SUITE_NAMES: [suite.name for suite in suites]})
    parser.declared = tuple(declared)
    parser.suites = tuple(suites)
    return parser


def check_combinations(options: RunOptions) -> None:
    """Flag combinations that contradict each other: a UsageError (one line, exit 2)."""
    for axis in AXES:  # the profiles' contradicting flags
        contradiction = axis.contradiction(options) if axis.contradiction else None
        if contradiction:
            raise UsageError(contradiction)
    if options.batch_size and options.batch_size_file:
        raise UsageError("--batch-size asks for the same batch sizes for every model, --batch-size-file for each "
                         "model's own; pass one of them")
    golden = options.golden
    if (golden.save_dir or golden.check_dir) and importlib.util.find_spec("safetensors") is None:
        raise UsageError("--save-golden and --golden need safetensors, which is not installed: pip install "
                         "safetensors==0.8.0 (the project's `golden` extra)")
    if golden.save_dir and golden.check_dir:
        raise UsageError("--save-golden stores results and --golden checks against stored ones; pass one of them")
    if golden.check_dir and not os.path.isdir(golden.check_dir):
        raise UsageError(f"--golden {golden.check_dir}: no such directory")
    if golden.check_dir and options.diagnostics.randomize_input:
        raise UsageError("--golden runs on the stored inputs, --randomize-input on fresh ones; pass one of them")
    if options.executor != "ray" and options.ray_address:
        raise UsageError(f"--ray-address={options.ray_address} names the Ray cluster to run on; without "
                         "--executor=ray the sweep runs on this machine: pass --executor=ray too")
    if options.executor != "ray" and options.artifacts_uri:
        raise UsageError("--artifacts-uri brings a Ray node's files home; a local sweep writes them in place: "
                         "pass it with --executor=ray")
