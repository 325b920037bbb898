"""Every file a tool writes, and every folder it searches, stays safe when the output folder came from elsewhere
(issue #61, findings 4, 5, 6 and 11): a link planted at a report's name (-o, --plot, --write-expected) is refused
in one line, exit 2, and its target kept; history's default database is never opened through a link; a results
folder holding links to itself (`a -> .`, `b -> .`) is searched once, fast; side inputs (expected-results counts,
batch-size files) go through the record check's rules."""

import json
import os
import subprocess
import sys
import time

import pytest

from helpers import PYTHON, ROOT, RUN1, call_runner, call_tool, hand_record

KEPT = "the user's own file\n"


def results(folder, model="m"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.jsonl"
    rows = [hand_record(model, None, RUN1, 0.01, 0.02, 100), hand_record(model, "aot_eager", RUN1, 0.008, 0.5, 100)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.txt"
    path.write_text(KEPT)
    return path


def planted(folder, name, target):
    link = folder / name
    os.symlink(target, link)
    return link


@pytest.mark.parametrize("tool, args, flag", [
    ("aggregate.py", ["--accelerator=cpu", "--format=html"], "-o"),
    ("aggregate.py", ["--accelerator=cpu", "--format=csv"], "-o"),
    ("compare.py", ["{run}"], "-o"),
    ("compare.py", ["{run}", "--plot"], None),
    ("compare.py", ["--write-expected"], None),
])
def test_a_link_at_a_reports_name_is_refused_and_its_target_kept(tmp_path, victim, tool, args, flag):
    run = results(tmp_path / "run")
    link = planted(tmp_path / "run", "report.out" if not (args and args[-1] == "--plot") else "plot.png", victim)
    argv = [str(run)] + [a.replace("{run}", str(run)) for a in args] + ([flag] if flag else []) + [str(link)]
    result = call_tool(tool, *argv)
    assert victim.read_text() == KEPT and os.path.islink(link)
    assert result.returncode == 2 and "symbolic link" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("command", [["show"], ["detect"]])
def test_historys_output_through_a_link_is_refused(tmp_path, victim, command):
    db = tmp_path / "h.sqlite"
    call_tool("history.py", "ingest", results(tmp_path / "run"), "--db", db, check_rc=0)
    link = planted(tmp_path, "out.txt", victim)
    result = call_tool("history.py", *command, "--db", db, "-o", link)
    assert victim.read_text() == KEPT
    assert result.returncode == 2 and "symbolic link" in result.stderr and result.stderr.count("\n") == 1


def test_historys_default_database_is_not_opened_through_a_link(tmp_path):
    out, elsewhere = tmp_path / "artifact", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    planted(out, "history.sqlite", elsewhere / "their.sqlite")
    result = call_tool("history.py", "ingest", results(tmp_path / "run"), "--output-dirname", out)
    assert not (elsewhere / "their.sqlite").exists()  # no database made outside the folder
    assert result.returncode == 2 and "symbolic link" in result.stderr and result.stderr.count("\n") == 1


# ------------------------------------------------------------------ 6: one walk of a folder

def looping_folder(tmp_path):
    folder = tmp_path / "results"
    results(folder / "run")
    os.symlink(".", folder / "a")
    os.symlink(".", folder / "b")
    os.symlink("..", folder / "run" / "up")
    return folder


@pytest.mark.parametrize("argv", [
    ["aggregate.py", "{f}", "--accelerator=cpu", "--format=csv"],
    ["compare.py", "{f}", "{f}", "--format=csv"],
    ["history.py", "ingest", "{f}", "--db", "{db}"],
])
def test_a_folder_with_links_to_itself_is_searched_once_and_fast(tmp_path, argv):
    folder = looping_folder(tmp_path)
    argv = [a.replace("{f}", str(folder)).replace("{db}", str(tmp_path / "h.sqlite")) for a in argv]
    started = time.monotonic()
    try:
        done = subprocess.run([PYTHON, *argv], cwd=ROOT, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{argv[0]} still searching after 90 s")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60


def test_the_walk_reads_each_file_once_and_follows_a_link_to_a_new_folder(tmp_path):
    from benchmarks.results import records

    folder = looping_folder(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    results(elsewhere / "night")
    os.symlink(elsewhere, folder / "latest")
    found = records.expand_input_paths([str(folder)], recursive=True)
    assert [os.path.realpath(p) for p in found] == sorted(
        [str((elsewhere / "night" / "results.jsonl").resolve()), str((folder / "run" / "results.jsonl").resolve())])


# ------------------------------------------------------------------ 11: side inputs through the record's door

@pytest.mark.parametrize("count", ["²", "9" * 5000, "99999999999999999999"])
def test_an_expected_count_no_int_takes_is_one_line_and_exit_2(tmp_path, count):
    run = results(tmp_path / "run")
    expected = tmp_path / "expected.csv"
    call_tool("compare.py", run, "--write-expected", expected, check_rc=0)
    lines = expected.read_text().splitlines()
    cells = lines[1].split(",")
    cells[3] = count
    expected.write_text("\n".join([lines[0], ",".join(cells)] + lines[2:]) + "\n")
    result = call_tool("compare.py", run, "--expected", expected)
    assert result.returncode == 2 and "not a count" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("row", ["mlp,120000000000000000000000000000", "mlp,٣", "m" * 5000 + ",8"])
def test_a_batch_size_no_record_could_hold_is_refused(tmp_path, row):
    sizes = tmp_path / "sizes.csv"
    sizes.write_text(row + "\n")
    result = call_runner("--suite-name=dummy", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
                         f"--batch-size-file={sizes}", "--dry-run", f"--output-dirname={tmp_path / 'out'}")
    assert result.returncode == 2 and "expected a `name,batch` row" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("change, words", [({"atol": "inf"}, "atol"), ({"steps": 10 ** 12}, "steps"),
                                           ({"rtol": -1}, "rtol")])
def test_a_golden_manifest_with_unusable_numbers_is_refused(change, words):
    from benchmarks.child.accuracy import golden_store

    manifest = {"atol": 1e-4, "rtol": 1e-3, "steps": 1, **change}
    if manifest["atol"] == "inf":
        manifest["atol"] = float("inf")
    assert words in golden_store.values_problem(manifest)
    assert golden_store.values_problem({"atol": 1e-4, "rtol": 1e-3, "steps": 1}) is None
