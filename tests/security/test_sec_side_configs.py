"""Side inputs go through the record's door (issue #61, "side inputs"): the JSON of a config run by hand
(--model-config, --experiment-config), --inductor-config's values and the files suite's --model-params are held to
the record check's limits (plumbing/value_limits.py: text of at most 4,096 characters, finite numbers within 2**63,
nesting at most 16 deep), one line and exit 2 for a value past them, before anything runs or is written. Before, each
was taken: the config ran and its record was refused by every reader (a traceback in strict mode), a JSON too deep
for the parser was an internal error, a 1e29 setting went to Inductor.

The probe's cache (runner/capabilities.py), found in the user's cache folder, is read only as a regular file of ours:
a link planted at its name is not followed (its forged answer never obeyed) and a FIFO there does not hang the sweep;
each is ignored and torch probed again."""

import json
import os
import threading

import pytest

from helpers import call_runner, run_runner

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.plumbing import user_cache
from benchmarks.runner import capabilities

EXP = {"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval"}
MODEL = {"suite_name": "dummy", "model_name": "mlp"}
DEEP = "[" * 20 + "]" * 20  # past the 16 levels a record may nest
TOO_DEEP_TO_PARSE = "[" * 50_000  # past the JSON parser's recursion limit: a RecursionError before
HUGE = 10 ** 29  # a batch size no record can be read back with


def refused(result, *words) -> str:
    """The one line of a refusal, exit 2, naming `words`, and nothing written."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


def one_config(tmp_path, model=None, experiment=None, model_text=None, experiment_text=None):
    """A config by hand, as its own process: before, the config ran (under its own environment, which it may
    restart into), so a process is what keeps a regression from taking the test's own down."""
    out = tmp_path / "out"
    result = run_runner(f"--output-dirname={out}", "--model-config=" + (model_text or json.dumps(model or MODEL)),
                         "--experiment-config=" + (experiment_text or json.dumps(experiment or EXP)))
    assert not out.exists() or not any(out.rglob("*.jsonl")), "a record was written"
    return result


@pytest.mark.process
def test_a_model_name_of_5000_characters_in_model_config_is_refused_at_the_door(tmp_path):
    result = one_config(tmp_path, model={"suite_name": "dummy", "model_name": "m" * 5000})
    refused(result, "--model-config", "model_name", "5000 characters", "4096")


@pytest.mark.process
@pytest.mark.parametrize("value, words", [("NaN", ("NaN",)), ("1e400", ("inf", "not finite")),
                                          (str(HUGE), ("batch_size", "1e+29"))])
def test_a_number_no_record_keeps_in_experiment_config_is_refused(tmp_path, value, words):
    key = "batch_size" if value == str(HUGE) else "x"
    text = json.dumps(EXP)[:-1] + f', "{key}": {value}}}'
    refused(one_config(tmp_path, experiment_text=text), "--experiment-config", key, *words)


@pytest.mark.process
@pytest.mark.parametrize("params, words", [(DEEP, ("params[0]", "nested deeper than 16")),
                                           (TOO_DEEP_TO_PARSE, ("is nested deeper than 16",))])
def test_a_model_config_nested_too_deep_is_refused(tmp_path, params, words):
    text = json.dumps(MODEL)[:-1] + f', "params": {params}}}'
    refused(one_config(tmp_path, model_text=text), "--model-config", *words)


SWEEP = ("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--test=eval", "--dry-run")


@pytest.mark.parametrize("setting, words", [
    (f"precompilation_timeout_seconds={HUGE}", ("precompilation_timeout_seconds", "1e+29")),
    ("memory_pool=" + "x" * 5000, ("memory_pool", "5000 characters")),
    ("max_autotune=" + DEEP, ("max_autotune", "nested deeper than 16")),
])
def test_an_inductor_config_value_no_record_keeps_is_refused(tmp_path, setting, words):
    out = tmp_path / "out"
    result = call_runner(*SWEEP, "--dynamo=inductor", f"--output-dirname={out}", f"--inductor-config={setting}")
    refused(result, "--inductor-config", *words)
    assert not out.exists()


@pytest.mark.parametrize("params, words", [(json.dumps({"image_size": HUGE}), ("image_size", "1e+29")),
                                           (TOO_DEEP_TO_PARSE, ("nested deeper than 16",))])
def test_files_suite_params_past_the_limits_are_refused(tmp_path, params, words):
    out = tmp_path / "out"
    result = call_runner("--suite-name=files", "--search-dir=tests/fixtures/user_models", "--accelerator=cpu",
                         "--xla=None", "--dynamo=None", "--test=eval", "--dry-run", f"--output-dirname={out}",
                         f"--model-params={params}")
    refused(result, "--model-params", *words)


# ---------------------------------------------------------------- the probe's cache

NEEDS_DYNAMO = [ExperimentConfig("cpu", None, "aot_eager", "eval")]
FORGED = {"dynamo_backends": ["forged_backend"], "torch_xla_error": "forged"}


@pytest.fixture
def cache_path(tmp_path, monkeypatch):
    """Where the probe's answer for NEEDS_DYNAMO is cached, in a cache folder of this test's."""
    monkeypatch.setenv(user_cache.CACHE_ENV, str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    return tmp_path / "cache" / f"probe-{capabilities.cache_key(capabilities.probe_argv(NEEDS_DYNAMO))}.json"


def test_a_cached_answer_of_ours_is_still_used(cache_path):
    cache_path.write_text(json.dumps(FORGED))  # a regular file at its name: read, no probe child
    assert capabilities.probe_capabilities(NEEDS_DYNAMO).dynamo_backends == ("forged_backend",)


@pytest.mark.integration
def test_a_link_planted_as_the_probe_cache_is_not_followed_and_torch_is_probed_again(cache_path, tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps(FORGED))
    os.symlink(target, cache_path)
    found = capabilities.probe_capabilities(NEEDS_DYNAMO)
    assert "forged_backend" not in found.dynamo_backends and "aot_eager" in found.dynamo_backends
    assert cache_path.is_symlink() and json.loads(target.read_text()) == FORGED  # nothing written through it


@pytest.mark.integration
def test_a_fifo_planted_as_the_probe_cache_does_not_hang_the_sweep(cache_path):
    os.mkfifo(cache_path)
    answer = []
    worker = threading.Thread(target=lambda: answer.append(capabilities.probe_capabilities(NEEDS_DYNAMO)), daemon=True)
    worker.start()
    worker.join(120)
    if worker.is_alive():  # blocked opening the FIFO: unblock it (a writer that closes at once), then fail
        os.close(os.open(cache_path, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(120)
        pytest.fail("the probe cache's reader blocked on a FIFO")
    assert "aot_eager" in answer[0].dynamo_backends
