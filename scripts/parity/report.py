#!/usr/bin/env python3
"""PyTorch's dynamo benchmark harness beside ptbench-matrix on the same models (`make parity`; docs/parity.md).

Where a checkout of the harness is found (a PyTorch checkout's benchmarks/dynamo, or TorchBench's copy in
userbenchmark/dynamo/dynamobench), runs both tools on the same models, tests, precisions and batch sizes on this
CPU, Inductor against eager (the harness: an accuracy and a performance process per config; ours: one sweep per
suite with --verify), then prints one table: accuracy status, speedup, compile latency, graph breaks and memory
compression side by side, every difference named with the known reason where the definitions differ. Finished
runs are not run again (the harness's CSV holds the model's row; our sweep resumes), so running it again after
an interruption finishes it, and --skip-harness/--skip-ours re-read what is there. A figure, not a test: nothing
else needs the harness. Exit 0 with the table, 2 for bad usage or no checkout found.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from benchmarks.features import allocator
from benchmarks.plumbing import cpu_affinity
from scripts.parity import harness as parity_harness, table as parity_table
from scripts.parity.table import Spec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The models: two of each suite.
DEFAULT_MODELS = {"dcgan": "torchbench", "phlippe_resnet": "torchbench", "mobilenetv2_100": "timm",
                  "ghostnet_100": "timm", "DistilBertForQuestionAnswering": "huggingface",
                  "ElectraForCausalLM": "huggingface"}
# Batch size per suite unless --batch-size says otherwise (the harness's accuracy defaults; TorchBench 2, the
# batch the issue measured dcgan at).
DEFAULT_BATCH = {"torchbench": 2, "timm": 8, "huggingface": 1}
TESTS = ("eval", "train")
PRECISIONS = tuple(parity_harness.PRECISION_FLAGS)
MODES = ("accuracy", "performance")


class Usage(Exception):
    """Bad usage or input: one line, exit 2."""


def _names(values: list) -> list:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def parse(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", action="append", default=[],
                        help="model names, comma-separated or repeated; SUITE:NAME for a model the default list "
                             "and the harness's lists don't place (default: " + ", ".join(DEFAULT_MODELS) + ")")
    parser.add_argument("--tests", action="append", default=[], help="eval, train (default: eval)")
    parser.add_argument("--precisions", action="append", default=[], help="fp32, bf16, fp16, amp (default: fp32)")
    parser.add_argument("--batch-size", action="append", default=[], metavar="SUITE=N",
                        help="batch size per suite (default: " + ", ".join(f"{k}={v}" for k, v in DEFAULT_BATCH.items())
                             + ")")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per config, both tools (default 10)")
    parser.add_argument("--out", default="output/parity", help="where runs, logs and the table go")
    parser.add_argument("--harness-dir", help="a PyTorch or TorchBench checkout, or the harness's own directory "
                                              "(default: $PARITY_HARNESS_DIR, else a sibling of this project)")
    parser.add_argument("--torchbench-dir", help="TorchBench's checkout for its models (with a PyTorch checkout)")
    parser.add_argument("--harness-pythonpath", action="append", default=[], metavar="DIR",
                        help="where scipy and tabulate are for the harness (pip install --target DIR scipy tabulate)")
    parser.add_argument("--harness-args", default="", metavar="ARGS",
                        help="more flags for every harness process, one string (e.g. '--freezing')")
    parser.add_argument("--ours-args", default="", metavar="ARGS",
                        help="more flags for our sweeps, one string (e.g. '--freezing'); --speedup=paired unless "
                             "it names another --speedup")
    parser.add_argument("--cpu-affinity", metavar="CORES",
                        help="pin both tools to these cores (e.g. 1 or 0-1), threads = their number: on a busy "
                             "machine OpenMP threads then don't wait on each other (default: no pinning)")
    parser.add_argument("--harness-allocator", choices=allocator.NAMES, default=allocator.DEFAULT,
                        help="the C allocator policy of every harness process (default glibc: our children's default, "
                             "so that both tools run under one policy; system: as inherited)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per harness process (default 1800)")
    parser.add_argument("--skip-harness", action="store_true", help="run no harness process: read what is there")
    parser.add_argument("--skip-ours", action="store_true", help="run no sweep of ours: read what is there")
    options = parser.parse_args(argv)
    options.models = _names(options.models) or list(DEFAULT_MODELS)
    options.tests = _names(options.tests) or ["eval"]
    options.precisions = _names(options.precisions) or ["fp32"]
    for value, allowed, flag in ((options.tests, TESTS, "--tests"), (options.precisions, PRECISIONS, "--precisions")):
        bad = [v for v in value if v not in allowed]
        if bad:
            raise Usage(f"{flag}: {', '.join(bad)} is not one of {', '.join(allowed)}")
    options.batch = dict(DEFAULT_BATCH)
    for item in options.batch_size:
        suite, _, size = item.partition("=")
        if suite not in DEFAULT_BATCH or not size.isdigit() or int(size) < 1:
            raise Usage(f"--batch-size {item}: expected SUITE=N with SUITE one of {', '.join(DEFAULT_BATCH)}, N >= 1")
        options.batch[suite] = int(size)
    if options.repeat < 1:
        raise Usage("--repeat must be at least 1")
    options.harness_pythonpath = [p for v in options.harness_pythonpath for p in v.split(os.pathsep) if p]
    options.cores = None
    if options.cpu_affinity:
        try:
            options.cores = cpu_affinity.parse_cores(options.cpu_affinity)
        except ValueError as exc:
            raise Usage(f"--cpu-affinity: {exc}") from None
    try:
        options.harness_args, options.ours_args = shlex.split(options.harness_args), shlex.split(options.ours_args)
    except ValueError as exc:
        raise Usage(f"--harness-args/--ours-args: {exc}") from None
    if not any(arg.startswith("--speedup") for arg in options.ours_args):  # the harness's own way of timing
        options.ours_args.append("--speedup=paired")
    if options.cores:  # ours pins each child and sizes its threads to the cores
        options.ours_args.append(f"--cpu-affinity={cpu_affinity.format_cores(options.cores)}")
    return options


def suite_of(name: str, harness) -> tuple:
    """(suite, model) for a --models entry: SUITE:NAME, a default model, or a name the harness's lists hold."""
    if ":" in name:
        suite, _, model = name.partition(":")
        if suite not in parity_harness.SCRIPTS or not model:
            raise Usage(f"--models {name}: SUITE must be one of {', '.join(parity_harness.SCRIPTS)}")
        return suite, model
    if name in DEFAULT_MODELS:
        return DEFAULT_MODELS[name], name
    if harness is not None:
        if harness.torchbench_dir and (harness.torchbench_dir / "torchbenchmark" / "models" / name).is_dir():
            return "torchbench", name
        for suite, listing in (("timm", "timm_models_list.txt"), ("huggingface", "huggingface_models_list.txt")):
            path = harness.bench_dir / listing
            if path.is_file() and name in {line.replace(",", " ").split()[0] for line in path.read_text().splitlines()
                                           if line.strip()}:
                return suite, name
    raise Usage(f"--models {name}: not a default model nor in the harness's lists; write SUITE:{name}")


def specs_of(options, harness) -> list:
    specs = []
    for name in options.models:
        suite, model = suite_of(name, harness)
        if suite == "huggingface" and model in parity_harness.HUB_CONFIG_MODELS:
            raise Usage(f"--models {model}: the harness takes its config from the Hugging Face hub (offline here)")
        specs += [Spec(suite, model, test, precision, options.batch[suite])
                  for test in options.tests for precision in options.precisions]
    return specs


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_logged(command: list, log: Path, timeout: float, **kwargs) -> str:
    """Runs `command` (its own process group, killed whole on timeout) with its output in `log`; returns how it
    ended: "ok", "exit N" or "timeout"."""
    say("+ " + " ".join(map(shlex.quote, command)))
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kwargs)
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return "timeout"
        except BaseException:  # Ctrl-C: its own session got no SIGINT, so it goes with us
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
    return "ok" if code == 0 else f"exit {code}"


def check_harness_imports(harness, env: dict) -> None:
    """The harness imports scipy and tabulate at start; say so before any model runs if they are missing."""
    probe = subprocess.run([sys.executable, "-c", "import scipy, tabulate"], env=env, cwd=str(harness.checkout),
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise Usage("the harness needs scipy and tabulate: `python -m pip install --target DIR scipy tabulate`, "
                    "then --harness-pythonpath DIR")


def run_harness(specs: list, options, harness, out: Path) -> None:
    scratch = parity_harness.write_shims(harness, out / "harness" / "shims")
    env = parity_harness.environment(harness, scratch, options.harness_pythonpath, cores=options.cores,
                                     allocator_policy=options.harness_allocator)
    check_harness_imports(harness, env)
    pin = (lambda: os.sched_setaffinity(0, options.cores)) if options.cores else None
    for spec in specs:
        for mode in MODES:
            csv_path = parity_table.harness_csv(out, spec, mode)
            if parity_table.read_csv_row(csv_path, spec.model) is not None:
                say(f"harness {spec.suite} {spec.stem} {mode}: done before")
                continue
            command = parity_harness.command(sys.executable, harness, spec.suite, spec.model, spec.test,
                                             spec.precision, spec.batch_size, mode, options.repeat, csv_path)
            command += options.harness_args
            ended = run_logged(command, csv_path.with_suffix(".log"), options.timeout, env=env,
                               cwd=str(harness.checkout), preexec_fn=pin)
            say(f"harness {spec.suite} {spec.stem} {mode}: {ended} (log {csv_path.with_suffix('.log')})")


def our_command(suite: str, models: list, options, batch_size: int, torchbench_dir, out: Path) -> list:
    command = [sys.executable, os.path.join(ROOT, "experiment_runner.py"), f"--suite-name={suite}",
               "-k", "^(" + "|".join(sorted(set(models))) + ")$", "--accelerator=cpu", "--xla=None",
               "--dynamo=None", "--dynamo=inductor", *(f"--test={t}" for t in options.tests),
               *(f"--precision={p}" for p in options.precisions), f"--batch-size={batch_size}", "--verify",
               f"--repeat={options.repeat}", f"--output-dirname={out / 'ours'}", *options.ours_args]
    if suite == "torchbench":
        command.insert(3, f"--torchbench-dir={torchbench_dir}")
    return command


def run_ours(specs: list, options, harness, out: Path) -> None:
    by_suite: dict = {}
    for spec in specs:
        by_suite.setdefault(spec.suite, []).append(spec.model)
    for suite, models in by_suite.items():
        torchbench_dir = options.torchbench_dir or (harness.torchbench_dir if harness else None)
        command = our_command(suite, models, options, options.batch[suite], torchbench_dir, out)
        # the sweep resumes: configs already in the results file are not run again
        ended = run_logged(command, out / "ours" / f"sweep-{suite}.log", timeout=None, cwd=ROOT)
        say(f"ours {suite}: {ended} (log {out / 'ours' / f'sweep-{suite}.log'})")


def main(argv=None) -> int:
    try:
        options = parse(sys.argv[1:] if argv is None else argv)
        harness = None
        try:  # also under --skip-harness: its lists place model names, its checkout holds TorchBench's models
            harness = parity_harness.find_harness(options.harness_dir, Path(ROOT), options.torchbench_dir)
        except parity_harness.NoHarness as exc:
            if not options.skip_harness:
                raise Usage(str(exc)) from None
        specs = specs_of(options, harness)
        if (not options.skip_ours and any(spec.suite == "torchbench" for spec in specs) and not options.torchbench_dir
                and not (harness and harness.torchbench_dir)):
            raise Usage("our TorchBench sweep needs TorchBench's checkout: --torchbench-dir DIR")
        if harness is not None:
            say(f"harness: {harness.bench_dir} ({harness.layout} checkout)")
        out = Path(options.out).resolve()
        out.mkdir(parents=True, exist_ok=True)
        if not options.skip_harness:
            run_harness(specs, options, harness, out)
        if not options.skip_ours:
            run_ours(specs, options, harness, out)
    except Usage as exc:
        print(f"parity_report: {exc}", file=sys.stderr)
        return 2
    rows = parity_table.build_rows(specs, out, out / "ours" / "results.jsonl")
    table = parity_table.render(rows)
    (out / "parity.txt").write_text(table)
    parity_table.write_csv(rows, out / "parity.csv")
    sys.stdout.write(table)
    say(f"table: {out / 'parity.txt'} and {out / 'parity.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
