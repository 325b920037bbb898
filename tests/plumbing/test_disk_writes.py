"""The one writer (plumbing/disk_writes.py) on a full disk: a real small file system the test mounts (skipped where
mounting isn't permitted) and the writer's fault injection (everywhere): nothing half-written is left, the old
file stays, the error names the path; the results file's appends are cut back to their last whole record."""

import errno
import json
import os
from pathlib import Path

import pytest

from helpers import ROOT, fill_disk

from benchmarks.plumbing import disk_writes
from benchmarks.results import records


def leftovers(directory) -> list:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


def test_a_replaced_file_on_a_full_disk_keeps_its_old_content_and_leaves_no_temporary_file(small_disk):
    target = small_disk / "report.json"
    disk_writes.write_json(str(target), {"old": True})
    fill_disk(small_disk)
    with pytest.raises(disk_writes.WriteFailed) as caught:
        disk_writes.write_bytes(str(target), b"y" * 100_000)
    assert caught.value.errno == errno.ENOSPC and caught.value.disk_full
    assert str(target) in str(caught.value) and "No space left on device" in str(caught.value)
    assert json.loads(target.read_text()) == {"old": True}
    assert leftovers(small_disk) == []


@pytest.mark.parametrize("name", ["ENOSPC", "EDQUOT", "EIO"])
def test_an_injected_refusal_is_one_error_naming_the_path(tmp_path, monkeypatch, name):
    target = tmp_path / "state.json"
    disk_writes.write_json(str(target), {"old": True})
    monkeypatch.setenv(disk_writes.FAULT_VARIABLE, f"{name}:state.json")
    with pytest.raises(disk_writes.WriteFailed) as caught:
        disk_writes.write_json(str(target), {"new": True})
    assert caught.value.errno == getattr(errno, name) and caught.value.path == str(target)
    assert json.loads(target.read_text()) == {"old": True}
    assert leftovers(tmp_path) == []
    disk_writes.write_json(str(tmp_path / "other.json"), {"fine": 1})  # other files are not refused


def test_replacing_keeps_the_old_files_permissions(tmp_path):
    target = tmp_path / "database.csv"
    target.write_text("a\n")
    os.chmod(target, 0o640)
    disk_writes.write_text(str(target), "b\n")
    assert target.read_text() == "b\n" and (os.stat(target).st_mode & 0o777) == 0o640


def record(index: int) -> dict:
    return {"model": {"model_name": f"m{index}"}, "experiment": {}, "payload": "z" * 1500}


def assert_clean_json_lines(path) -> list:
    data = Path(path).read_bytes()
    assert not data or data.endswith(b"\n"), "the file ends with a torn line"
    return [json.loads(line) for line in data.splitlines()]


def test_results_appends_on_a_full_disk_stop_at_the_last_whole_record_and_resume_once_there_is_space(small_disk):
    path = small_disk / "results.jsonl"
    filler = fill_disk(small_disk, leave=10_000)
    written = 0
    with pytest.raises(disk_writes.WriteFailed) as caught:
        with records.ResultsWriter(str(path)) as writer:
            for index in range(100):
                writer.append(record(index))
                written += 1
    assert caught.value.disk_full and str(path) in str(caught.value)
    assert 0 < written < 100
    assert [r["model"]["model_name"] for r in assert_clean_json_lines(path)] == [f"m{i}" for i in range(written)]
    os.remove(filler)
    with records.ResultsWriter(str(path)) as writer:
        writer.append(record(written))
    assert len(assert_clean_json_lines(path)) == written + 1


def test_a_partial_append_is_cut_back_through_fault_injection(tmp_path, monkeypatch):
    path = tmp_path / "results.jsonl"
    monkeypatch.setenv(disk_writes.FAULT_VARIABLE, "ENOSPC:results.jsonl:2")  # the third write fails half-way
    with records.ResultsWriter(str(path)) as writer:
        writer.append(record(0))
        writer.append(record(1))
        with pytest.raises(disk_writes.WriteFailed):
            writer.append(record(2))
    assert [r["model"]["model_name"] for r in assert_clean_json_lines(path)] == ["m0", "m1"]


def test_nothing_but_the_one_writer_renames_a_file_into_place():
    """The hand-rolled temp-file-then-replace writers are gone: each goes through plumbing/disk_writes.py."""
    found = []
    for path in (ROOT / "benchmarks").rglob("*.py"):
        if path.name == "disk_writes.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "os.replace(" in line or ".tmp\"" in line or "mkstemp(" in line:
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
