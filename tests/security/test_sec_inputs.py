"""Issue #52: "never overwrite an input", a FIFO or a device as a results file, one meaning for "nothing usable",
and a resumed results file whose record is broken.

- Every tool refuses an output path that resolves (symlinks included) to one of its inputs: one line, exit 2, the
  input unchanged (cli_support.refuse_overwrite). history's --db that is another program's SQLite file is refused
  and left byte for byte unchanged.
- A FIFO or a device given as a results file is refused unread (exit 2), by every tool and by the runner: a
  regression must fail here, not hang, so the in-process calls run in a thread with a deadline and a writer that
  unblocks the FIFO, and the process ones have a timeout.
- A file with lines but not one usable record: exit 2 and "<path>: no usable record (first problem: ...)" in the
  analyzer, aggregate, compare and history ingest; an empty file: exit 1 (nothing to report) in each.
"""

import hashlib
import json
import os
import sqlite3
import threading

import pytest

from helpers import ROOT, call_tool, run_runner, run_tool

FIXTURE = ROOT / "tests" / "fixtures" / "analyzer" / "ours.jsonl"


def results_file(path, *records) -> str:
    lines = FIXTURE.read_text().splitlines()[:2]
    path.write_text("".join(json.dumps(r) + "\n" for r in records) if records else "\n".join(lines) + "\n")
    return str(path)


def digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def refused(result, *words) -> str:
    """The one line of a refusal, exit 2; `words` in it."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    for word in words:
        assert word in line, line
    return line


# ---------------------------------------------------------------- never overwrite an input


def test_aggregate_refuses_to_write_its_report_over_its_input(tmp_path):
    results = results_file(tmp_path / "r.jsonl")
    before = digest(results)
    refused(call_tool("aggregate.py", results, "-o", results), "would overwrite one of its inputs")
    os.symlink(results, tmp_path / "link.csv")  # a symlink to the input is the input
    refused(call_tool("aggregate.py", tmp_path, "-o", tmp_path / "link.csv"), "would overwrite one of its inputs")
    assert digest(results) == before


def test_compare_refuses_to_write_its_report_or_plot_over_an_input(tmp_path):
    control, treatment = results_file(tmp_path / "a.jsonl"), results_file(tmp_path / "b.jsonl")
    before = digest(control), digest(treatment)
    refused(call_tool("compare.py", control, treatment, "-o", control), "-o", "would overwrite")
    os.symlink(treatment, tmp_path / "plot.png")  # a plot's name, the input's file
    refused(call_tool("compare.py", control, treatment, "--plot", tmp_path / "plot.png"), "--plot", "would overwrite")
    refused(call_tool("compare.py", control, "--write-expected", control), "--write-expected", "would overwrite")
    assert (digest(control), digest(treatment)) == before


def test_history_refuses_to_write_over_its_database_or_its_results(tmp_path):
    results = results_file(tmp_path / "r.jsonl")
    db = tmp_path / "h.sqlite"
    call_tool("history.py", "ingest", results, "--db", db, check_rc=0)
    before = digest(db), digest(results)
    for command in ("show", "detect"):
        refused(call_tool("history.py", command, "--db", db, "-o", db), "would overwrite")
    refused(call_tool("history.py", "ingest", results, "--db", results), "--db", "would overwrite")
    assert (digest(db), digest(results)) == before


def test_the_analyzer_refuses_an_oss_benchmark_report_or_a_database_over_its_input(tmp_path):
    results = results_file(tmp_path / "r.jsonl")
    before = digest(results)
    refused(call_tool("result_analyzer.py", results, "--format=oss-benchmark", "-o", results), "would overwrite")
    refused(call_tool("result_analyzer.py", results, "-o", tmp_path / "x.csv", f"--database={results}"),
            "--database", "would overwrite")
    assert digest(results) == before


@pytest.fixture
def foreign_db(tmp_path):
    """Another program's SQLite database: one table of its own, with a row."""
    path = tmp_path / "notes.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
        connection.execute("INSERT INTO notes VALUES ('keep me')")
    connection.close()
    return path


def test_history_refuses_another_programs_database_and_leaves_it_unchanged(tmp_path, foreign_db):
    results = results_file(tmp_path / "r.jsonl")
    before = digest(foreign_db)
    for command in (["ingest", results], ["show"], ["detect"], ["site", "-o", tmp_path / "site"]):
        refused(call_tool("history.py", *command, "--db", foreign_db), "not a history database", "notes")
        assert digest(foreign_db) == before, command
    assert not (tmp_path / "site").exists()


def test_history_makes_an_empty_file_a_database_by_ingest_only(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    for command in (["show"], ["detect"], ["site", "-o", tmp_path / "site"]):
        refused(call_tool("history.py", *command, "--db", empty), "holds no history yet", "history ingest")
        assert empty.stat().st_size == 0
    call_tool("history.py", "ingest", results_file(tmp_path / "r.jsonl"), "--db", empty, check_rc=0)
    call_tool("history.py", "show", "--db", empty, check_rc=0)


# ---------------------------------------------------------------- a FIFO or a device


def unblock(fifo) -> None:
    """A writer opens the FIFO and closes it: a reader blocked on it sees its end."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader waits
        pass


def call_with_deadline(fifo, *args, seconds: float = 30):
    """call_tool in a thread: a tool that blocks on the FIFO fails the test instead of hanging it."""
    box = {}
    thread = threading.Thread(target=lambda: box.update(result=call_tool(*args)), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for _ in range(50):
            unblock(fifo)
            thread.join(0.2)
            if not thread.is_alive():
                break
        pytest.fail(f"{args[0]} blocked reading the FIFO {fifo} for {seconds} s")
    return box["result"]


@pytest.mark.parametrize("tool, extra", [
    ("aggregate.py", ()), ("compare.py", ("{good}",)), ("result_analyzer.py", ("-o", "{out}")),
    ("history.py", ()),
])
def test_a_fifo_as_a_results_file_is_refused_not_read(tmp_path, tool, extra):
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    good = results_file(tmp_path / "good.jsonl")
    args = [a.format(good=good, out=tmp_path / "r.csv") for a in extra]
    if tool == "history.py":
        args = ["ingest", fifo, "--db", tmp_path / "h.sqlite"]
    else:
        args = [fifo, *args]
    refused(call_with_deadline(fifo, tool, *args), str(fifo), "is a FIFO, not a results file")


def test_a_fifo_as_the_analyzers_database_or_compares_expected_file_is_refused(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    good = results_file(tmp_path / "good.jsonl")
    refused(call_with_deadline(fifo, "result_analyzer.py", good, "-o", tmp_path / "r.csv", f"--database={fifo}"),
            "--database", "is a FIFO, not a metric database")
    refused(call_with_deadline(fifo, "compare.py", good, "--expected", fifo),
            "--expected", "is a FIFO, not an expected-results file")
    assert fifo.exists() and not os.path.isfile(fifo)  # the FIFO is the user's: not replaced by a report


def test_a_fifo_found_in_a_directory_is_left_out(tmp_path):
    """A directory expands to its regular *.jsonl files only."""
    os.mkfifo(tmp_path / "pipe.jsonl")
    results_file(tmp_path / "good.jsonl")
    result = call_with_deadline(tmp_path / "pipe.jsonl", "aggregate.py", tmp_path, "--format=table")
    assert result.returncode == 0, result.stderr


@pytest.mark.process  # a regression reads /dev/zero for ever: only a process of its own can be stopped
@pytest.mark.parametrize("tool", ["aggregate.py", "result_analyzer.py", "compare.py"])
def test_a_device_as_a_results_file_is_refused(tool):
    args = ["/dev/zero", "/dev/zero"] if tool == "compare.py" else ["/dev/zero"]
    refused(run_tool(tool, *args, "-o", os.devnull if tool != "result_analyzer.py" else "/tmp/never.csv", timeout=60),
            "/dev/zero is a character device, not a results file")


@pytest.mark.integration  # a sweep's parent (its probe child)
def test_the_sweep_refuses_a_fifo_as_its_results_file_before_blocking(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "results.jsonl")
    result = run_runner("--suite-name=dummy", "--filter=^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                        "--test=eval", f"--output-dirname={out}", timeout=120)
    refused(result, "results.jsonl is a FIFO, not a results file")


@pytest.mark.integration  # the parent's probe child
@pytest.mark.parametrize("basename", ["batch-size-search.jsonl", "batch_sizes.csv"])
def test_find_batch_sizes_refuses_a_fifo_as_its_files(tmp_path, basename):
    os.mkfifo(tmp_path / basename)
    result = run_runner("--suite-name=files", f"--model-file={ROOT / 'tests' / 'fixtures' / 'batch_limit' / 'capped.py'}",
                        "--find-batch-sizes", "--accelerator=cpu", f"--output-dirname={tmp_path}", timeout=120)
    refused(result, f"{basename} is a FIFO, not a")


# ---------------------------------------------------------------- a broken record in a resumed file


@pytest.mark.integration  # two tiny sweeps (dummy suite, eager)
def test_resume_skips_a_broken_record_and_runs_its_config_again(tmp_path):
    """On main: the config counted as done, then the end-of-sweep table ends the sweep with exit 3."""
    out = tmp_path / "out"
    flags = ["--suite-name=dummy", "--filter=^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
             "--repeat=2", f"--output-dirname={out}"]
    run_runner(*flags, check_rc=0)
    path = out / "results.jsonl"
    record = json.loads(path.read_text())
    record["metrics"] = [1, 2]
    path.write_text(json.dumps(record) + "\n")
    result = run_runner(*flags, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "unusable record: metrics is a list, not an object" in result.stderr
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["metrics"] == [1, 2]  # kept as it was, and run again
    assert json.loads(lines[1])["status"] == "ok"


# ---------------------------------------------------------------- one meaning for "nothing usable"


TOOLS = {"result_analyzer.py": lambda path, tmp: [path, "-o", tmp / "r.csv"],
         "aggregate.py": lambda path, tmp: [path],
         "compare.py": lambda path, tmp: [path, path],
         "history.py": lambda path, tmp: ["ingest", path, "--db", tmp / "h.sqlite"]}


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize("lines, first", [
    ('{"a": 1}\n{"b": 2}\n', "line 1: unusable record: no model or experiment"),
    ("hello\n[1, 2]\n42\n", "line 1: invalid JSON"),
    ('{"model": {"model_name": "m"}, "experiment": {}, "metrics": [1, 2]}\n',
     "line 1: unusable record: metrics is a list, not an object"),
])
def test_a_file_without_a_usable_record_is_exit_2_with_one_line_in_every_tool(tmp_path, tool, lines, first):
    path = tmp_path / "junk.jsonl"
    path.write_text(lines)
    line = refused(call_tool(tool, *TOOLS[tool](path, tmp_path)), f"{path}: no usable record (first problem: {first}")
    assert line.startswith(f"{tool}: error: ")


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_an_empty_file_is_nothing_to_report_exit_1_in_every_tool(tmp_path, tool):
    path = tmp_path / "empty.jsonl"
    path.touch()
    result = call_tool(tool, *TOOLS[tool](path, tmp_path))
    assert result.returncode == 1, result.stderr
    assert "no records" in result.stderr.strip().splitlines()[-1], result.stderr
