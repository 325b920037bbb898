"""`make bench`'s honest defaults: its sweep is checked against eager (--verify), so the page's dashboard shows
real pass rates; each report it prints comes under a heading; the progress bar shows only on a terminal (the
runner's default; --progress-bar forces it); and it spells --format as docs/command-line.md documents it.
The recipe runs for real on a tiny sweep (BENCH_SWEEP: one dummy model, eager and aot_eager) into a temporary
OUT, with this interpreter as PY and `env` taken as built (-o env: no pip install from a test)."""

import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import threading

import pytest

from helpers import ROOT, read_jsonl, run_runner

from scripts.bench import sweep as bench_sweep

MAKE = shutil.which("make")
TINY_SWEEP = ("--suite-name=dummy -k ^mlp$$ --accelerator=cpu --xla=None --dynamo=None --dynamo=aot_eager "
              "--test=eval --test=train --repeat=2 --warmup=1")
BAR = re.compile(r"\d+/\d+ \[[^\]]*config")  # tqdm's "1/4 [00:01<00:03, ... config/s]"


def make(*args, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([MAKE, "--no-print-directory", "-o", "env", f"PY={sys.executable}", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.integration  # make asks scripts/bench/sweep.py, an interpreter that imports torch to ask for CUDA: 2 s
@pytest.mark.skipif(MAKE is None, reason="no make on this machine")
def test_the_default_sweep_is_verified_and_leaves_the_bar_to_the_terminal():
    dry = make("-n", "bench", "OUT=/nonexistent/bench")
    assert dry.returncode == 0, dry.stderr
    runner = next(line for line in dry.stdout.splitlines() if "experiment_runner.py" in line)
    assert "--verify" in runner.split() and "--progress-bar" not in runner
    here = bench_sweep.accelerator({})  # torch's answer on this machine
    assert dry.stdout.splitlines()[0].split()[-1] == here and f"--accelerator={here}" in runner.split()
    aggregate = [line for line in dry.stdout.splitlines() if "aggregate.py" in line]
    assert sum("--format=table" in line for line in aggregate) == 2


@pytest.mark.skipif(MAKE is None, reason="no make on this machine")
def test_on_a_gpu_machine_it_runs_the_gpus_sweep_and_reports_on_cuda():
    """BENCH_ACCELERATOR=cuda stands for a CUDA device here (scripts/bench/sweep.py chooses without one)."""
    for given in (["BENCH_ACCELERATOR=cuda"], []):
        env = dict(os.environ, BENCH_ACCELERATOR="cuda") if not given else None
        dry = subprocess.run([MAKE, "--no-print-directory", "-o", "env", f"PY={sys.executable}", "-n", "bench",
                              "OUT=/nonexistent/bench", *given], cwd=ROOT, capture_output=True, text=True, env=env,
                             timeout=120)
        assert dry.returncode == 0, dry.stderr
        lines = dry.stdout.splitlines()
        assert "-m scripts.bench.sweep --describe cuda --chosen" in lines[0]
        runner = next(line for line in lines if "experiment_runner.py" in line).split()
        assert {"--accelerator=cuda", "--compile-mode=reduce-overhead", "--compile-mode=default", "--verify"} <= set(
            runner) and "--xla=PJRT" not in runner
        aggregate = [line for line in lines if "aggregate.py" in line]
        assert len(aggregate) == 4 and all("--accelerator=cuda" in line for line in aggregate)
    refused = make("bench", "OUT=/nonexistent/bench", "BENCH_ACCELERATOR=tpu")
    assert refused.returncode == 2 and "BENCH_ACCELERATOR='tpu': make bench runs on cpu or cuda" in refused.stderr
    assert not os.path.exists("/nonexistent/bench")


def test_a_newcomer_reads_the_documented_format_spelling():
    """--format=tab is aggregate's hidden old alias (docs/command-line.md): not in what a newcomer reads first."""
    for name in ("Makefile", "README.md", "docs/aggregate.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        assert not re.search(r"--format[= ]tab\b", text), name


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """The real `make bench` recipe on a tiny sweep, its stdout and stderr pipes (not a terminal)."""
    if MAKE is None:
        pytest.skip("no make on this machine")
    out = tmp_path_factory.mktemp("bench")
    result = make("bench", f"OUT={out}", f"BENCH_SWEEP={TINY_SWEEP}")
    assert result.returncode == 0, f"STDOUT:\n{result.stdout}\nSTDERR:\n{result.stderr}"
    return out, result


@pytest.mark.integration
def test_each_printed_report_is_under_its_heading(bench):
    _, result = bench
    text = result.stdout
    # first, which sweep it runs (here the fixture's own flags, on what torch finds)
    assert text.splitlines()[0] == bench_sweep.describe(bench_sweep.accelerator({}), by_variable=False,
                                                        own_sweep=True)
    inference, training = text.index("== inference: speedup"), text.index("== training: speedup")
    assert inference < training
    # Each heading directly above its own grid (the reports' files, as aggregate.py wrote them).
    out = bench[0]
    for heading, name in ((inference, "report-inference.txt"), (training, "report-training.txt")):
        report = (out / name).read_text(encoding="utf-8")
        assert text.index(report, heading) == text.index("\n\n", heading) + 2


@pytest.mark.integration
def test_no_progress_bar_in_a_log_only_a_line_per_config(bench):
    _, result = bench
    assert "\r" not in result.stderr and not BAR.search(result.stderr)
    assert len(re.findall(r"INFO \[\d/4\] mlp cpu-", result.stderr)) == 4


@pytest.mark.integration
def test_the_page_shows_real_pass_rates(bench):
    out, _ = bench
    found = read_jsonl(out / "results.jsonl")
    assert len(found) == 4 and all(r["verify"] and r["accuracy"] == "pass" for r in found)
    text = (out / "report-inference.html").read_text(encoding="utf-8")
    dashboard = text[text.index('id="dashboard"'):text.index("What was run")]
    assert dashboard.count("100%, 1/1") == 2 and "not checked" not in dashboard


def sweep_on_a_terminal(tmp_path, *flags) -> str:
    """A one-config sweep whose stderr is a pseudo-terminal (stdout a pipe); what the terminal showed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a 120-column terminal
    shown = []

    def read():
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the follower closed: the child is gone
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        result = subprocess.run([sys.executable, str(ROOT / "experiment_runner.py"), "--suite-name=dummy", "-k",
                                 "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
                                 "--repeat=2", "--warmup=1", f"--output-dirname={tmp_path}", *flags],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=follower, text=True, timeout=300)
    finally:
        os.close(follower)
        reader.join(timeout=30)
        os.close(leader)
    assert result.returncode == 0
    return b"".join(shown).decode("utf-8", "replace")


@pytest.mark.integration
def test_the_bar_shows_on_a_terminal_and_progress_bar_forces_it_elsewhere(tmp_path):
    assert BAR.search(sweep_on_a_terminal(tmp_path / "tty"))
    forced = run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                        "--test=eval", "--repeat=2", "--warmup=1", f"--output-dirname={tmp_path / 'forced'}",
                        "--progress-bar", check_rc=0)
    assert BAR.search(forced.stderr)
