"""A new user's first hour (issue 32): a typo is an error naming the close matches, never an empty green sweep;
an empty sweep for a legitimate reason says so and exits 0 (--allow-empty for scripts); --help starts with
examples and fits a screen (--help-all for everything); dates where a time is asked; aggregate's --backends
never swallows an input; result_analyzer's -o never creates directories; the resume hint names the
interpreter that was typed; a Ray instance of the sweep's own counts the CPUs it may use."""

import json
import os
import re
import subprocess

import pytest

from helpers import PYTHON, ROOT, call_runner, call_tool, read_jsonl, run_runner

from benchmarks.plumbing import cli_support

OURS = ROOT / "tests" / "fixtures" / "analyzer" / "ours.jsonl"  # eager, inductor, openxla+... records of cpu
TOOLS = ("result_analyzer.py", "aggregate.py", "compare.py", "history.py")
EAGER = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval"]
TINY = ["--repeat=2", "--warmup=1"]


def assert_one_clear_line(result, *fragments, rc=2) -> str:
    assert result.returncode == rc, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# ---------------------------------------------------------------- strict by default


@pytest.mark.parametrize("args, fragments", [
    (["-k", "mpl"], ["-k 'mpl' matches no model of suite dummy", "close matches: mlp", "--allow-empty"]),
    (["--suite-name=torchvision", "-k", "^resnet99$"], ["matches no model of suite torchvision", "resnet18"]),
    (["-k", "^mlp$", "-k", "^cnnn$"], ["-k '^cnnn$'", "close matches: cnn"]),  # one typo among good names
    (["-x", "."], ["nothing to run: no model of suite dummy is selected", "--allow-empty"]),
    (["--compile-mode=max-autotun"], ["invalid choice: 'max-autotun'", "close matches: max-autotune"]),
    (["--precision=bf61"], ["unknown precision 'bf61'", "close matches: bf16"]),
    (["--allocator=jemaloc"], ["close matches: jemalloc"]),
    (["--ray-address=127.0.0.1:6379"], ["--ray-address", "pass --executor=ray"]),
], ids=["model", "model-torchvision", "one-of-two-models", "excluded-all", "compile-mode", "precision", "allocator",
        "ray-address-without-ray"])
def test_a_name_that_selects_nothing_is_one_line_with_close_matches_and_exit_2(args, fragments, tmp_path):
    result = call_runner(*EAGER, *args, f"--output-dirname={tmp_path}")
    assert_one_clear_line(result, *fragments)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.integration  # the probe child lists the registered dynamo backends
def test_an_unknown_dynamo_backend_is_exit_2_and_under_allow_empty_a_warning(tmp_path):
    base = ["--accelerator=cpu", "--xla=None", "--test=eval", "-k", "^mlp$", f"--output-dirname={tmp_path}"]
    assert_one_clear_line(run_runner(*base, "--dynamo=inducto"), "--dynamo backend 'inducto'",
                          "close matches: inductor")
    assert list(tmp_path.iterdir()) == []
    kept = run_runner(*base, "--dynamo=inducto", "--dynamo=None", "--allow-empty", "--dry-run", check_rc=0)
    assert "inducto" in kept.stderr and "left out (--allow-empty)" in kept.stderr
    assert "# 1 config(s) to run" in kept.stdout  # eager still runs
    nothing = run_runner(*base, "--dynamo=inducto", "--allow-empty", check_rc=0)
    assert "nothing to run: no experiment config is left (--allow-empty left out" in nothing.stderr
    assert list(tmp_path.iterdir()) == []


def test_allow_empty_turns_a_selection_of_nothing_into_exit_0(tmp_path):
    result = call_runner(*EAGER, "-k", "nosuch", "--allow-empty", f"--output-dirname={tmp_path}", check_rc=0)
    assert "nothing to run" in result.stderr and "matches no model" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_partition_without_any_selected_model_is_a_legitimate_empty_sweep(tmp_path):
    # dummy's list is mlp, cnn, multi_output: partition 2 of 3 holds multi_output only
    result = call_runner(*EAGER, "-k", "^mlp$", "--total-partitions=3", "--partition-id=2",
                        f"--output-dirname={tmp_path}")
    assert_one_clear_line(result, "nothing to run: partition 2 of 3 holds none of the 1 model(s)", rc=0)


@pytest.mark.integration  # the probe child asks for CUDA devices
def test_configs_this_machine_cannot_run_are_a_legitimate_empty_sweep(tmp_path):
    result = run_runner("--accelerator=cuda", "--xla=None", "--dynamo=None", "--test=eval", "-k", "^mlp$",
                        f"--output-dirname={tmp_path}")
    if "nothing to run" not in result.stderr:
        pytest.skip("this machine has a CUDA device")
    assert_one_clear_line(result, "nothing to run: no experiment config asked for can run on this machine",
                          "no CUDA device", rc=0)


# ---------------------------------------------------------------- a real sweep: resume, done, hint


@pytest.fixture(scope="module")
def typed_sweep(tmp_path_factory):
    """A tiny sweep started as a user types it: a relative interpreter path, then experiment_runner.py."""
    out = tmp_path_factory.mktemp("typed")
    typed = os.path.relpath(PYTHON, ROOT)
    argv = [typed, "experiment_runner.py", *EAGER, "-k", "^mlp$", *TINY, f"--output-dirname={out}"]
    first = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=600)
    return typed, out, first, again


@pytest.mark.integration
def test_the_resume_hint_names_the_interpreter_the_user_typed(typed_sweep):
    typed, out, first, _ = typed_sweep
    hint = next(line for line in first.stdout.splitlines() if line.startswith("resume:"))
    assert hint.split()[1:3] == [typed, "experiment_runner.py"], hint
    assert f"--output-dirname={out}" in hint and "--timestamp=" in hint


@pytest.mark.integration
def test_a_sweep_whose_every_config_is_done_says_so_and_exits_0(typed_sweep):
    _, out, _, again = typed_sweep
    assert again.returncode == 0, again.stderr
    assert f"nothing to run: every config is already in {out}" in again.stderr
    assert len(read_jsonl(out / "results.jsonl")) == 1  # nothing ran again


# ---------------------------------------------------------------- dates where a time is asked


@pytest.mark.parametrize("given, seconds", [
    ("1763434800", 1763434800.0),
    ("2026-11-18", 1794960000.0),
    ("2026-11-18T03:00", 1794970800.0),
    ("2026-11-18T04:00+01:00", 1794970800.0),
])
def test_timestamp_takes_epoch_seconds_and_iso_dates(given, seconds, tmp_path):
    result = call_runner(*EAGER, "-k", "^mlp$", f"--timestamp={given}", "--dry-run", f"--output-dirname={tmp_path}",
                        check_rc=0)
    assert f"--timestamp={seconds}" in result.stdout  # what every child (and so every record) is given
    assert cli_support.timestamp(given) == seconds


@pytest.mark.parametrize("command, flag", [
    (["experiment_runner.py", "--dry-run"], "--timestamp"),
    (["result_analyzer.py", str(OURS), "-o", "-"], "--timestamp"),
    (["compare.py", str(OURS), str(OURS)], "--control-timestamp"),
])
def test_a_bad_time_is_one_line_and_exit_2(command, flag):
    result = call_tool(*command, f"{flag}=next tuesday")
    assert_one_clear_line(result, f"argument {flag}: not a time: 'next tuesday'", "2026-11-18")


# ---------------------------------------------------------------- help that helps


def head_before_options(text: str) -> str:
    """--help's text before its first section of flags."""
    return re.split(r"\n(?:options|positional arguments|model selection):\n", text)[0]


def test_the_runners_help_fits_a_screen_starts_with_examples_and_shows_defaults():
    text = call_runner("--help", check_rc=0).stdout
    assert len(text.splitlines()) < 120, len(text.splitlines())
    head = head_before_options(text)
    assert "examples:" in head and 3 <= head.count("\n  # ") <= 5, head
    assert re.search(r"--output-dirname DIR\s+results, logs and artifacts go here.*\(default: ./output/\)",
                     " ".join(text.split()))
    assert "--dump-hlo" not in text and "--help-all" in text


def test_help_all_shows_every_flag():
    from benchmarks.config.run_options import build_parser
    from benchmarks.suites import all_suites

    text = call_runner("--help-all", check_rc=0).stdout
    declared = [flag for flag in build_parser(all_suites()).declared if not flag.hidden]
    missing = [flag.name for flag in declared if not re.search(rf"(?<![\w-]){re.escape(flag.name)}(?![\w-])", text)]
    assert not missing and len(declared) > 80, missing
    assert "--output-basename NAME" in text and "(default: results.jsonl)" in " ".join(text.split())


@pytest.mark.parametrize("tool", TOOLS)
def test_every_tools_help_starts_with_examples(tool):
    text = call_tool(tool, "--help", check_rc=0).stdout
    head = head_before_options(text)
    assert len(head.splitlines()) < 30 and "examples:" in head and 3 <= head.count("\n  # ") <= 5, head


@pytest.mark.parametrize("command", ["experiment_runner.py", "result_analyzer.py", "aggregate.py", "compare.py",
                                     "history.py ingest", "history.py show", "history.py detect", "history.py bisect",
                                     "history.py site"])
def test_every_log_level_flag_takes_the_one_tuple_of_levels(command):
    """Every tool and subcommand offers cli_support.LOG_LEVELS, as its own error for a level it lacks says."""
    script, *subcommand = command.split()
    result = call_tool(script, *subcommand, "--log-level=loud", check_rc=2)
    offered = ", ".join(map(repr, cli_support.LOG_LEVELS))
    assert f"argument --log-level: invalid choice: 'loud' (choose from {offered})" in result.stderr, result.stderr
    assert cli_support.LOG_LEVELS == ("critical", "error", "warning", "info", "debug")


def test_the_log_level_test_covers_every_history_subcommand():
    usage = call_tool("history.py", "--help", check_rc=0).stdout
    listed = set(re.search(r"\{([a-z,]+)\}", usage).group(1).split(","))
    tested = {"ingest", "show", "detect", "bisect", "site"}
    assert listed <= tested, listed - tested


# ---------------------------------------------------------------- aggregate's --backends


@pytest.mark.parametrize("args", [
    ["--backends", "eager", "openxla+lazytensor", str(OURS)],  # upstream's spelling, the input after it
    [str(OURS), "--backends", "eager", "openxla+lazytensor", "--"],  # upstream's, ended with --
    ["--backends=eager,openxla+lazytensor", str(OURS)],
    ["--backends", "eager", "--backends", "openxla+lazytensor", str(OURS)],
])
def test_backends_never_swallow_an_input(args):
    result = call_tool("aggregate.py", "--accelerator=cpu", "--format=csv", *args, check_rc=0)
    assert "Speedup(Eager/Oldest Eager)" in result.stdout and "Speedup(XLA+LazyTensor/Oldest Eager)" in result.stdout


@pytest.mark.parametrize("spelling", [["--backends", "eager", "nosuch"], ["--backends=eager,nosuch"],
                                      ["--backends", "eager", "--backends", "nosuch"]])
def test_a_backend_no_record_has_is_an_error_however_spelled(spelling):
    result = call_tool("aggregate.py", *spelling, str(OURS), "--accelerator=cpu", "--format=csv")
    assert_one_clear_line(result, "--backends: backend 'nosuch': unknown", "the files hold: eager, inductor")
    typo = call_tool("aggregate.py", "--backends", "eager", "openxla+lazytensr", str(OURS), "--accelerator=cpu")
    assert_one_clear_line(typo, "close matches: openxla+lazytensor")


# ---------------------------------------------------------------- result_analyzer's -o


def test_analyzer_output_in_a_missing_directory_is_exit_2_and_creates_nothing(tmp_path):
    result = call_tool("result_analyzer.py", str(OURS), "-o", tmp_path / "no" / "dir" / "x.csv")
    assert_one_clear_line(result, f"no such directory {tmp_path / 'no' / 'dir'}")
    assert list(tmp_path.iterdir()) == []
    # --output-dirname names a directory: created, as experiment_runner.py's is
    call_tool("result_analyzer.py", str(OURS), f"--output-dirname={tmp_path / 'new'}", check_rc=0)
    assert (tmp_path / "new" / "metric_report.csv").exists()


# ---------------------------------------------------------------- Ray on a pinned process


@pytest.mark.integration
def test_a_ray_instance_of_the_sweeps_own_counts_the_cores_it_may_use(tmp_path):
    pytest.importorskip("ray")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two usable cores to tell one from the machine's count")
    argv = ["taskset", "-c", str(min(os.sched_getaffinity(0))), PYTHON, str(ROOT / "experiment_runner.py"), *EAGER,
            "-k", "^(mlp|cnn)$", *TINY, "--executor=ray", "--launch=spawn", f"--output-dirname={tmp_path}"]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr
    found = read_jsonl(tmp_path / "results.jsonl")
    assert len(found) == 2
    for record in found:
        executor = record["environment"]["executor"]
        assert executor["kind"] == "ray" and executor["jobs"] == 1, executor  # one task at a time on one core
        assert executor["running_beside_at_start"] == 0 and executor["running_beside_at_end"] == 0, executor
