"""The runner's paths, names and printed command lines hold against hostile model names and planted links
(issue #52, findings 3, 4, 8, 9 and 10's forged log line; docs/architecture.md, "Paths stay under the output
directory"; docs/runner.md, "Paste-safe command lines"):

- every command line we print or log is shlex-quoted: pasted into bash, a model file named `$(touch PWNED).py` is a
  name, never a command, and shlex.split gives back the argv;
- a rerun command selects exactly its model (case and all) and says where the suite finds it (--search-dir);
- a lock or log that is a symbolic link is not followed: the sweep refuses with one line, the link's target is
  neither changed nor created;
- two model names never share a path (`ä` and `ö`, `a b` and `a_b`);
- a name with a newline can't forge a log line or break the end-of-sweep table.
"""

import json
import os
import re
import shlex
import subprocess

import pytest

from helpers import call_runner, read_jsonl, run_runner

from benchmarks.config import rerun_command
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.run_options import build_parser
from benchmarks.history.site import config_page
from benchmarks.history.site.grid import Config as HistoryConfig
from benchmarks.plumbing import disk_writes
from benchmarks.plumbing.cli_support import command_line
from benchmarks.plumbing.safe_paths import MAX_NAME, log_path, safe_name
from benchmarks.runner import progress
from benchmarks.suites import all_suites

MODEL = '''
import torch


def create_model(batch_size):
    return torch.nn.Linear(4, 2), (torch.randn(batch_size, 4),)
'''
PWNED = "$(touch PWNED)"
NEWLINE_NAME = "nl\nFORGED: ok"
EAGER = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=1", "--warmup=1"]
HOSTILE_WORDS = [PWNED, "`touch PWNED`", "a'b", 'a"b', "a b", "$HOME", "x;touch PWNED", "ä", "\\", "--x=$(id)", "",
                 "tab\there", "*", "!x"]


def model_dir(tmp_path, names, folder_name: str = "models") -> str:
    folder = tmp_path / folder_name
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / f"{name}.py").write_text(MODEL)
    return str(folder)


def pasted_words(line: str, cwd) -> list:
    """The words bash makes of `line` pasted after printf (so nothing runs but its expansions)."""
    done = subprocess.run(["bash", "-c", "printf '%s\\0' " + line], cwd=cwd, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().split("\0")[:-1]


# ---------------------------------------------------------------- 3: command lines are safe to paste

@pytest.mark.parametrize("word", HOSTILE_WORDS)
def test_command_line_splits_back_and_pastes_as_the_same_words(tmp_path, word):
    argv = ["/usr/bin/python3", "experiment_runner.py", f"--model-config={json.dumps({'model_name': word})}", word]
    line = command_line(argv)
    assert shlex.split(line) == argv
    assert pasted_words(line, tmp_path) == argv
    assert not (tmp_path / "PWNED").exists()


def test_every_rerun_command_splits_back_to_a_config_of_the_same_model(tmp_path):
    options = build_parser(all_suites()).options([f"--output-dirname={tmp_path}", "--suite-name=files",
                                                  f"--search-dir={tmp_path}"])
    model = {"suite_name": "files", "model_name": PWNED, "path": f"{tmp_path}/{PWNED}.py"}
    for experiment in (ExperimentConfig("cpu", None, None, "eval"),
                       ExperimentConfig("cpu", None, "inductor", "eval", compile_cache="warm-start")):
        line = rerun_command.rerun_text(options, model, experiment)
        argv = shlex.split(line)
        assert pasted_words(line, tmp_path) == argv and not (tmp_path / "PWNED").exists()
        [chosen] = [a.split("=", 1)[1] for a in argv if a.startswith(("--model-config=", "--filter="))]
        assert (json.loads(chosen)["model_name"] if chosen.startswith("{") else
                re.fullmatch(chosen, PWNED).group()) == PWNED
    history = history_config(PWNED)
    for line in (config_page.rerun_sweep(history), config_page.bisect_command(history, "c1", "$(touch PWNED)")):
        assert pasted_words(line, tmp_path) == shlex.split(line) and not (tmp_path / "PWNED").exists()


@pytest.mark.integration
def test_a_model_file_named_to_run_a_command_has_a_log_whose_first_line_pastes_harmlessly(tmp_path):
    search = model_dir(tmp_path, [PWNED], folder_name=f"models {PWNED}")  # the resume hint names the folder
    out = tmp_path / "out"
    done = run_runner("--suite-name=files", f"--search-dir={search}", *EAGER, f"--output-dirname={out}",
                      check_rc=0, timeout=300)
    [record] = read_jsonl(out / "results.jsonl")
    assert record["status"] == "ok" and record["model"]["model_name"] == PWNED
    log = out / record_log(record, out)
    first = log.read_text().splitlines()[0]
    assert first.startswith("$ ")
    argv = shlex.split(first[2:])
    [model] = [json.loads(a.split("=", 1)[1]) for a in argv if a.startswith("--model-config=")]
    assert model["model_name"] == PWNED and model["path"] == os.path.join(search, f"{PWNED}.py")
    paste = tmp_path / "paste"
    paste.mkdir()
    assert pasted_words(first[2:], paste) == argv
    assert not (paste / "PWNED").exists() and not (tmp_path / "PWNED").exists()
    [resume] = [line.split(":", 1)[1].strip() for line in done.stdout.splitlines() if line.startswith("resume:")]
    for line in (record["rerun"], resume):  # the record's own rerun and the resume hint, pasted the same way
        words = shlex.split(line)
        assert pasted_words(line, paste) == words and not (paste / "PWNED").exists()
        assert f"--search-dir={search}" in words or any(search in word for word in words)


def record_log(record, out) -> str:
    experiment = ExperimentConfig.from_dict(dict(record["experiment"], batch_size=record.get("requested_batch_size")))
    return os.path.relpath(log_path(str(out), record["model"], experiment), out)


# ---------------------------------------------------------------- 9: a rerun selects exactly its model

def history_config(name: str, suite: str = "files") -> HistoryConfig:
    """history's config of one model as the site builds it from its database (no path: records' keys keep none)."""
    experiment = {"accelerator": "cpu", "xla": None, "dynamo": "inductor", "test": "eval", "batch_size": None}
    return HistoryConfig(id=1, column=0, key="", labels={"suite": suite, "model": name, "batch_size": None},
                         base_backend="inductor", baseline_key="", experiment=experiment,
                         model={"suite_name": suite, "model_name": name})


def dry_run_count(*flags) -> int:
    done = call_runner(*flags, "--dry-run", check_rc=0)
    return int(re.search(r"^# (\d+) config\(s\) to run", done.stdout, re.M).group(1))


def test_the_warm_start_rerun_of_mlp_runs_mlp_alone_not_MLP_beside_it(tmp_path):
    search = model_dir(tmp_path, ["MLP", "mlp"])
    options = build_parser(all_suites()).options([f"--output-dirname={tmp_path / 'out'}", "--suite-name=files",
                                                  f"--search-dir={search}"])
    model = {"suite_name": "files", "model_name": "mlp", "path": os.path.join(search, "mlp.py")}
    experiment = ExperimentConfig("cpu", None, "inductor", "eval", compile_cache="warm-start")
    argv = shlex.split(rerun_command.rerun_text(options, model, experiment))
    assert dry_run_count(*argv[2:]) == 1


def test_historys_run_it_again_selects_one_model_and_names_the_search_dir(tmp_path):
    search = model_dir(tmp_path, ["MLP", "mlp"])
    argv = shlex.split(config_page.rerun_sweep(history_config("mlp")))
    assert argv[0] == "experiment_runner.py"
    assert f"--search-dir={rerun_command.SEARCH_DIR_PLACEHOLDER}" in argv  # the record keeps no path: to fill in
    flags = [f"--search-dir={search}" if a.startswith("--search-dir=") else a for a in argv[1:]]
    flags = [a for a in flags if not a.startswith("--output-dirname=")] + [f"--output-dirname={tmp_path / 'o'}"]
    assert dry_run_count(*flags) == 1


def test_a_rerun_knows_where_the_files_and_scripts_suites_found_their_model(tmp_path):
    model = {"suite_name": "files", "model_name": "more/tiny_mlp", "path": "/x/models/more/tiny_mlp.py"}
    assert rerun_command.location_flags(model) == ["--search-dir=/x/models"]
    script = {"suite_name": "scripts", "model_name": "two_models.py::head", "path": "/x/scripts/two_models.py"}
    assert rerun_command.location_flags(script) == ["--search-dir=/x/scripts"]
    assert rerun_command.location_flags({"suite_name": "dummy", "model_name": "mlp"}) == []


# ---------------------------------------------------------------- 4: no lock or log is followed through a link

@pytest.mark.integration
@pytest.mark.parametrize("target", ["outside", "results"])
def test_a_lock_that_is_a_link_is_refused_and_its_target_left_as_it_was(tmp_path, target):
    search = model_dir(tmp_path, ["mlp"])
    out = tmp_path / "out"
    out.mkdir()
    if target == "outside":
        victim = tmp_path / "victim.txt"
        victim.write_text("my notes\n")
    else:  # a link to the results file itself: locking it would empty the user's results
        victim = out / "results.jsonl"
        victim.write_text('{"keep": 1}\n')
    os.symlink(victim, out / "results.jsonl.lock")
    done = run_runner("--suite-name=files", f"--search-dir={search}", *EAGER, f"--output-dirname={out}",
                      check_rc=2, timeout=300)
    [line] = done.stderr.strip().splitlines()
    assert "results.jsonl.lock: a symbolic link" in line and "Traceback" not in done.stderr
    assert victim.read_text() in ("my notes\n", '{"keep": 1}\n')
    assert os.path.islink(out / "results.jsonl.lock")  # the user's link is theirs: left too


@pytest.mark.integration
def test_a_dangling_fork_server_log_link_does_not_create_its_target(tmp_path):
    search = model_dir(tmp_path, ["mlp"])
    out = tmp_path / "out"
    (out / "logs").mkdir(parents=True)
    target = tmp_path / "elsewhere" / "created.txt"
    (tmp_path / "elsewhere").mkdir()
    os.symlink(target, out / "logs" / "fork-server-torch.log")
    done = run_runner("--launch=fork", "--suite-name=files", f"--search-dir={search}", *EAGER,
                      f"--output-dirname={out}", check_rc=2, timeout=300)
    assert done.stderr.strip().splitlines()[-1].endswith(
        "logs/fork-server-torch.log: a symbolic link; the runner writes through no link (docs/runner.md, "
        '"Paths stay under the output directory")')
    assert not target.exists() and "Traceback" not in done.stderr


def test_an_append_to_a_link_writes_nothing_where_it_points(tmp_path):
    (tmp_path / "kept.txt").write_text("kept\n")
    os.symlink(tmp_path / "kept.txt", tmp_path / "a.log")
    os.symlink(tmp_path / "nowhere.txt", tmp_path / "b.log")
    for name in ("a.log", "b.log"):
        with pytest.raises(disk_writes.WriteFailed) as caught:
            disk_writes.append_bytes(str(tmp_path / name), b"x\n")
        assert "a symbolic link" in str(caught.value) and name in str(caught.value)
    assert (tmp_path / "kept.txt").read_text() == "kept\n" and not (tmp_path / "nowhere.txt").exists()


# ---------------------------------------------------------------- 8: names map to paths one to one

TRICKY = ["ä", "ö", "_", "a b", "a_b", "a/b", "a\\b", "..", "__", ".", "...", "a..b", "a__b", ".hidden", "_hidden",
          "", "x" * 200, "x" * 199 + "y", "MLP", "mlp", "a:b", "a?b", "a\nb", "a\tb", "日本", "中文", "é", "e\u0301",
          "resnet18", "résnet18", "a_b-00000000"]
# Not in it: a name made to look like another's hashed form (`a_b-7dbde935` is what `a b` becomes). A safe name is
# kept as it is (so no existing path moves); telling such a pair apart would take renaming every safe name that ends
# with 8 hex digits, config slugs included.


def test_distinct_names_give_distinct_safe_names_and_safe_ones_stay_as_they_are():
    names = [safe_name(text) for text in TRICKY]
    assert len(set(names)) == len(TRICKY)
    for text, name in zip(TRICKY, names):
        assert re.fullmatch(r"[A-Za-z0-9._=-]+", name) and ".." not in name and not name.startswith(".")
        assert len(name) <= MAX_NAME
        if re.fullmatch(r"[A-Za-z0-9._=-]{1,120}", text) and ".." not in text and not text.startswith("."):
            assert name == text  # existing output paths (and tests/fixtures/resume) don't move


@pytest.mark.integration
def test_two_models_whose_names_differ_only_in_replaced_characters_keep_their_own_logs(tmp_path):
    search = model_dir(tmp_path, ["ä", "ö", NEWLINE_NAME])
    out = tmp_path / "out"
    done = run_runner("--suite-name=files", f"--search-dir={search}", *EAGER, f"--output-dirname={out}",
                      check_rc=0, timeout=300)
    records = read_jsonl(out / "results.jsonl")
    assert sorted(r["model"]["model_name"] for r in records) == sorted(["ä", "ö", NEWLINE_NAME])
    logs = {r["model"]["model_name"]: out / record_log(r, out) for r in records}
    assert len(set(logs.values())) == 3
    for name, log in logs.items():  # each log is its own model's: its command line names it
        argv = shlex.split(log.read_text().splitlines()[0][2:])
        [model] = [json.loads(a.split("=", 1)[1]) for a in argv if a.startswith("--model-config=")]
        assert model["model_name"] == name
    # 10: the newline in a name is shown, never a line of its own, in the log lines and the end-of-sweep table
    shown = repr(NEWLINE_NAME)
    for stream in (done.stdout, done.stderr):
        assert not [line for line in stream.splitlines() if line.startswith("FORGED")]
    assert f"INFO [" in done.stderr and f"{shown} cpu-eager-eval: ok" in done.stderr
    table = [line for line in done.stdout.splitlines() if line.startswith(shown)]
    assert len(table) == 1 and "cpu" in table[0]


def test_the_end_of_sweep_summary_shows_a_records_newlines_instead_of_starting_lines(tmp_path):
    forged = "x\n03:00:00 INFO [9/9] forged cpu-eager-eval: ok"
    failing = {"model": {"suite_name": "files", "model_name": forged},
               "experiment": ExperimentConfig("cpu", None, None, "eval").to_dict(), "status": "error",
               "metrics": {}, "rerun": "python experiment_runner.py\n03:00:00 INFO forged rerun",
               "accuracy": "fail_to_run"}
    options = build_parser(all_suites()).options([f"--output-dirname={tmp_path}"])
    text = progress.end_of_sweep(str(tmp_path / "results.jsonl"), {"a": failing}, options,
                                 {"ok": 0, "failed": 1, "skipped": 0}, 0, 1.0, "resume")
    assert not [line for line in text.splitlines() if line.startswith("03:00:00")]
    assert repr(forged) in text and "forged rerun" not in text  # a rerun not the runner's is not shown at all
