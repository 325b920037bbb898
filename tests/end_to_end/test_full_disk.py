"""A full disk is a clear stop, never a corrupt file or a blamed model (issue #34; docs/runner.md, "A full disk"):
the real runner on a real 300 KiB file system the test mounts (skipped where mounting isn't permitted) and, on
any machine, through the one writer's fault injection (PTBENCH_WRITE_FAULT, plumbing/disk_writes.py). Each time:
exit 2 and one line naming the file, the results file clean JSON Lines holding only whole records, no record
against the config the disk interrupted, and the same command, once there is space, completes the sweep
(no --retry-failed)."""

import json
import os

import pytest

from helpers import fill_disk, run_runner

pytestmark = pytest.mark.integration

SWEEP = ["--suite-name=dummy", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--test=train",
         "--repeat=2", "--warmup=1"]
ALL = {(m, t) for m in ("mlp", "cnn", "multi_output") for t in ("eval", "train")}


def whole_records(path) -> list:
    """The records of a results file that must be clean JSON Lines: every line a whole record, ending in a newline."""
    if not os.path.exists(path):
        return []
    data = open(path, "rb").read()
    assert not data or data.endswith(b"\n"), f"{path} ends with a torn line"
    return [json.loads(line) for line in data.splitlines()]


def assert_clear_stop(result, names: str):
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("experiment_runner.py: error:")]
    assert len(errors) == 1 and names in errors[0] and "No space left on device" in errors[0], result.stderr
    assert "Traceback" not in result.stderr


def assert_nothing_blamed(records: list):
    assert [r["status"] for r in records] == ["ok"] * len(records), [r.get("error") for r in records]


def assert_resumes_to_the_end(out, *extra):
    before = len(whole_records(out / "results.jsonl"))
    again = run_runner(*SWEEP, f"--output-dirname={out}", *extra, timeout=300)
    assert again.returncode == 0, again.stderr
    records = whole_records(out / "results.jsonl")
    keys = [(r["model"]["model_name"], r["experiment"]["test"]) for r in records]
    assert sorted(keys) == sorted(ALL), keys  # each config once: nothing run twice, nothing lost
    assert_nothing_blamed(records)
    assert f"{before} already in" in again.stderr


def test_a_sweep_on_a_real_full_disk_stops_clean_and_resumes_once_there_is_space(small_disk):
    out = small_disk / "out"
    filler = fill_disk(small_disk, leave=12_288)  # room for a config or two of the six
    result = run_runner(*SWEEP, f"--output-dirname={out}", timeout=300)
    assert_clear_stop(result, str(out))
    records = whole_records(out / "results.jsonl")
    assert len(records) < len(ALL)
    assert_nothing_blamed(records)
    os.remove(filler)
    assert_resumes_to_the_end(out)


def fault(spec: str) -> dict:
    return {**os.environ, "PTBENCH_WRITE_FAULT": spec}


def test_a_results_append_torn_by_the_disk_is_cut_back_and_the_sweep_resumes(tmp_path):
    out = tmp_path / "out"
    result = run_runner(*SWEEP, f"--output-dirname={out}", env=fault("ENOSPC:results.jsonl:2"), timeout=300)
    assert_clear_stop(result, str(out / "results.jsonl"))
    records = whole_records(out / "results.jsonl")  # the third append wrote half a line: cut off
    assert len(records) == 2
    assert_nothing_blamed(records)
    assert_resumes_to_the_end(out)


def test_a_log_the_disk_refuses_blames_no_config(tmp_path):
    """Today's `crash in setup: OSError: [Errno 28]` record: the config whose log could not be written."""
    out = tmp_path / "out"
    result = run_runner(*SWEEP, f"--output-dirname={out}", env=fault("EDQUOT:cpu-eager-train.log"), timeout=300)
    assert result.returncode == 2 and "cpu-eager-train.log" in result.stderr and "quota" in result.stderr.lower()
    records = whole_records(out / "results.jsonl")
    assert all(r["experiment"]["test"] == "eval" for r in records)
    assert_nothing_blamed(records)
    assert_resumes_to_the_end(out)


GOLDEN = ["-k", "^mlp$", "--test=eval"]


def test_a_golden_store_the_disk_refuses_keeps_no_half_entry_and_blames_no_config(tmp_path):
    out, store = tmp_path / "out", tmp_path / "store"
    sweep = [*SWEEP[:4], "--repeat=2", "--warmup=1", *GOLDEN, f"--save-golden={store}", f"--output-dirname={out}"]
    result = run_runner(*sweep, env=fault("ENOSPC:expected.safetensors"), timeout=300)
    assert_clear_stop(result, "expected.safetensors")
    assert whole_records(out / "results.jsonl") == []  # the config is not blamed for the disk
    entry = [files for _, _, files in os.walk(store) if files]
    assert all("manifest.json" not in files and not any(f.endswith(".tmp") for f in files) for files in entry)
    again = run_runner(*sweep, timeout=300)
    assert again.returncode == 0, again.stderr
    [record] = whole_records(out / "results.jsonl")
    assert record["status"] == "ok" and record["golden"]["status"] == "saved", record.get("golden")


def test_a_golden_store_on_a_real_full_disk(small_disk, tmp_path):
    out, store = tmp_path / "out", small_disk / "store"
    filler = fill_disk(small_disk)
    sweep = [*SWEEP[:4], "--repeat=2", "--warmup=1", *GOLDEN, f"--save-golden={store}", f"--output-dirname={out}"]
    result = run_runner(*sweep, timeout=300)
    assert_clear_stop(result, str(store))
    assert whole_records(out / "results.jsonl") == []
    assert not [name for _, _, files in os.walk(store) for name in files if name == "manifest.json" or ".tmp" in name]
    os.remove(filler)
    assert run_runner(*sweep, timeout=300).returncode == 0
    assert [r["status"] for r in whole_records(out / "results.jsonl")] == ["ok"]
