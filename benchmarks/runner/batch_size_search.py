"""--find-batch-sizes: each model's batch size by the rule of PyTorch's dynamo harness (its --find-batch-sizes,
common.py's batch_size_finder), instead of a sweep (docs/runner.md, "Finding batch sizes").

Eager only; one attempt per child process, so that a failure (an out-of-memory error, a CUDA fault) leaves nothing
behind for the next attempt; each attempt loads the model at the batch size and runs one iteration (no warm-up, one
timed run of one iteration). It starts at 1024 and, on any failure, goes down by the harness's decay_batch_exp
(1024, 512, ..., 8, 4, 3, 2, 1); the first size that runs is the model's (the real batch size, where the model takes
another than asked), a skip record ends the search (the model can't run here at any size), and a model that fails
even at 1 gets -1 (the harness writes 1 there; its reader refuses -1, and so does --batch-size-file: a skip record).
All models take each step together, as one small sweep (`--jobs` runs them side by side).

What it writes, under --output-dirname: every attempt's record in batch-size-search.jsonl (a search run again
resumes: attempts it holds are not run again; --no-resume starts over), and batch_sizes.csv in the harness's format
(config/batch_size_file.py), rewritten after each step, keeping the rows of models this search does not cover.
On the CPU each attempt is bounded by memory: --subprocess-memory-limit, or half the memory available when the search
starts (a child past it is an oom record, and the search goes down).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from typing import Optional

from benchmarks.config import batch_size_file, rerun_command
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing import machine_facts, safe_paths
from benchmarks.plumbing.cli_support import EXIT_BAD_NEWS, UsageError, shown
from benchmarks.results import records
from benchmarks.results.records import RecordStatus
from benchmarks.runner import noise, progress, results_lock
from benchmarks.runner.capabilities import probe_capabilities
from benchmarks.runner.plan import model_config
from benchmarks.runner.resume import back_up
from benchmarks.runner.sweep import SweepRun

log = logging.getLogger("benchmarks.runner.batch_size_search")

START = 1024  # the harness's initial_batch_size
ATTEMPTS_BASENAME = "batch-size-search.jsonl"
FILE_BASENAME = "batch_sizes.csv"
# Each attempt: the model loaded at the batch size and run once (the harness's model_iter_fn, once).
ONE_RUN = ("--repeat=1", "--warmup=0", "--iterations-per-run=1")


def next_batch_size(batch: int, factor: float = 0.5, divisor: int = 2) -> int:
    """The next size after a failure at `batch`: the harness's decay_batch_exp (0 once 1 failed)."""
    smaller = batch * factor
    smaller = (smaller + 1) // divisor * divisor if smaller > divisor else batch - 1
    return max(0, int(smaller))


def sizes_tried(start: int = START) -> list:
    """Every size the search may try, in order: 1024, 512, ..., 8, 4, 3, 2, 1."""
    sizes = [start]
    while next_batch_size(sizes[-1]) >= 1:
        sizes.append(next_batch_size(sizes[-1]))
    return sizes


@dataclasses.dataclass
class Search:
    """One model's search: the size to try next, the attempts so far, and how it ended."""

    model: dict
    batch: int = START
    attempts: list = dataclasses.field(default_factory=list)  # (requested size, status, why) per attempt
    found: Optional[int] = None  # the model's batch size; batch_size_file.NONE_RAN when none ran
    skipped: Optional[str] = None  # why the model can't run here at any size

    @property
    def done(self) -> bool:
        return self.found is not None or self.skipped is not None

    def after(self, record: dict) -> None:
        """Take one attempt's record at self.batch: found, skipped, or the next size (or none left)."""
        status = records.record_status(record)
        error = record.get("error") or {}
        why = f"{error.get('type')}: {error.get('message')}" if error else ""
        self.attempts.append((self.batch, status, why))
        if status == RecordStatus.OK:
            real = (record.get("experiment") or {}).get("batch_size")
            self.found = real if isinstance(real, int) and not isinstance(real, bool) and real > 0 else self.batch
        elif status == RecordStatus.SKIP:
            self.skipped = error.get("message") or "skipped"
        else:  # any failure: error (RuntimeError, ...), oom, crash, timeout
            self.batch = next_batch_size(self.batch)
            if self.batch < 1:
                self.found = batch_size_file.NONE_RAN


def check_flags(options: RunOptions) -> None:
    """The flags a search can't take: one line, exit 2."""
    refused = [
        (any(options.dynamo), "runs eager only, as the harness's: leave out --dynamo (or give --dynamo=None)"),
        (any(options.xla), "runs on the device itself, as the harness's: leave out --xla (or give --xla=None)"),
        (options.batch_size or options.batch_size_file, "starts every model at 1024: leave out --batch-size and "
                                                        "--batch-size-file"),
        (options.verify.enabled, "runs each attempt once, unchecked: leave out --verify"),
        (options.rounds > 1, "runs each size once: leave out --rounds"),
        (options.retry_failed, "takes a failed attempt as its answer (a smaller size): leave out --retry-failed"),
        (len(options.accelerator) > 1, "searches one device: give one --accelerator"),
        (len(options.test) > 1, "searches for one test: give one --test (eval, the harness's --inference; train, "
                                "its --training)"),
    ]
    for wrong, why in refused:
        if wrong:
            raise UsageError(f"--find-batch-sizes {why}")


def accelerator_here(options: RunOptions) -> str:
    """The device searched: --accelerator's, else cuda where the probe finds a CUDA device, else cpu (as the harness
    picks its device)."""
    if options.accelerator:
        return options.accelerator[0]
    return "cuda" if probe_capabilities([ExperimentConfig("cuda", None, None, "eval")]).cuda_devices else "cpu"


def search_options(options: RunOptions) -> RunOptions:
    """The options of the search (UsageError: a flag it can't take), set once before its plan: its plan's one
    experiment config, eager on the device searched at each model's own batch size, unsharded; and every attempt's
    run (one run of one iteration, no warm-up, the memory bound)."""
    check_flags(options)
    accelerator = accelerator_here(options)
    options = options.with_(accelerator=(accelerator,), xla=(None,), dynamo=(None,), test=options.test or ("eval",),
                            batch_size=(), shard=None)
    return attempt_options(options, memory_bound(options, accelerator))


def searched_experiment(plan):
    """The one experiment config of the search's plan (runner/plan.make_plan of search_options); UsageError where
    the flags ask for more than one, or it can't run here."""
    experiments = plan.experiments
    if len(experiments) != 1:
        raise UsageError(f"--find-batch-sizes searches one experiment config per model; the flags ask for "
                         f"{len(experiments)} ({'; '.join(e.describe() for e in experiments[:3])}"
                         f"{'; ...' if len(experiments) > 3 else ''}): give one value of each axis")
    if plan.dropped:
        experiment, reason = plan.dropped[0]
        raise UsageError(f"--find-batch-sizes: {experiment.describe()} can't run here: {reason}")
    return plan.kept[0]


def memory_bound(options: RunOptions, accelerator: str) -> Optional[int]:
    """Each attempt's memory limit: --subprocess-memory-limit's, or on the CPU half the memory available now
    (UsageError where that is unknown); None on a GPU without the flag (the device's own out-of-memory error)."""
    if options.subprocess_memory_limit or accelerator != "cpu":
        return options.subprocess_memory_limit
    available = machine_facts.available_memory()
    if not available:
        raise UsageError("--find-batch-sizes on the CPU bounds each attempt by memory, and this machine's available "
                         "memory is unknown: give --subprocess-memory-limit")
    return available // 2


def attempt_options(options: RunOptions, limit: Optional[int]) -> RunOptions:
    """The options every attempt runs under: one run of one iteration, no warm-up, the memory bound."""
    return options.with_(repeat=1, warmup=0, iterations_per_run=1, subprocess_memory_limit=limit,
                         child_flags=tuple(options.child_flags) + ONE_RUN)


def attempts_of(suite, options: RunOptions, experiment, searches: list) -> list:
    """This step's (Config, skip reason) of every model still searching, at its size."""
    return [model_config(suite, options, s.model, experiment.with_(batch_size=s.batch)) for s in searches]


def result_lines(searches: list, path: str) -> list:
    names = {id(s): shown(s.model["model_name"]) for s in searches}  # a newline in a name can't break the table
    width = max([len(name) for name in names.values()] + [5])
    lines = [f"{'model':<{width}}  {'batch':>5}  attempts (size: status)"]
    for s in searches:
        found = "skip" if s.skipped else str(s.found)
        tried = ", ".join(f"{size}: {status}" for size, status, _ in s.attempts)
        lines.append(f"{names[id(s)]:<{width}}  {found:>5}  {tried}")
    for s in searches:
        if s.skipped:
            lines.append(f"{names[id(s)]}: skipped, no row: {s.skipped}")
        elif s.found == batch_size_file.NONE_RAN:
            last = s.attempts[-1][2] if s.attempts else ""
            lines.append(f"{names[id(s)]}: no size ran, down to 1 ({batch_size_file.NONE_RAN} in the file)"
                         f"{': ' + shown(last) if last else ''}")
    lines.append(f"batch sizes: {path} (a sweep takes them with --batch-size-file={path})")
    return lines


def earlier_sizes(file_path: str) -> dict:
    """The rows the batch-size file holds already (kept for the models this search does not cover)."""
    if not os.path.exists(file_path):
        return {}
    try:
        return batch_size_file.read(file_path)
    except batch_size_file.BatchSizeFileError as exc:
        raise UsageError(f"{exc} (it is where --find-batch-sizes writes; move it away)") from None


def rule(options: RunOptions, experiment) -> str:
    limit = options.subprocess_memory_limit
    return (f"eager on {experiment.accelerator} ({experiment.describe()}), one attempt per child from {START} down "
            f"({', '.join(map(str, sizes_tried()[:3]))}, ..., 1)"
            + (f", each bounded by {limit / 2**30:.1f} GiB of memory" if limit else ""))


def dry_run_listing(options: RunOptions, plan, suite, experiment, said: str) -> list:
    """--dry-run of a search: its rule (`said`), each model's first attempt (its child's command, or why the suite
    skips it), and the files it would write."""
    first = f"# --find-batch-sizes: {len(plan.models)} model(s), {said}; the first attempts:"
    attempts = attempts_of(suite, options, experiment, [Search(model) for model in plan.models])
    commands = [f"skip: {config.label()}: {reason}" if reason else rerun_command.child_command_line(
        options.child_flags, config.model, config.experiment.to_dict()) for config, reason in attempts]
    file_path = safe_paths.under(options.output_dirname, FILE_BASENAME)
    attempts_path = safe_paths.under(options.output_dirname, ATTEMPTS_BASENAME)
    return [first] + commands + [f"# writes {file_path} and {attempts_path}"]


def run(options: RunOptions, plan, suite, executor) -> int:
    """The search of `plan`'s models, or with --dry-run its listing (`options`: search_options'; the executor made,
    not started, by runner/cli.py; UsageError: bad flags or input); exit 0 when every model has a batch size."""
    experiment = searched_experiment(plan)
    said = rule(options, experiment)
    if options.dry_run:  # nothing runs, nothing is written
        print("\n".join(dry_run_listing(options, plan, suite, experiment, said)))
        return 0
    log.info("--find-batch-sizes: %d model(s), %s", len(plan.models), said)
    searches = [Search(model) for model in plan.models]
    file_path = safe_paths.under(options.output_dirname, FILE_BASENAME)
    attempts_path = safe_paths.under(options.output_dirname, ATTEMPTS_BASENAME)
    with results_lock.take(options.output_dirname, attempts_path, wait=options.wait,
                           beside=((file_path, "a batch-size file"),)):  # a FIFO: reading it would block
        earlier_rows = earlier_sizes(file_path)
        executor.start()
        if options.no_resume:
            back_up(attempts_path)
        interrupted = search(suite, options, experiment, searches, executor, attempts_path, file_path, earlier_rows)
    print("\n".join(result_lines(searches, file_path)))
    if interrupted:
        print(f"Interrupted: every attempt so far is in {attempts_path}; the same command resumes the search",
              file=sys.stderr)
        return 130
    return 0 if all(s.found not in (None, batch_size_file.NONE_RAN) for s in searches) else EXIT_BAD_NEWS


def search(suite, options: RunOptions, experiment, searches: list, executor, attempts_path: str, file_path: str,
           earlier_rows: dict) -> bool:
    """Every model's search, step by step (each step a small sweep of the models still searching); True when
    interrupted (Ctrl-C). The batch-size file is rewritten after each step."""
    env_facts = noise.sweep_environment(options.noise)
    with records.ResultsWriter(attempts_path) as writer:
        while True:
            searching = [s for s in searches if not s.done]
            if not searching:
                return False
            step = attempts_of(suite, options, experiment, searching)
            held = progress.latest_records(attempts_path, [config for config, _ in step])
            todo = [(config, reason) for config, reason in step if config.fingerprint not in held]
            bar = progress.Progress(len(todo), enabled=options.progress_bar or sys.stderr.isatty())
            with bar:
                run = SweepRun(options, executor, writer, bar, env_facts, bar.write if options.print_subprocess
                               else None)
                try:
                    run.run(todo)
                except KeyboardInterrupt:
                    executor.stop_all()
                    return True
            held = progress.latest_records(attempts_path, [config for config, _ in step])
            for s, (config, _) in zip(searching, step):
                s.after(held[config.fingerprint])
            found = {s.model["model_name"]: s.found for s in searches if s.found is not None}
            batch_size_file.write(file_path, found, earlier_rows)
