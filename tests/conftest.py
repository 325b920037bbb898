"""Fixtures shared by the test modules (helpers are in helpers.py), and the test tiers: tests marked
`integration` start real sweeps or children (`make test-fast` leaves them out); the unit tier calls the tools in
process (helpers.call_tool), except tests marked `process`, whose subject is the tool's own process. Tests marked
`gpu` need a CUDA device: skipped with the reason where there is none, run by `make test-gpu`."""

import functools
import gc
import os
import signal
import sys

import pytest

import helpers

pytest.register_assert_rewrite("generation_checks")  # its asserts say what differed, as in a test module

# The suite keeps Python's bytecode (__pycache__, git-ignored) even where the environment sets PYTHONDONTWRITEBYTECODE
# (CI's does): without it each xdist worker, and each process a test starts, compiles the project's modules again
# and pytest rewrites every test file's asserts again, most of the unit tier's time. Set here, before the workers and
# those processes start, so that they inherit it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@functools.lru_cache(maxsize=None)
def cuda_missing():
    """Why this machine can't run the GPU tier, or None. torch is asked through NVML (as the fork server asks it),
    so this process's forks stay usable for CUDA."""
    try:
        import torch
    except ImportError as exc:
        return f"torch does not import ({exc})"
    if not torch.backends.cuda.is_built():
        return f"this torch ({torch.__version__}) is built without CUDA"
    saved = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        count = torch.cuda.device_count()
    finally:
        if saved is None:
            os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
        else:
            os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = saved
    return None if count else "no CUDA device is visible (torch.cuda.device_count() is 0)"


def pytest_collection_modifyitems(config, items):
    gpu_tests = [item for item in items if item.get_closest_marker("gpu")]
    reason = cuda_missing() if gpu_tests else None
    for item in gpu_tests if reason else ():
        item.add_marker(pytest.mark.skip(reason=f"GPU tier: {reason}"))


def pytest_configure(config):
    # A record that breaks its declared schema (benchmarks/results/record_schema.py) fails loudly in the tests, in
    # every process they start (the environment is inherited); a user's sweep writes it with a warning.
    os.environ["BENCHMARKS_STRICT_RECORDS"] = "1"
    for name, (_, text) in helpers.NEEDS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    # The tests press Ctrl-C (SIGINT) on the sweeps they start. A suite started in the background by a non-interactive
    # shell (`make test &`) ignores SIGINT, and every process it starts inherits that: the sweeps would not hear it.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_frozen_for = None  # the test module whose first test last froze the heap


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test marked with what it needs (helpers.NEEDS) is skipped, with the reason, where that can't be had.
    Before a module's first test (and its fixtures), what the tests before it left is collected and what is alive
    then (torch, pandas, every module imported) is frozen out of the garbage collector's reach, as the fork server
    freezes its preloads (fork_server/zygote.py): the child's code collects before timing and after each eager reference,
    and a full collection of a test process's heap, torch in it, is slow, and the unit tier makes dozens. What a test
    creates is still collected by those calls, which is what they are for."""
    global _frozen_for
    module = getattr(item, "module", None)
    if module is not _frozen_for:
        _frozen_for = module
        gc.collect()
        gc.freeze()
    for name, (missing, _) in helpers.NEEDS.items():
        if item.get_closest_marker(name) is not None:
            reason = missing()
            if reason:
                pytest.skip(reason)


@pytest.fixture(autouse=True)
def _tier(request):
    """Tells helpers.run_tool which test calls it (it checks the test's tier)."""
    helpers.current_test = request.node
    yield
    helpers.current_test = None


@pytest.fixture
def out_dir(tmp_path):
    return tmp_path / "out"


@pytest.fixture(params=[pytest.param("compiled", marks=pytest.mark.requires_compiled_reader), "python"])
def analyzer_reader(request, monkeypatch):
    """Runs a test with each of result_analyzer.py's readers: the compiled one (benchmarks/analyzer/_jsonl_scan.c, built
    by `make env`; skipped with the reason where it is not built) and the pure-Python one it falls back to. Worker
    processes are forked, so they inherit it."""
    from benchmarks.analyzer import compiled_reader

    if request.param == "python":
        monkeypatch.setattr(compiled_reader, "module", None)  # as on a machine without a C compiler
    return request.param


@pytest.fixture
def small_disk(tmp_path):
    """A real 300 KiB file system (tmpfs) of the test's own, to fill up; skipped where mounting is not permitted
    (the tests that need a full disk everywhere use disk_writes' fault injection instead)."""
    import subprocess

    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or done.returncode}): "
                    "the fault-injection tests cover the same paths")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
