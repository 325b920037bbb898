"""Bad input gets one clear line and exit 2; --help and --dry-run stay light; dry-run commands are exact."""

import json
import shlex
import subprocess
import sys

import pytest

from helpers import PYTHON, ROOT, XLA, call_runner, read_jsonl, run_runner, xla_missing

EXP = '{"accelerator": "cpu", "xla": null, "dynamo": null, "test": "eval"}'
MODEL = '{"suite_name": "dummy", "model_name": "mlp"}'


def assert_one_clear_line(result, *fragments, rc=2):
    assert result.returncode == rc, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("args, fragment", [
    (["--accelerator=gpu"], "invalid choice: 'gpu'"),
    (["--xla=XRT"], "XRT was removed"),
    (["--test=infer"], "invalid choice: 'infer'"),
    (["--repeat=0"], "must be a positive integer"),
    (["--suite-name=nope"], "invalid choice: 'nope'"),
    (["--subprocess-memory-limit=lots"], "not a memory size"),
    (["-k", "(unclosed"], "not a valid regular expression"),
    (["--total-partitions=2", "--partition-id=2"], "--partition-id must be below"),
    (["--model-config", MODEL], "--model-config and --experiment-config go together"),
    (["--model-config", "{not json", "--experiment-config", EXP], "--model-config is not valid JSON"),
    (["--model-config", MODEL, "--experiment-config", '{"accelerator": "cpu"}'], "lacks key(s): xla, dynamo, test"),
    (["--model-config", '{"suite_name": "dummy"}', "--experiment-config", EXP], '"model_name"'),
    (["--model-config", '{"suite_name": "x", "model_name": "m"}', "--experiment-config", EXP], "names suite 'x'"),
])
def test_bad_input_gets_one_clear_line_and_exit_2(args, fragment, tmp_path):
    result = call_runner(*args, f"--output-dirname={tmp_path}")
    assert_one_clear_line(result, fragment)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_unwritable_output_directory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("keep me")
    result = call_runner("--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "-k", "^mlp$",
                        f"--output-dirname={blocker}/out")
    assert_one_clear_line(result, "cannot create output directory")
    assert blocker.read_text() == "keep me"


def test_a_filter_that_selects_nothing_is_exit_2_unless_allow_empty(tmp_path):
    result = call_runner("-k", "no-such-model", f"--output-dirname={tmp_path}")
    assert_one_clear_line(result, "matches no model of suite dummy")
    result = call_runner("-k", "no-such-model", "--allow-empty", f"--output-dirname={tmp_path}")
    assert result.returncode == 0
    assert "nothing to run" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.process  # what a fresh interpreter imports
def test_help_and_parser_do_not_import_torch():
    code = ("import sys; from benchmarks.config.run_options import build_parser; from benchmarks.suites import "
            "all_suites; from benchmarks.runner import cli, sweep; build_parser(all_suites()).format_help(); "
            "heavy = [m for m in ('torch', 'torch_xla', 'pandas', 'matplotlib') if m in sys.modules]; "
            "assert not heavy, heavy")
    subprocess.run([PYTHON, "-c", code], check=True, cwd=ROOT)
    assert "--subprocess-memory-limit" in call_runner("--help-all", check_rc=0).stdout


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("dry")
    result = run_runner("--accelerator=cpu", "--accelerator=tpu", "--xla=None", "--xla=PJRT", "--dynamo=None",
                        "--dynamo=inductor", "--dynamo=openxla", "--test=eval", "-k", "^mlp$", "--repeat=1",
                        "--warmup=0", f"--output-dirname={out}", "--dry-run", check_rc=0)
    return result, out


@pytest.mark.integration
def test_dry_run_lists_kept_commands_dropped_reasons_and_counts(dry_run):
    result, out = dry_run
    lines = result.stdout.splitlines()
    commands = [line for line in lines if not line.startswith(("#", "dropped:", "skip:"))]
    kept = 4 if XLA else 2  # cpu: eager, inductor, PJRT lazy, PJRT + openxla (where torch-xla can run)
    assert len(commands) == kept
    dropped = [line for line in lines if line.startswith("dropped:")]
    assert any("dynamo=inductor" in d and "xla=PJRT" in d and "not XLA tensors" in d for d in dropped)
    assert any("accelerator=tpu" in d and "runs only through PyTorch/XLA" in d for d in dropped)
    if XLA:
        assert any("accelerator=tpu" in d and "xla=PJRT" in d and "no XLA TPU device" in d for d in dropped)
    else:  # every other XLA config says why it can't run beside this torch
        assert sum(f"torch_xla is not usable: {xla_missing()}" in d for d in dropped) == 4
    assert lines[-1] == (f"# 1 model(s) x {kept} experiment config(s): {kept} to run, 0 skipped, "
                         f"{12 - kept} experiment config(s) dropped")
    assert not out.exists() or list(out.iterdir()) == []  # a dry run writes nothing


@pytest.mark.integration
def test_a_dry_run_command_runs_that_config_alone(dry_run, tmp_path):
    result, out = dry_run
    command = next(line for line in result.stdout.splitlines() if '"dynamo": null' in line and '"xla": null' in line)
    argv = shlex.split(command)
    assert argv[0] == sys.executable and argv[1].endswith("experiment_runner.py")
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    (record,) = read_jsonl(out / "results.jsonl")
    assert record["status"] == "ok" and record["model"] == {"model_name": "mlp", "suite_name": "dummy"}
    assert record["experiment"]["batch_size"] == 16 and record["requested_batch_size"] is None
    assert len(record["metrics"]["total_time"]) == 1 and "warmup_time" not in record["metrics"]
    assert json.loads(json.dumps(record)) == record


@pytest.mark.integration
def test_the_parent_never_imports_torch_nor_child_code_even_while_planning_a_sweep(tmp_path):
    code = ("import sys; from benchmarks.__main__ import main; "
            f"rc = main(['--accelerator=cpu', '--xla=PJRT', '--xla=None', '--dry-run', '--output-dirname={tmp_path}']); "
            "heavy = [m for m in sys.modules if m in ('torch', 'torch_xla') or m.startswith('benchmarks.child')]; "
            "assert rc == 0 and not heavy, heavy")
    subprocess.run([PYTHON, "-c", code], check=True, cwd=ROOT, capture_output=True)


def test_partitions_slice_the_suite_list_before_filters():
    from benchmarks.config.run_options import RunOptions, build_parser
    from benchmarks.runner import model_selection
    from benchmarks.suites import all_suites, load_suite

    parser = build_parser(all_suites())
    names = lambda *args: [m["model_name"] for m in model_selection.select_models(load_suite("faults"), RunOptions.from_flags(parser.parse_args(args)))]
    everything = names()
    parts = [names("--total-partitions=4", f"--partition-id={i}") for i in range(4)]
    assert sum(parts, []) == everything  # disjoint, complete, in order; the last takes the remainder
    assert names("--total-partitions=4", "--partition-id=0", "-k", "nothing-matches", "--allow-empty") == []
    assert names("-k", "SEG") == ["segfault"] and names("-x", "^s") == [n for n in everything if not n.startswith("s")]
    assert [m["model_name"] for m in model_selection.select_models(load_suite("dummy"), RunOptions.from_flags(parser.parse_args(["--filter-by-tier=1"])))] == ["mlp"]
