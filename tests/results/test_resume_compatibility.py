"""Results files written before the axes' "at its default" rule moved into config/axes.py (commit 7f5344a) resume
under today's code with nothing rerun: every stored record keeps its fingerprint (tests/fixtures/resume/: make bench's
sweep run for real, and a record per config of sweeps over every axis of the time, CUDA ones included), and a dry run
of make bench's sweep on its stored file has nothing left to run. A new axis, a switch included, must keep them."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, XLA, call_runner

from benchmarks.results import records

STORED = ROOT / "tests" / "fixtures" / "resume"
# Makefile's BENCH_SWEEP (make bench), at the --repeat its stored records ran with.
MAKE_BENCH = ("--suite-name=dummy", "--accelerator=cpu", "--xla=None", "--xla=PJRT", "--dynamo=None", "--dynamo=inductor",
              "--dynamo=openxla", "--test=eval", "--test=train", "--repeat=1", "--verify")


def short_hash(fingerprint: str) -> str:
    return hashlib.sha256(fingerprint.encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", ["make-bench", "dashboard-axes"])
def test_every_stored_record_keeps_its_fingerprint(name):
    stored = json.loads((STORED / "fingerprints.json").read_text())["sha256_16_of_fingerprints"][name]
    lines = (STORED / f"{name}.jsonl").read_text().splitlines()
    assert len(lines) == len(stored) and len(stored) >= 24
    now = [short_hash(records.record_fingerprint(json.loads(line))) for line in lines]
    changed = [json.loads(lines[i])["experiment"] for i, (a, b) in enumerate(zip(now, stored)) if a != b]
    assert not changed, f"{len(changed)} record(s) would rerun, the first: {changed[0]}"


# The block size is no part of a config: the stored records ran one call per timed run, and resume as they are under
# today's default (a calibrated block), and under any block given by hand.
@pytest.mark.integration  # the sweep itself, though it finds nothing to run: no child starts
@pytest.mark.parametrize("block", [(), ("--iterations-per-run=20",), ("--iterations-per-run=auto",)])
def test_make_bench_resumes_its_stored_file_with_nothing_to_run(tmp_path, block):
    results = tmp_path / "results.jsonl"
    shutil.copy(STORED / "make-bench.jsonl", results)
    before = results.read_bytes()
    assert all(json.loads(line)["iterations_per_run"] == 1 for line in before.decode().splitlines())
    result = call_runner(*MAKE_BENCH, *block, f"--output-dirname={tmp_path}")
    assert result.returncode == 0, result.stderr
    assert f"nothing to run: every config is already in {results}" in result.stderr, result.stderr
    kept = 24 if XLA else 12  # beside a torch without torch-xla its 12 XLA configs are dropped
    assert f"0 to run, {kept} already in" in result.stderr
    assert results.read_bytes() == before
