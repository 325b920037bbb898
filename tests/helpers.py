"""Test helpers: run the real tools (in this process, or as their own process), load a file outside any package, read
what they wrote, find processes left behind. Imported by test modules in every folder of tests/ (`from helpers import
...`: conftest.py's folder, tests/, is on sys.path); fixtures live in conftest.py."""

import ast
import contextlib
import functools
import importlib
import importlib.util
import io
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "aggregate" / "golden"  # aggregate.py's golden files and the results files they read
PYTHON = sys.executable
# Each top-level script's main(argv): what call_tool runs in this process.
MAINS = {"experiment_runner.py": "benchmarks.__main__", "result_analyzer.py": "benchmarks.analyzer.cli",
         "aggregate.py": "benchmarks.aggregate.cli", "compare.py": "benchmarks.compare.cli",
         "history.py": "benchmarks.history.cli"}
# Set by conftest.py for each test: run_tool (a process of its own) is for the tests whose tier says so.
current_test = None


def _check(result: subprocess.CompletedProcess, check_rc) -> subprocess.CompletedProcess:
    if check_rc is not None:
        assert result.returncode == check_rc, f"exit {result.returncode}\nSTDOUT:\n{result.stdout}\nSTDERR:\n{result.stderr}"
    return result


def call_tool(script: str, *args, env=None, check_rc=None, cwd=ROOT, text=True) -> subprocess.CompletedProcess:
    """Run a top-level tool's main(argv) in this process, from `cwd` (the repository, as run_tool), with `env` as
    the environment if given: its exit status, stdout and stderr as run_tool gives them (the unit tier's way: no
    interpreter to start, nothing imported twice); `text=False`: stdout as bytes (an image). The environment,
    directory and logging are put back."""
    return call_main(importlib.import_module(MAINS[script]).main, *args, name=script, env=env, check_rc=check_rc,
                     cwd=cwd, text=text)


def call_main(main, *args, name=None, env=None, check_rc=None, cwd=ROOT, text=True) -> subprocess.CompletedProcess:
    """call_tool for any main(argv): a tool of scripts/ too (`call_main(sweep.main, ...)`), as the
    unit tier runs a script's command line (its bad usage: one line and exit 2) without an interpreter of its own."""
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True) for _ in range(2))
    root, saved_handlers, saved_level = logging.getLogger(), logging.getLogger().handlers[:], logging.getLogger().level
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(arg) for arg in args])
            except SystemExit as exc:  # argparse: --help, a bad flag; sys.exit(text) prints it, as Python does
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
    stdout, stderr = (stream.buffer.getvalue() for stream in (out, err))
    result = subprocess.CompletedProcess([name or main.__module__, *map(str, args)], code or 0,
                                         stdout.decode() if text else stdout, stderr.decode(errors="replace"))
    return _check(result, check_rc)


def source_nodes(path) -> tuple:
    """Every node of the Python file at `path`, in ast.walk's order (the module first). Parsed once per test process
    while the file is unchanged: the rules over the whole tree (tests/project/) read the same files many times."""
    stat = os.stat(path)
    return _parsed(Path(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=None)
def _parsed(path: Path, mtime_ns: int, size: int) -> tuple:
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))))


def load_script(name: str, folder: Path):
    """<folder>/<name>.py, a file outside any package (aggregate's golden runner), as a module registered in
    sys.modules (dataclasses look their module up). The one loader of the tests: none carries its own. The tools of
    scripts/ are packages: tests import them (`from scripts.bench import sweep`)."""
    spec = importlib.util.spec_from_file_location(name, Path(folder) / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_tool(script: str, *args, timeout: float = 600, env=None, check_rc=None) -> subprocess.CompletedProcess:
    """Run a top-level tool (experiment_runner.py, result_analyzer.py, aggregate.py) or a script's module
    (scripts.upkeep.soak: `python -m` from the root) for real, as its own process:
    for sweeps (the integration tier) and for what only a process shows (its exit status as a script, signals,
    what it imports at start: tests marked `process`); the unit tier calls call_tool."""
    if current_test is not None:
        tiers = {mark.name for mark in current_test.iter_markers()}
        assert tiers & {"integration", "process"}, (
            f"{current_test.nodeid}: a unit test runs the tools in process (call_tool); mark it `process` if what it "
            "tests is the process itself")
    command = [PYTHON, str(ROOT / script)] if script.endswith(".py") else [PYTHON, "-m", script]
    result = subprocess.run([*command, *map(str, args)], capture_output=True, text=True,
                            timeout=timeout, cwd=ROOT, env=env)
    return _check(result, check_rc)


def run_runner(*args, **kwargs) -> subprocess.CompletedProcess:
    return run_tool("experiment_runner.py", *args, **kwargs)


def call_runner(*args, **kwargs) -> subprocess.CompletedProcess:
    return call_tool("experiment_runner.py", *args, **kwargs)


def records_by_slug(out) -> dict:
    """A sweep's records in `out`/results.jsonl by (model name, the config's slug without its batch size)."""
    from benchmarks.config.experiment_config import ExperimentConfig

    found = {}
    for record in read_jsonl(out / "results.jsonl"):
        slug = ExperimentConfig.from_dict(record["experiment"]).with_(batch_size=None).slug()
        found[(record["model"]["model_name"], slug)] = record
    return found


# What a test may need that an environment may lack (README.md, "Your own torch"): each is a marker (conftest.py) that
# skips the test with the reason where it can't be had. Found without importing torch.
@functools.lru_cache(maxsize=None)
def xla_missing():
    """Why torch-xla can't run here (not installed, or a release of another torch's), or None."""
    from benchmarks.plumbing import machine_facts, torch_support

    installed = importlib.util.find_spec("torch_xla") is not None
    return torch_support.xla_problem(torch_support.installed_torch()[0], installed,
                                     machine_facts.package_version("torch_xla"))


@functools.lru_cache(maxsize=None)
def torchao_missing():
    if importlib.util.find_spec("torchao") is None:
        return "TorchAO is not installed in this environment (the lock's torchao 0.14.1 is the torch 2.9 line)"
    return None


@functools.lru_cache(maxsize=None)
def torchvision_unloadable():
    """Why torchvision is installed but does not load beside this torch (a build for another one), or None."""
    if importlib.util.find_spec("torchvision") is None:
        return None
    try:
        import torchvision  # noqa: F401
    except Exception as exc:
        return f"torchvision does not load beside this torch ({type(exc).__name__}: {exc})"
    return None


def torchvision_missing():
    if importlib.util.find_spec("torchvision") is None:
        return "torchvision is not installed in this environment"
    return torchvision_unloadable()


@functools.lru_cache(maxsize=None)
def compiled_reader_missing():
    """Why result_analyzer.py's compiled reader (benchmarks/analyzer/_jsonl_scan.c) can't be used here, or None: a
    clone before `make env` or `pip install -e .` has not built it (a machine without a C compiler never does, and
    the analyzer reads with its Python reader there), or it was built from another version of its source."""
    from benchmarks.analyzer import compiled_reader

    why = compiled_reader.why_unavailable
    return None if why is None else f"the compiled analyzer reader is {why}"


NEEDS = {
    "requires_xla": (xla_missing, "needs torch-xla beside its own torch (2.9): skipped with the reason elsewhere"),
    "requires_torchao": (torchao_missing, "needs TorchAO (--quantization): skipped with the reason where it's missing"),
    "requires_torchvision": (torchvision_missing, "needs a torchvision that loads beside this torch"),
    "requires_loadable_torchvision": (torchvision_unloadable, "needs torchvision to load where it is installed (as "
                                      "transformers imports it): skipped with the reason where it does not"),
    "requires_compiled_reader": (compiled_reader_missing, "needs result_analyzer.py's compiled reader (built by `make "
                                 "env` or `pip install -e .`): skipped with the reason where it is not built"),
}
XLA = xla_missing() is None  # for tests that mix XLA and other configs: what they expect of the XLA ones


def usable_cores() -> list:
    """The cores this process may use, in order (a test run may be pinned to some: `taskset -c 1 pytest ...`)."""
    return sorted(os.sched_getaffinity(0))


def read_jsonl(path) -> list:
    """Every valid record of a results file (torn or invalid lines are skipped)."""
    out = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def by_model(records: list) -> dict:
    return {r["model"]["model_name"]: r for r in records}


def forked_configs(server) -> list:
    """A fork server's children that are configs' children: each leads its own session (fork_server/zygote.become_child
    calls setsid first), unlike the probe child the server forks once at its start to check CUDA in its forks."""
    import psutil

    found = []
    for child in server.children():
        try:
            if os.getpgid(child.pid) == child.pid:
                found.append(child)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


def processes_mentioning(text: str) -> list:
    """Live processes whose command line contains `text` (to prove nothing was left behind)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.pid != os.getpid() and text in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def wait_for(predicate, timeout=120, what="it"):
    """`predicate()`'s first true value, asked every 0.2 s; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"waited {timeout} s for {what}")


def ray_children(driver_pid: int) -> list:
    """The running children of a Ray sweep whose driver is `driver_pid`, on any node of this machine (each writes
    under a scratch directory named after its driver's host and pid: runner/ray/task.py): spawned ones (their
    own command line), and forked ones (their node's fork server's command line, whose log is in that scratch
    directory; the server itself is left out: a child's parent is a server)."""
    import psutil

    found = []
    for process in processes_mentioning(f"-{driver_pid}-"):
        try:
            command = " ".join(process.cmdline())
            if "ptbench-ray-" not in command:
                continue
            if "--model-config" in command or (
                    "benchmarks.fork_server.zygote" in command and "benchmarks.fork_server.zygote" in " ".join(process.parent().cmdline())):
                found.append(process)
        except (psutil.Error, AttributeError):  # gone meanwhile, or its parent is
            continue
    return found


def fill_disk(directory, leave: int = 0):
    """Fill the file system of `directory` with a filler file, leaving about `leave` bytes free; returns its path
    (remove it to give the space back)."""
    stats = os.statvfs(directory)
    free = stats.f_bavail * stats.f_frsize
    filler = Path(directory) / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, b"x" * max(0, free - leave))
    except OSError:  # the last page was taken by metadata: full is full
        pass
    finally:
        os.close(fd)
    return filler


# Two runs a day apart, for records written by hand (hand_record).
RUN1, RUN2 = 1_700_000_000.0, 1_700_086_400.0


def hand_record(model, dynamo, timestamp, per_iter, first_run, peak, accuracy="pass", precision=None, status="ok",
                compile_mode=None, graph_breaks=0, recompiles=0, dynamic="static", **counts):
    """A hand-written record of one dummy-suite config (eager, or `dynamo`), its numbers given, in the run at
    `timestamp`: what the dashboard's, compare's gates' and the verdict's tests read. `counts`: more of
    dynamo_stats' counts (calls_captured, fallbacks_to_eager)."""
    experiment = {"accelerator": "cpu", "accelerator_model": "Test CPU", "xla": None, "xla_flags": None,
                  "dynamo": dynamo, "torch_xla2": None, "test": "eval", "batch_size": 2,
                  "enable_functionalization": False, "quantization": None, "precision": precision,
                  "dynamic": dynamic, "compile_mode": compile_mode if dynamo else None, "inductor_config": None,
                  "compile_cache": "cold" if dynamo else None}
    out = {"model": {"suite_name": "dummy", "model_name": model}, "experiment": experiment, "repeat": 3,
           "iterations_per_run": 1, "timestamp": timestamp, "schema_version": 1, "status": status, "verify": True,
           "accuracy": accuracy, "warmup": 1, "memory_kind": "cpu_rss_above_baseline"}
    if dynamo:
        out["dynamo_stats"] = {"graphs": 1 + graph_breaks, "graph_breaks": graph_breaks, "recompiles": recompiles,
                               **counts}
    if status == "ok":
        out["metrics"] = {"total_time": [per_iter] * 3, "per_iter_time": [per_iter] * 3, "warmup_time": [first_run],
                          "peak_memory_bytes": [peak, peak], "peak_rss_bytes": [10 * peak, 10 * peak]}
    else:
        out["metrics"] = {"error": "it broke"}
        out["error"] = {"type": "RuntimeError", "message": "it broke", "phase": "run"}
    return out


def apply_update(path, output: str) -> None:
    """Do what compare.py --expected's printed update lines say to the expected file at `path`: remove each '-' line,
    add each '+' line."""
    lines = path.read_text().splitlines()
    block = output.split("remove each line marked -, add each marked +:\n", 1)[1].splitlines()
    for line in block:
        if line.startswith("-"):
            lines.remove(line[1:])
    lines += [line[1:] for line in block if line.startswith("+")]
    path.write_text("\n".join(lines) + "\n")


def nightly_record(model: str, run: int) -> dict:
    """An ok eager record of `model` in nightly run `run` (a day apart, its own commit): history's fixtures."""
    values = [0.01 * (1 + 0.001 * i) for i in range(5)]
    return {"model": {"suite_name": "dummy", "model_name": model},
            "experiment": {"accelerator": "cpu", "accelerator_model": "Test CPU", "xla": None, "xla_flags": None,
                           "dynamo": None, "torch_xla2": None, "test": "eval", "batch_size": 8,
                           "enable_functionalization": False},
            "repeat": 5, "iterations_per_run": 1, "timestamp": 1.7e9 + run * 86400.0, "schema_version": 1,
            "metrics": {"warmup_time": [0.03], "per_iter_time": values, "total_time": values},
            "verification_code": "PASS", "accuracy": "pass", "status": "ok", "warmup": 1,
            "environment": {"hostname": "ci", "git_commit": f"c{run:02d}", "torch": "2.9.1"}}


def nightly_history(root, runs: int = 3, models=("mlp", "cnn")) -> Path:
    """A history database under `root`, ingested from `runs` nightly results files of `models`; its path."""
    for run in range(runs):
        night = Path(root) / "nightly" / f"{run:02d}"
        night.mkdir(parents=True)
        (night / "results.jsonl").write_text("".join(json.dumps(nightly_record(m, run)) + "\n" for m in models))
    path = Path(root) / "history.sqlite"
    call_tool("history.py", "ingest", Path(root) / "nightly", "--db", path, check_rc=0)
    return path


def install_plugin(where):
    """A user's dynamo backend plugin, a real distribution on `where`: a module with a backend, and its metadata
    naming the entry point (tests/runner/test_backend_plugins.py, tests/config/test_backend_registry.py)."""
    (where / "tiny_backend_plugin.py").write_text("def tiny_plugin_backend(gm, example_inputs):\n"
                                                   "    return gm.forward\n")
    info = where / "tiny_backend_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-backend-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[torch_dynamo_backends]\ntiny_plugin = tiny_backend_plugin:tiny_plugin_backend\n")


def env_with_package_folder(tmp_path, package: str, folder) -> dict:
    """The environment whose processes see the modules of `folder` as part of `package` (a sitecustomize in
    tmp_path/boot appends it to the package's __path__): the recipe tests' throwaway suites and features."""
    boot = tmp_path / "boot"
    boot.mkdir()
    (boot / "sitecustomize.py").write_text(
        f"import {package}\n{package}.__path__.append({str(folder)!r})\n", encoding="utf-8")
    path = os.pathsep.join([str(boot), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return dict(os.environ, PYTHONPATH=path)
