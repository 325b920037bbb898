"""The `files` suite: user model files with create_model(batch_size, **params), labels, parameters, a batch-size
sweep, and files that fail to import or define no create_model (tests/fixtures/user_models*)."""

import argparse

import pytest

from helpers import ROOT, call_runner, read_jsonl, run_runner

from benchmarks.config import experiment_config


from benchmarks.plumbing import safe_paths

from benchmarks.runner import plan
from benchmarks.suites import files

MODELS = ROOT / "tests" / "fixtures" / "user_models"
NO_ENTRY = ROOT / "tests" / "fixtures" / "user_models_extra" / "no_entry.py"
COMMON = ["--suite-name=files", "--accelerator=cpu", "--xla=None", "--repeat=2", "--warmup=1"]


def options(**kw):
    base = dict(search_dir=[str(MODELS)], model_file=[], labels=[], model_params=None)
    base.update(kw)
    return argparse.Namespace(**base)


# ---------------------------------------------------------------- listing (parent side: user code never runs)


def test_every_file_with_create_model_is_a_model_named_after_it(caplog):
    models = files.SUITE.list_models(options(model_file=[str(NO_ENTRY)]))
    names = [m["model_name"] for m in models]
    # common_layers.py defines no create_model: a warning names it; same-named files get their folder's name.
    assert names == ["broken_import", "tiny_conv", "tiny_mlp", "more/tiny_mlp", "no_entry"]
    assert any("common_layers.py" in r.getMessage() and "defines no create_model" in r.getMessage()
               for r in caplog.records)
    tiny = models[2]
    assert tiny["path"] == str(MODELS / "tiny_mlp.py")
    assert tiny["labels"] == {"author": ["alice"], "kind": ["good", "small"]}
    assert "params" not in tiny


def test_labels_filter_all_must_match_and_values_may_be_alternatives():
    pick = lambda *labels: [m["model_name"] for m in files.SUITE.list_models(options(labels=list(labels)))]
    assert pick("author::alice") == ["broken_import", "tiny_mlp"]
    assert pick("author::alice", "kind::good") == ["tiny_mlp"]
    assert pick("kind::small,broken") == ["broken_import", "tiny_mlp"]
    assert pick("author::nobody") == []


def test_params_are_part_of_the_model_config_and_its_fingerprint():
    one = files.SUITE.list_models(options(model_params='{"hidden": 8}'))[2]
    two = files.SUITE.list_models(options(model_params='{"hidden": 16}'))[2]
    assert one["params"] == {"hidden": 8} and two["params"] == {"hidden": 16}
    exp = experiment_config.ExperimentConfig(accelerator="cpu", xla=None, dynamo=None, test="eval")
    assert plan.Config(one, exp).fingerprint != plan.Config(two, exp).fingerprint
    # Labels and the file's location are not: moving the folder or relabelling keeps resume working.
    moved = dict(one, path="/elsewhere/tiny_mlp.py", labels={"x": ["y"]})
    assert plan.Config(moved, exp).fingerprint == plan.Config(one, exp).fingerprint
    assert safe_paths.model_dirname(one) != safe_paths.model_dirname(two)


def test_listing_never_runs_user_code(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "side_effect.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n\ndef create_model(batch_size):\n    pass\n")
    models = files.SUITE.list_models(options(search_dir=[str(tmp_path)]))
    assert [m["model_name"] for m in models] == ["side_effect"] and not marker.exists()


@pytest.mark.parametrize("args, message", [
    ([], "needs --search-dir DIR or --model-file FILE"),
    (["--search-dir=/nonexistent/models"], "--search-dir /nonexistent/models: no such directory"),
    (["--model-file=/nonexistent/m.py"], "--model-file /nonexistent/m.py: no such file"),
    (["--search-dir=tests/fixtures/user_models", "--model-params=[1, 2]"], "must be a JSON object"),
    (["--search-dir=tests/fixtures/user_models", "--model-params={bad"], "not valid JSON"),
    (["--search-dir=tests/fixtures/user_models", "--labels=author"], "expected key::value"),
])
def test_bad_flags_are_one_line_and_exit_2(args, message):
    result = call_runner("--suite-name=files", "--dry-run", *args, check_rc=2)
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------- real sweeps


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """tiny_mlp (picked by its labels) with a parameter, eval and train, eager and aot_eager; default batch size."""
    out = tmp_path_factory.mktemp("files_good")
    args = [*COMMON, f"--search-dir={MODELS}", "--labels=author::alice", "--labels=kind::good",
            '--model-params={"hidden": 8}', "--dynamo=None", "--dynamo=aot_eager", "--test=eval", "--test=train",
            f"--output-dirname={out}"]
    run_runner(*args, check_rc=0)
    run_runner(*args, check_rc=0)  # resume: everything is done, nothing runs twice
    return read_jsonl(out / "results.jsonl")


@pytest.fixture(scope="module")
def batch_sweep(tmp_path_factory):
    """Two batch sizes; the alice-labelled files: tiny_mlp, broken_import and the explicit no_entry.py."""
    out = tmp_path_factory.mktemp("files_bs")
    run_runner(*COMMON, f"--search-dir={MODELS}", f"--model-file={NO_ENTRY}", "--labels=author::alice",
               '--model-params={"hidden": 8}', "--dynamo=None", "--test=eval", "--batch-size=2", "--batch-size=5",
               f"--output-dirname={out}", check_rc=1)  # broken_import and no_entry fail: bad news
    return read_jsonl(out / "results.jsonl")


@pytest.mark.integration
def test_eval_and_train_eager_and_compiled_with_labels_and_params_in_the_record(good):
    records = good
    assert [(r["experiment"]["dynamo"], r["experiment"]["test"]) for r in records] == [
        (None, "eval"), (None, "train"), ("aot_eager", "eval"), ("aot_eager", "train")]
    for record in records:
        assert record["status"] == "ok", record["error"]
        model = record["model"]
        assert model["model_name"] == "tiny_mlp" and model["params"] == {"hidden": 8}
        assert model["labels"] == {"author": ["alice"], "kind": ["good", "small"]}
        assert record["experiment"]["batch_size"] == 4 and record["requested_batch_size"] is None  # BATCH_SIZE


@pytest.mark.integration
def test_batch_size_sweep_records_requested_and_real(batch_sweep):
    ok = [r for r in batch_sweep if r["model"]["model_name"] == "tiny_mlp"]
    assert [(r["requested_batch_size"], r["experiment"]["batch_size"], r["status"]) for r in ok] == [
        (2, 2, "ok"), (5, 5, "ok")]


@pytest.mark.integration
def test_a_file_that_fails_to_import_is_an_error_record(batch_sweep):
    broken = [r for r in batch_sweep if r["model"]["model_name"] == "broken_import"]
    assert len(broken) == 2
    for record in broken:
        assert record["status"] == "error" and record["error"]["phase"] == "load"
        assert record["error"]["type"] == "ModelFileError"
        assert "broken_import.py" in record["error"]["message"] and "on purpose" in record["error"]["message"]


@pytest.mark.integration
def test_a_named_file_without_create_model_is_an_error_record(batch_sweep):
    records = [r for r in batch_sweep if r["model"]["model_name"] == "no_entry"]
    assert [r["requested_batch_size"] for r in records] == [2, 5]
    for record in records:
        assert record["status"] == "error" and record["error"]["phase"] == "load"
        assert "no_entry.py defines no create_model" in record["error"]["message"]
    assert len(batch_sweep) == 6  # the broken files did not stop the sweep


def test_a_file_that_does_not_parse_is_listed_with_a_warning_and_its_build_says_why(tmp_path, caplog):
    bad = tmp_path / "half_written.py"
    bad.write_text("#!/usr/bin/env python\n# labels: author::dana\ndef create_model(batch_size:\n")
    models = files.SUITE.list_models(options(search_dir=[str(tmp_path)]))
    assert [(m["model_name"], m["labels"]) for m in models] == [("half_written", {"author": ["dana"]})]
    assert any("half_written.py" in r.getMessage() and "unparsable" in r.getMessage() for r in caplog.records)
    exp = experiment_config.ExperimentConfig(accelerator="cpu", xla=None, dynamo=None, test="eval")
    with pytest.raises(files.ModelFileError, match=r"cannot import .*half_written.py: SyntaxError"):
        files.SUITE.build(models[0], exp, "cpu", None)
