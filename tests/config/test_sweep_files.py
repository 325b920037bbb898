"""Sweeps as files (issue 63): --save-sweep writes a sweep's flags as TOML (one key per flag, each with its help),
--sweep runs it, flags on the command line override it; the file is untrusted input: a mistyped key gets the close
matches, a bad value or a key that reaches outside the sweep is one line and exit 2, and nothing in it runs."""

import re
import tomllib

import pytest

from helpers import call_runner, read_jsonl

SWEEP = ["--suite-name=dummy", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=aot_eager",
         "--test=eval", "--repeat=2", "-k", "^(mlp|cnn)$", "--subprocess-memory-limit=8G", "--verify"]


def planned(result) -> list:
    """The configs a --dry-run lists (each child's model and experiment config), in order."""
    return re.findall(r"--model-config=(\{.*?\})' '--experiment-config=(\{.*?\})'", result.stdout)


def saved(tmp_path, *flags) -> tuple:
    path = tmp_path / "sweep.toml"
    result = call_runner(*flags, f"--output-dirname={tmp_path / 'out'}", "--save-sweep", path, check_rc=0)
    return path, result


def test_a_saved_sweep_is_toml_one_key_per_flag_with_its_help_and_runs_the_same_configs(tmp_path):
    path, result = saved(tmp_path, *SWEEP)
    text = path.read_text()
    assert tomllib.loads(text) == {"suite-name": "dummy", "accelerator": ["cpu"], "xla": ["None"],
                                   "dynamo": ["None", "aot_eager"], "test": ["eval"], "repeat": 2,
                                   "filter": ["^(mlp|cnn)$"], "subprocess-memory-limit": "8G", "verify": True}
    assert "# timed runs per config" in text and "\nrepeat = 2\n" in text  # each key under its flag's help
    assert "--output-dirname" in text.splitlines()[-1] and "left out" in result.stderr  # never in the file's keys
    assert not (tmp_path / "out").exists()  # saving runs nothing
    out = tmp_path / "dry"
    direct = call_runner(*SWEEP, "--dry-run", f"--output-dirname={out}", check_rc=0)
    from_file = call_runner("--sweep", path, "--dry-run", f"--output-dirname={out}", check_rc=0)
    assert planned(from_file) == planned(direct) and len(planned(direct)) == 4


def test_flags_on_the_command_line_override_the_files(tmp_path):
    path, _ = saved(tmp_path, *SWEEP)
    out = tmp_path / "dry"
    overridden = call_runner("--sweep", path, "--dynamo=inductor", "-k", "^mlp$", "--dry-run",
                             f"--output-dirname={out}", check_rc=0)
    replaced = [f for f in SWEEP if not f.startswith("--dynamo") and f not in ("-k", "^(mlp|cnn)$")]
    direct = call_runner(*replaced, "--dynamo=inductor", "-k", "^mlp$", "--dry-run", f"--output-dirname={out}",
                         check_rc=0)
    configs = planned(overridden)
    assert configs == planned(direct) and len(configs) == 1 and '"dynamo": "inductor"' in configs[0][1]


def test_a_sweep_file_runs(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text('suite-name = "dummy"\nfilter = ["^mlp$"]\naccelerator = ["cpu"]\nxla = ["None"]\n'
                    'dynamo = ["None"]\ntest = ["eval"]\nrepeat = 2\nwarmup = 1\n')
    call_runner("--sweep", path, f"--output-dirname={tmp_path / 'out'}", check_rc=0)
    (record,) = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert record["status"] == "ok" and record["repeat"] == 2 and record["model"]["model_name"] == "mlp"


def test_odd_text_survives_the_round_trip(tmp_path):
    odd = 'a"b\\c\td\x7fé'
    path, _ = saved(tmp_path, "--suite-name=dummy", "-k", odd, "-k", "^mlp$")
    assert tomllib.loads(path.read_text())["filter"] == [odd, "^mlp$"]


@pytest.mark.parametrize("content,message", [
    ('suite_nme = "dummy"', "'suite_nme' is no flag of experiment_runner.py; close matches: suite-name"),
    ('dynamos = ["inductor"]', "'dynamos' is no flag of experiment_runner.py; close matches: dynamo, dynamic"),
    ('repeat = "x"', "repeat: not an integer: 'x'"),
    ('repeat = [1, 2]', "repeat takes one value, not a list"),
    ('dry-run = "yes"', 'dry-run is a switch: true or false, not "yes"'),
    ('test = [{a = 1}]', "test: {\"a\": 1} is no value of this flag (text or a number)"),
    ('log-level = "debg"', "log-level: 'debg' is not a choice; close matches: debug"),
    ('output-dirname = "/etc"', "output-dirname is the command line's to give (a sweep file names no file, directory, host or time)"),
    ('script = "evil.py"', "script is the command line's to give (a sweep file names no file, directory, host or time)"),
    ('model-config = "{}"', "model-config is the command line's to give (a sweep file names no file, directory, host or time)"),
    ('repeat = ', "not TOML (Invalid value (at line 1, column 10))"),
])
def test_bad_input_in_a_sweep_file_is_one_line_and_exit_2(tmp_path, content, message):
    path = tmp_path / "bad.toml"
    path.write_text(content + "\n")
    result = call_runner("--sweep", path, "--dry-run", f"--output-dirname={tmp_path / 'out'}", check_rc=2)
    assert result.stderr.strip() == f"experiment_runner.py: error: --sweep {path}: {message}"


def test_nothing_in_a_sweep_file_runs(tmp_path):
    path = tmp_path / "sweep.toml"
    marker = tmp_path / "pwned"
    path.write_text(f'suite-name = "dummy"\nfilter = ["$(touch {marker})", "`touch {marker}`"]\n'
                    f'accelerator = ["cpu; touch {marker}"]\n')
    result = call_runner("--sweep", path, "--dry-run", f"--output-dirname={tmp_path / 'out'}")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert not marker.exists()


def test_a_missing_or_huge_sweep_file_is_one_line(tmp_path):
    missing = call_runner("--sweep", tmp_path / "nope.toml", "--dry-run", check_rc=2)
    assert missing.stderr.strip().endswith("nope.toml: no such file")
    huge = tmp_path / "huge.toml"
    huge.write_text("# " + "x" * (1 << 20) + "\n")
    assert "larger than 1024 KiB" in call_runner("--sweep", huge, "--dry-run", check_rc=2).stderr
