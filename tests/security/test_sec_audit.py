"""What an audit of issue #52's kinds found after its first slices (tests with real files, links and FIFOs):

1. a record's stored `rerun` is shown only when it is the runner's command for that record
   (rerun_command.trusted_rerun): compare's "rerun a changed config alone", aggregate's page and the runner's
   end-of-sweep table never print `...; touch PWNED #` for a reader to paste;
2. the scripts suite's discovery log is not written through a link (its target, outside, is not touched), its
   folder may not be a link out of the output directory, and a FIFO as its cache entry is not waited on;
3. a sweep's scratch root in the temp directory (`ptbench-cores-<uid>`) is used and collected only when it is a real
   directory of this user that no one else may write: a link planted there does not lead collect_stale to delete
   folders outside; a core's lock file is not opened through a link;
4. `history site`'s state file nested 100,000 deep is a damaged state (a warning, the site rebuilt), not exit 3;
   a FIFO there is refused with one line, not waited on;
5. a terminal escape in a record (a model name, a host, a commit, an error) reaches no terminal: compare's table and
   Markdown, `history show` and `history detect` show it as \\x1b;
6. `history bisect`: a state.json nested too deep, or whose verdicts are not what it writes, is one line and exit 2
   (was RecursionError / TypeError, exit 3); setup.log and runner.log are not written through links;
7. a golden entry's manifest can't lead the child to read a file outside the entry (an absolute path, `..`), nor
   block it on a FIFO; a tensor file whose structure is nested too deep is a damaged file (GoldenRefused), not a
   RecursionError;
8. the analyzer's `{database}.lock` is not opened through a link (a dangling link's target was created).

Not changed: CSV cells that start with `=`, `+`, `-` or `@` (formula injection when a CSV is opened in a
spreadsheet) are written as they are, since upstream tools read those values.
"""

import html
import json
import os
import shlex
import subprocess
import threading

import pytest

from helpers import call_tool, nightly_history, nightly_record

from benchmarks.config import rerun_command
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.run_options import build_parser
from benchmarks.runner import progress
from benchmarks.suites import all_suites

PWNED_RERUN = "experiment_runner.py --suite-name=dummy; touch {marker} #"


def write_jsonl(path, found: list) -> str:
    with open(path, "w") as handle:
        for item in found:
            handle.write(json.dumps(item) + "\n")
    return str(path)


def record(model="m0", status="ok", rerun=None, samples=(0.01,) * 10, dynamo=None) -> dict:
    exp = {"accelerator": "cpu", "accelerator_model": "Some CPU", "xla": None, "xla_flags": None, "dynamo": dynamo,
           "torch_xla2": None, "test": "eval", "batch_size": 8, "enable_functionalization": False}
    out = {"model": {"suite_name": "dummy", "model_name": model}, "experiment": exp, "repeat": len(samples),
           "iterations_per_run": 1, "timestamp": 1000.0, "verification_code": "VERIFIER_SKIPPED",
           "metrics": {"warmup_time": [0.5], "total_time": list(samples), "per_iter_time": list(samples)},
           "schema_version": 1, "status": status, "error": None, "warmup": 1, "round": 0,
           "environment": {"hostname": "h"}}
    if status != "ok":
        out["error"] = {"type": "RuntimeError", "message": "boom", "phase": "run", "log": None}
        out["metrics"] = {"error": "RuntimeError: boom"}
    if rerun is not None:
        out["rerun"] = rerun
    return out


def genuine_rerun(tmp_path, model_name="m0") -> str:
    options = build_parser(all_suites()).options([f"--output-dirname={tmp_path}", "--repeat=3"])
    return rerun_command.rerun_text(options, {"suite_name": "dummy", "model_name": model_name},
                                    ExperimentConfig("cpu", None, None, "eval"))


def pasted_runs_nothing(line: str, cwd, marker) -> None:
    """`line` pasted into bash after printf (so only its expansions and a second command could run)."""
    subprocess.run(["bash", "-c", "printf '%s\\0' " + line], cwd=cwd, capture_output=True, timeout=30)
    assert not os.path.exists(marker), line


# ------------------------------------------------------------------ 1: a stored rerun is shown only when trusted
def hostile_reruns(marker) -> list:
    return [PWNED_RERUN.format(marker=marker),
            f"python experiment_runner.py --model-config='{{\"model_name\": \"m0\", \"suite_name\": \"dummy\"}}' "
            f"&& touch {marker}",
            f"touch {marker}",
            f"python -c 'open(\"{marker}\", \"w\")' --model-config=x",
            f"/bin/sh -c 'touch {marker}' experiment_runner.py",
            "python experiment_runner.py --suite-name=dummy\n03:00:00 forged",
            "python experiment_runner.py --filter='^(?-i:other)$'"]  # quoted, but another model


def test_trusted_rerun_keeps_the_runners_own_command_and_refuses_any_other(tmp_path):
    genuine = genuine_rerun(tmp_path)
    assert rerun_command.trusted_rerun(record(rerun=genuine)) == genuine
    for hostile in hostile_reruns(tmp_path / "PWNED"):
        assert rerun_command.trusted_rerun(record(rerun=hostile)) is None, hostile
    assert rerun_command.trusted_rerun(record(model="other", rerun=genuine)) is None  # another record's command
    assert rerun_command.trusted_rerun({"rerun": genuine, "model": ["m0"]}) is None


def test_compare_prints_no_pasteable_command_from_a_record(tmp_path):
    marker = tmp_path / "PWNED"
    ctl = write_jsonl(tmp_path / "ctl.jsonl", [record()])
    trt = write_jsonl(tmp_path / "trt.jsonl", [record(status="error", rerun=PWNED_RERUN.format(marker=marker))])
    done = call_tool("compare.py", ctl, trt)
    assert "touch" not in done.stdout and "rerun a changed config alone" not in done.stdout, done.stdout
    genuine = genuine_rerun(tmp_path)
    failing = record(status="error", rerun=genuine)
    trt = write_jsonl(tmp_path / "trt2.jsonl", [failing])
    done = call_tool("compare.py", ctl, trt)
    short = rerun_command.short_rerun(failing)  # the runner's own command, as a sweep of that one config
    assert short and f"  {short}" in done.stdout.splitlines(), done.stdout
    for line in done.stdout.splitlines():
        pasted_runs_nothing(line, tmp_path, marker)


def test_aggregates_page_shows_no_stored_command_but_the_runners(tmp_path):
    marker = tmp_path / "PWNED"
    results = tmp_path / "results"
    results.mkdir()
    genuine = genuine_rerun(tmp_path, "m1")
    genuine = genuine.replace("\"dynamo\": null", "\"dynamo\": \"aot_eager\"")
    write_jsonl(results / "results.jsonl", [
        record(), record(model="m1"), record(model="m2"), record(model="m2", dynamo="aot_eager"),
        record(status="error", dynamo="aot_eager", rerun=PWNED_RERUN.format(marker=marker)),
        record(model="m1", status="error", dynamo="aot_eager", rerun=genuine)])
    page = tmp_path / "page.html"
    call_tool("aggregate.py", results / "results.jsonl", "--accelerator=cpu", f"--output={page}", check_rc=0)
    text = page.read_text()
    assert "touch" not in text
    assert html.escape(genuine, quote=False) in text or html.escape(genuine) in text


def test_the_end_of_sweep_table_of_a_resumed_file_shows_no_stored_command(tmp_path):
    marker = tmp_path / "PWNED"
    failing = dict(record(status="error", rerun=PWNED_RERUN.format(marker=marker)), accuracy="fail_to_run")
    options = build_parser(all_suites()).options([f"--output-dirname={tmp_path}"])
    text = progress.end_of_sweep(str(tmp_path / "results.jsonl"), {"a": failing}, options,
                                 {"ok": 0, "failed": 1, "skipped": 0}, 0, 1.0, "resume")
    assert "touch" not in text, text
    genuine = genuine_rerun(tmp_path)
    failing["rerun"] = genuine
    text = progress.end_of_sweep(str(tmp_path / "results.jsonl"), {"a": failing}, options,
                                 {"ok": 0, "failed": 1, "skipped": 0}, 0, 1.0, "resume")
    assert f"  {genuine}" in text.splitlines()
    assert shlex.split(genuine)[-1].startswith("--output-dirname=")


def finishes(call, seconds: float = 10.0, fifo=None):
    """call() in a thread: (done, its result or exception). A call still blocked past `seconds` (reading a FIFO) is
    released by opening `fifo` for writing, so the test ends either way."""
    out = {}

    def target():
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: B902 (the test inspects it)
            out["value"] = exc
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    done = not thread.is_alive()
    if not done and fifo is not None:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(seconds)
    return done, out.get("value")


# ------------------------------------------------------------------ 2: the scripts suite's discovery files
SCRIPT = "print('no model here')\n"


@pytest.mark.integration
def test_the_discovery_log_is_not_written_through_a_link(tmp_path):
    from benchmarks.plumbing.safe_paths import LinkRefused
    from benchmarks.suites import script_discovery

    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's\n")
    cache = script_discovery.cache_file(str(out), str(script), None)
    os.makedirs(os.path.dirname(cache))
    os.symlink(victim, cache[:-len(".json")] + ".log")
    with pytest.raises(LinkRefused):
        script_discovery.discover(str(script), None, str(out), 60)
    assert victim.read_text() == "the user's\n"


def test_the_discovery_folder_may_not_lead_out_of_the_output_directory(tmp_path):
    from benchmarks.plumbing.safe_paths import PathEscapes
    from benchmarks.suites import script_discovery

    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, out / script_discovery.CACHE_DIRNAME)
    with pytest.raises(PathEscapes):
        script_discovery.cache_file(str(out), str(script), None)


def test_a_fifo_as_the_discovery_cache_entry_is_not_waited_on(tmp_path):
    from benchmarks.suites import script_discovery

    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    cache = script_discovery.cache_file(str(tmp_path / "out"), str(script), None)
    os.makedirs(os.path.dirname(cache))
    os.mkfifo(cache)
    done, value = finishes(lambda: script_discovery.load_cached(cache, str(script), None, 60), fifo=cache)
    assert done and value is None  # not cached: discovered again (the atomic write replaces the FIFO)


# ------------------------------------------------------------------ 3: the sweeps' scratch root in the temp folder
def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_link_planted_as_the_sweeps_scratch_root_deletes_nothing_outside(tmp_path, monkeypatch):
    import socket
    import tempfile

    from benchmarks.plumbing import scratch_dirs

    temp, victim = tmp_path / "tmp", tmp_path / "victims"
    temp.mkdir()
    precious = victim / f"{socket.gethostname()}-{dead_pid()}-1"  # named as a dead driver's sweep
    precious.mkdir(parents=True)
    (precious / "thesis.tex").write_text("years of work\n")
    os.symlink(victim, temp / f"ptbench-cores-{os.getuid()}")
    assert scratch_dirs.collect_stale(str(temp)) == []
    assert (precious / "thesis.tex").read_text() == "years of work\n"
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where the runner's tasks would put their locks
    with pytest.raises(scratch_dirs.ScratchRefused, match="symbolic link"):
        scratch_dirs.sweep_dir("cores", "sweep")


def test_a_scratch_root_others_may_write_is_not_used(tmp_path, monkeypatch):
    import tempfile

    from benchmarks.plumbing import scratch_dirs

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = scratch_dirs.sweep_dir("cores", "sweep")
    root = os.path.dirname(made)
    assert os.stat(root).st_mode & 0o777 == 0o700  # ours alone when we make it
    os.chmod(root, 0o777)
    with pytest.raises(scratch_dirs.ScratchRefused, match="written by others"):
        scratch_dirs.sweep_dir("cores", "sweep")


def test_a_cores_lock_is_not_opened_through_a_link(tmp_path, monkeypatch):
    import tempfile

    from benchmarks.plumbing.safe_paths import LinkRefused
    from benchmarks.runner.ray import node_cores

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    directory = node_cores.lock_dir("sweep")
    os.makedirs(directory)
    target = tmp_path / "created-outside"
    os.symlink(target, os.path.join(directory, "core-0.lock"))
    with pytest.raises(LinkRefused):
        node_cores.take("sweep", 1, [0], deadline=0)
    assert not os.path.lexists(target)


# ------------------------------------------------------------------ 4: history site's state file
SITE_STATE = ".history-site.json"


@pytest.fixture(scope="module")
def history_db(tmp_path_factory):
    """A history of three nightly runs of two models."""
    return nightly_history(tmp_path_factory.mktemp("history"))


def test_a_state_file_nested_too_deep_is_a_damaged_state_rebuilt(history_db, tmp_path):
    out = tmp_path / "site"
    out.mkdir()
    (out / SITE_STATE).write_text("[" * 100_000 + "]" * 100_000)
    done = call_tool("history.py", "site", "--db", history_db, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "not valid JSON" in done.stderr and (out / "index.html").is_file()
    assert json.loads((out / SITE_STATE).read_text())["pages"]  # a state of its own again


def test_a_fifo_as_the_state_file_is_refused_not_waited_on(history_db, tmp_path):
    out = tmp_path / "site"
    out.mkdir()
    os.mkfifo(out / SITE_STATE)
    done, result = finishes(lambda: call_tool("history.py", "site", "--db", history_db, "-o", out),
                            fifo=out / SITE_STATE)
    assert done, "history site waited on the FIFO"
    assert result.returncode == 2 and "FIFO" in result.stderr and len(result.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------ 5: terminal escapes from records
ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[31m"


def test_compares_table_shows_a_records_terminal_escapes_as_text(tmp_path):
    name = "m" + ESCAPES
    ctl = write_jsonl(tmp_path / "ctl.jsonl", [record(name)])
    failing = record(name, status="error")
    failing["error"]["message"] = "boom" + ESCAPES
    trt = write_jsonl(tmp_path / "trt.jsonl", [failing])
    for fmt in ("table", "md"):
        done = call_tool("compare.py", ctl, trt, f"--format={fmt}")
        assert done.returncode == 1, done.stderr
        assert "\x1b" not in done.stdout and "\x07" not in done.stdout, (fmt, done.stdout)
        assert "\\x1b" in done.stdout  # shown as text
    assert "\x1b" not in done.stderr


@pytest.fixture(scope="module")
def hostile_history_db(tmp_path_factory):
    """Three runs of a model whose name, host and commit carry terminal escapes."""
    root = tmp_path_factory.mktemp("hostile_history")
    for run in range(3):
        night = root / "nightly" / f"{run:02d}"
        night.mkdir(parents=True)
        found = nightly_record("mlp" + ESCAPES, run)
        found["environment"].update(hostname="ci" + ESCAPES, git_commit=f"c{run}" + ESCAPES)
        write_jsonl(night / "results.jsonl", [found])
    path = root / "history.sqlite"
    call_tool("history.py", "ingest", root / "nightly", "--db", path, check_rc=0)
    return path


@pytest.mark.parametrize("command", ["show", "detect"])
def test_history_shows_a_records_terminal_escapes_as_text(hostile_history_db, command):
    done = call_tool("history.py", command, "--db", hostile_history_db)
    assert done.returncode in (0, 1), done.stderr
    assert "mlp" in done.stdout  # the config is listed...
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout  # ...its escapes as text


# ------------------------------------------------------------------ 6: history bisect's state and logs
def git(repo, *args) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def small_repo(tmp_path_factory):
    path = tmp_path_factory.mktemp("user_repo")
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    for index in range(3):
        (path / "notes.txt").write_text(f"commit {index}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"commit {index}")
    return path


def bisect(repo, out, *setup):
    commits = git(repo, "rev-list", "--reverse", "HEAD").split()
    done = call_tool("history.py", "bisect", "--repo", repo, "--good", commits[0], "--bad", commits[-1], *setup,
                     "--output-dirname", out, "--", "--suite-name=dummy", "--filter=^no-such-model$")
    return commits, done


def one_line_exit_2(done) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("damage", ["deep", "verdicts_list", "verdict_text", "not_a_dict"])
def test_a_damaged_bisect_state_is_one_line_and_exit_2(small_repo, tmp_path, damage):
    commits = git(small_repo, "rev-list", "--reverse", "HEAD").split()
    state_path = tmp_path / "out" / "bisect" / "state.json"
    state_path.parent.mkdir(parents=True)
    good = {"repo": str(small_repo), "good": commits[0], "bad": commits[-1],
            "runner_flags": ["--suite-name=dummy", "--filter=^no-such-model$"], "setup": "false", "verdicts": {}}
    text = {"deep": "[" * 100_000 + "]" * 100_000,
            "verdicts_list": json.dumps(dict(good, verdicts=[commits[1]])),
            "verdict_text": json.dumps(dict(good, verdicts={commits[1]: "good"})),
            "not_a_dict": "[1, 2]"}[damage]
    state_path.write_text(text)
    _, done = bisect(small_repo, tmp_path / "out", "--setup", "false")  # --setup false: no end builds, no sweep
    one_line_exit_2(done)
    assert "state.json" in done.stderr and state_path.read_text() == text  # named, and left as it was


def test_bisects_setup_log_is_not_written_through_a_link(small_repo, tmp_path):
    commits = git(small_repo, "rev-list", "--reverse", "HEAD").split()
    runs = tmp_path / "out" / "bisect" / "runs" / commits[0][:12]
    runs.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's\n")
    os.symlink(victim, runs / "setup.log")
    _, done = bisect(small_repo, tmp_path / "out", "--setup", "echo OVERWRITTEN")
    one_line_exit_2(done)
    assert victim.read_text() == "the user's\n"


def test_bisects_runner_log_is_not_written_through_a_link(small_repo, tmp_path):
    commits = git(small_repo, "rev-list", "--reverse", "HEAD").split()
    runs = tmp_path / "out" / "bisect" / "runs" / commits[0][:12]
    runs.mkdir(parents=True)
    target = tmp_path / "created-outside.log"
    os.symlink(target, runs / "runner.log")
    _, done = bisect(small_repo, tmp_path / "out")
    one_line_exit_2(done)
    assert not os.path.lexists(target)


# ------------------------------------------------------------------ 7: golden entries
def golden_entry(tmp_path):
    """An entry folder with a real inputs file, and a valid tensor file outside it."""
    import torch

    from benchmarks.child.accuracy import tensor_tree_file

    entry = tmp_path / "golden" / "entry"
    entry.mkdir(parents=True)
    tensor_tree_file.save(((torch.ones(2),), {}), str(entry / "inputs.safetensors"))
    tensor_tree_file.save(((torch.full((2,), 7.0),), {}), str(tmp_path / "outside.safetensors"))
    return entry


@pytest.mark.parametrize("named", ["absolute", "dotdot"])
def test_a_golden_manifest_cannot_name_a_file_outside_its_entry(tmp_path, named):
    from benchmarks.child.accuracy import golden_store

    entry = golden_entry(tmp_path)
    outside = tmp_path / "outside.safetensors"
    manifest = {"files": {"inputs": str(outside) if named == "absolute" else "../../outside.safetensors"}}
    with pytest.raises(golden_store.GoldenRefused, match="a golden entry's inputs is inputs.safetensors"):
        golden_store.read_tree(str(entry), manifest, "inputs")
    assert golden_store.read_tree(str(entry), {"files": dict(golden_store.FILES)}, "inputs")  # its own: read


@pytest.mark.process
def test_a_fifo_as_a_golden_tensor_file_is_refused_not_waited_on(tmp_path):
    """In a process of its own: safetensors opens a FIFO holding the interpreter's lock, so a thread can't time it."""
    import sys

    from helpers import ROOT

    entry = golden_entry(tmp_path)
    os.remove(entry / "inputs.safetensors")
    os.mkfifo(entry / "inputs.safetensors")
    code = ("import sys; from benchmarks.child.accuracy import golden_store\n"
            "try:\n    golden_store.read_tree(sys.argv[1], {}, 'inputs')\n"
            "except golden_store.GoldenRefused as exc:\n    print('refused:', exc)\n")
    try:
        done = subprocess.run([sys.executable, "-c", code, str(entry)], capture_output=True, text=True, timeout=60,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        pytest.fail("the child waited on the FIFO")
    assert "refused:" in done.stdout and "not a regular file" in done.stdout, done.stdout + done.stderr


def test_a_fifo_as_a_golden_manifest_is_refused_not_waited_on(tmp_path):
    from benchmarks.child.accuracy import golden_store

    entry = golden_entry(tmp_path)
    os.mkfifo(entry / golden_store.MANIFEST)
    done, value = finishes(lambda: golden_store.read_manifest(str(entry), {}, None), fifo=entry / "manifest.json")
    assert done, "the child waited on the FIFO"
    assert isinstance(value, golden_store.GoldenRefused) and "FIFO" in str(value)


@pytest.mark.parametrize("structure", ["deep", "bad_pairs"])
def test_a_tensor_file_nested_too_deep_is_a_damaged_file(tmp_path, structure):
    import torch
    from safetensors.torch import save_file

    from benchmarks.child.accuracy import golden_store, tensor_tree_file

    entry = golden_entry(tmp_path)
    text = {"deep": '{"list": [' * 50_000 + "]}" * 50_000, "bad_pairs": '{"dict": [1, 2]}'}[structure]
    save_file({"t": torch.ones(1)}, str(entry / "inputs.safetensors"), metadata={tensor_tree_file.STRUCTURE_KEY: text})
    with pytest.raises(golden_store.GoldenRefused):
        golden_store.read_tree(str(entry), {}, "inputs")


# ------------------------------------------------------------------ 8: the analyzer's database lock
def test_the_analyzers_database_lock_is_not_opened_through_a_link(tmp_path):
    from helpers import ROOT

    out = tmp_path / "output"
    out.mkdir()
    (out / "ours.jsonl").write_bytes((ROOT / "tests" / "fixtures" / "analyzer" / "ours.jsonl").read_bytes())
    database = tmp_path / "database.csv"
    target = tmp_path / "created-outside"
    os.symlink(target, f"{database}.lock")
    done = call_tool("result_analyzer.py", f"--output-dirname={out}", f"--database={database}", "--timestamp=1.5")
    one_line_exit_2(done)
    assert "symbolic link" in done.stderr and not os.path.lexists(target) and not database.exists()
