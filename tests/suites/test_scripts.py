"""The `scripts` suite: unmodified scripts as models (tests/fixtures/scripts, examples/scripts). Real discovery
children and real benchmark children on tiny models; the fast tier checks listing rules and the helper."""

import argparse
import json
import subprocess

import pytest

from helpers import PYTHON, ROOT, call_runner, processes_mentioning, read_jsonl, run_runner

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.suites import files, scripts
from benchmarks.suites.scripts_api import parameters

SCRIPTS = ROOT / "tests" / "fixtures" / "scripts"
EXAMPLES = ROOT / "examples" / "scripts"
COMMON = ["--suite-name=scripts", "--accelerator=cpu", "--xla=None", "--repeat=2", "--warmup=1"]


def by_name_and_backend(records: list) -> dict:
    return {(r["model"]["model_name"], r["experiment"]["dynamo"], r["experiment"]["test"]): r for r in records}


# ---------------------------------------------------------------- fast: the helper and the listing rules


def test_parameters_reads_the_standard_names_and_the_scripts_own_defaults():
    params = parameters(["--batch_size", "8", "--height=32", "--hidden", "5", "--other", "x"], hidden=3)
    assert (params.batch_size, params.height, params.width, params.max_seq_length, params.hidden) == (8, 32, 224,
                                                                                                       128, 5)
    assert parameters(["--batch-size=3"]).batch_size == 3  # either spelling
    assert parameters([], batch_size=2).batch_size == 2


@pytest.mark.process  # what a fresh interpreter imports
def test_the_helper_imports_neither_torch_nor_torch_xla():
    code = ("import sys; from benchmarks.suites.scripts_api import parameters; parameters([]); "
            "print(sorted(m for m in ('torch', 'torch_xla') if m in sys.modules))")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.process  # what a fresh interpreter imports
def test_the_discovery_cache_is_keyed_by_the_installed_torch_without_importing_it(tmp_path):
    script = tmp_path / "one.py"
    script.write_text("print('hello')\n")
    code = ("import sys; from importlib import metadata; from benchmarks.suites import script_discovery as d; "
            f"key = d.cache_key({str(script)!r}, '--n 1'); "
            f"assert key == d.cache_key({str(script)!r}, '--n 1', metadata.version('torch')), 'not this torch'; "
            f"assert key != d.cache_key({str(script)!r}, '--n 1', '2.0.0'), 'another torch, the same key'; "
            "print(sorted(m for m in ('torch', 'torch_xla') if m in sys.modules))")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"  # the parent read the version from the package's metadata


def test_a_search_dir_keeps_files_that_run_and_leaves_helpers_out(tmp_path):
    (tmp_path / "guarded.py").write_text("def main():\n    pass\n\nif __name__ == '__main__':\n    main()\n")
    (tmp_path / "flat.py").write_text("import torch\nprint(torch.ones(1))\n")
    (tmp_path / "defs.py").write_text("X = 1\n\ndef f():\n    return X\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    kept = {p.name for p in tmp_path.iterdir() if scripts.runs_as_script(str(p))}
    assert kept == {"guarded.py", "flat.py", "broken.py"}  # a file that does not parse: its discovery says why


def test_scripts_of_one_name_are_told_apart_by_their_folders():
    names = files.script_names([("/a/run.py", "a/run", True), ("/b/run.py", "b/run", True),
                                ("/b/other.py", "b/other", True)])
    assert names == ["a/run.py", "b/run.py", "other.py"]


def test_no_script_and_labels_that_keep_nothing_run_no_child(tmp_path):
    with pytest.raises(UsageError, match="needs --script FILE or --search-dir DIR"):
        scripts.SUITE.list_models(argparse.Namespace(script=[], search_dir=[], labels=[]))
    flags = argparse.Namespace(script=[str(SCRIPTS / "two_tiny.py")], search_dir=[], labels=["kind::other"],
                               output_dirname=str(tmp_path), script_timeout=300.0)
    assert scripts.SUITE.list_models(flags) == []
    assert not (tmp_path / "script-discovery").exists()  # nothing discovered: the label filter comes first


def test_a_requested_batch_size_is_a_skip_that_names_the_script_argument():
    model = {"suite_name": "scripts", "model_name": "a.py::m", "script_model": "m"}
    experiment = ExperimentConfig(accelerator="cpu", xla=None, dynamo=None, test="eval", batch_size=4)
    assert "--script-args" in scripts.SUITE.skip_reason(model, experiment, argparse.Namespace())


def test_captured_inputs_are_detached_copies_in_their_own_containers_namedtuples_included():
    import collections

    import torch

    from benchmarks.suites.script_capture import detached

    Batch = collections.namedtuple("Batch", "x mask")
    weight = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        frozen = torch.ones(2)
    value = (Batch(weight * 2, frozen), [weight], {"n": 3, "y": weight + 1})
    copy = detached(value)
    assert type(copy[0]) is Batch and isinstance(copy[1], list) and copy[2]["n"] == 3
    for tensor in (copy[0].x, copy[0].mask, copy[1][0], copy[2]["y"]):
        assert not tensor.requires_grad and tensor.grad_fn is None and not tensor.is_inference()
    assert torch.equal(copy[0].x, torch.full((2,), 2.0)) and copy[1][0].data_ptr() != weight.data_ptr()


@pytest.mark.parametrize("args, message", [
    (["--script=/no/such.py"], "--script /no/such.py: no such file"),
    (["--script", str(SCRIPTS / "two_tiny.py"), "--script-args=--a 'b"], "cannot split"),
    ([], "needs --script FILE or --search-dir DIR"),
])
def test_bad_flags_are_one_line_and_exit_2(args, message):
    result = call_runner("--suite-name=scripts", "--dry-run", *args, check_rc=2)
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- real children


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """two_tiny.py with --batch_size 3: its two models on eager and Inductor (eval), checked against eager."""
    out = tmp_path_factory.mktemp("scripts_two")
    run_runner(*COMMON, f"--script={SCRIPTS / 'two_tiny.py'}", "--script-args=--batch_size 3", "--dynamo=None",
               "--dynamo=inductor", "--test=eval", "--verify", f"--output-dirname={out}", check_rc=0)
    return read_jsonl(out / "results.jsonl")


@pytest.mark.integration
def test_a_script_with_two_models_has_both_benchmarked_on_eager_and_inductor(two_models):
    found = by_name_and_backend(two_models)
    assert set(found) == {(name, dynamo, "eval") for name in ("two_tiny.py::first", "two_tiny.py::second")
                          for dynamo in (None, "inductor")}
    for record in two_models:
        assert record["status"] == "ok", record.get("error")
        assert record["verification_code"] == "PASS"  # the eager reference ran the script again: same model
        assert record["model"]["labels"] == {"kind": ["tiny"]}
    assert {r["model_info"]["script_class"] for r in two_models} == {"Linear", "Scale"}


@pytest.mark.integration
def test_a_script_argument_reaches_the_models_batch_size_and_the_fingerprint(two_models):
    for record in two_models:
        assert record["model"]["params"] == {"script_args": "--batch_size 3"}
        assert record["experiment"]["batch_size"] == 3 and record["requested_batch_size"] is None


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    out = tmp_path_factory.mktemp("scripts_failing")
    result = run_runner(*COMMON, f"--search-dir={SCRIPTS / 'failing'}", "--script-timeout=3", "--dynamo=None",
                        "--test=eval", f"--output-dirname={out}", check_rc=1)  # crash and hang: bad news
    return read_jsonl(out / "results.jsonl"), result, out


@pytest.mark.integration
def test_a_crashing_a_modelless_and_a_hanging_script_are_each_recorded(failing):
    records, result, out = failing
    found = {r["model"]["model_name"]: r for r in records}
    assert set(found) == {"crash.py", "no_model.py", "hang.py"}  # helpers_only.py is not a script
    crash, none, hang = found["crash.py"], found["no_model.py"], found["hang.py"]
    assert crash["status"] == "error" and crash["error"]["type"] == "ScriptCrashed"
    assert "RuntimeError: the script's own bug" in crash["error"]["message"]
    assert none["status"] == "skip" and "called no torch.nn.Module" in none["error"]["message"]
    assert hang["status"] == "error" and hang["error"]["type"] == "ScriptTimedOut"
    assert "timed out after 3 s" in hang["error"]["message"]
    assert not processes_mentioning(str(SCRIPTS / "failing" / "hang.py"))  # its process group was killed
    logs = sorted(p.name for p in (out / "script-discovery").glob("*.log"))
    assert any(name.startswith("crash-") for name in logs)  # what the script printed is kept, apart from records
    assert "about to fail" in next((out / "script-discovery").glob("crash-*.log")).read_text()


@pytest.mark.integration
def test_discovery_is_cached_by_content_and_arguments_and_runs_again_when_the_script_changes(tmp_path):
    script, counter = tmp_path / "counted.py", tmp_path / "runs.txt"
    script.write_text((SCRIPTS / "counted.py").read_text())
    args = [*COMMON, f"--script={script}", f"--script-args=--counter {counter}", "--dynamo=None", "--test=eval",
            f"--output-dirname={tmp_path / 'out'}", "--dry-run"]
    first = run_runner(*args, check_rc=0).stdout
    second = run_runner(*args, check_rc=0).stdout
    assert "# counted.py with" in first and "counted.py::Linear: Linear called on (1x2 float32)" in first
    assert "(discovered now)" in first and "(cached)" in second
    assert counter.read_text().count("ran") == 1  # the second listing ran no script
    script.write_text(script.read_text() + "# changed\n")
    third = run_runner(*args, check_rc=0).stdout
    assert "(discovered now)" in third and counter.read_text().count("ran") == 2
    other_args = [a if not a.startswith("--script-args") else f"--script-args=--counter={counter}" for a in args]
    run_runner(*other_args, check_rc=0)  # other arguments: discovered again
    assert counter.read_text().count("ran") == 3


@pytest.mark.integration
def test_a_crashed_discovery_is_not_served_from_the_cache(tmp_path):
    """The crash's cause may lie outside the script (here a missing module, installed afterwards): the next
    listing runs the script again; a finished discovery is cached."""
    from benchmarks.suites import script_discovery

    script, site = tmp_path / "needs_helper.py", tmp_path / "site"
    site.mkdir()
    script.write_text(f"import sys\nsys.path.insert(0, {str(site)!r})\nimport helper_not_installed_yet\n"
                      "import torch\nmodel = torch.nn.Linear(2, 2)\nmodel(torch.ones(1, 2))\n")
    out = str(tmp_path / "out")
    first = script_discovery.discover(str(script), None, out, timeout=60)
    assert first.status == script_discovery.CRASHED and "helper_not_installed_yet" in first.message
    (site / "helper_not_installed_yet.py").write_text("")
    second = script_discovery.discover(str(script), None, out, timeout=60)
    assert not second.cached and second.status == script_discovery.FINISHED
    assert [m["name"] for m in second.models] == ["model"]
    third = script_discovery.discover(str(script), None, out, timeout=60)
    assert third.cached and [m["name"] for m in third.models] == ["model"]


@pytest.mark.integration
def test_the_examples_run_on_their_own_and_under_the_runner(tmp_path):
    for example in sorted(EXAMPLES.glob("*.py")):
        subprocess.run([PYTHON, str(example), "--batch_size", "2"], cwd=tmp_path, check=True, capture_output=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}, timeout=300)
    out = tmp_path / "out"
    listing = run_runner(*COMMON, f"--search-dir={EXAMPLES}", "--dynamo=None", "--test=eval", "--dry-run",
                         f"--output-dirname={out}", check_rc=0).stdout
    for name in ("plain_mlp.py::model", "two_models.py::encoder", "two_models.py::head",
                 "hf_bert_from_config.py::bert"):
        assert f"#   {name}: " in listing
    run_runner(*COMMON, f"--search-dir={EXAMPLES}", "--labels=kind::plain,huggingface", "--dynamo=None",
               "--test=eval", "--test=train", f"--output-dirname={out}", check_rc=0)
    records = read_jsonl(out / "results.jsonl")
    assert {(r["model"]["model_name"], r["experiment"]["test"], r["status"]) for r in records} == {
        (name, test, "ok") for name in ("plain_mlp.py::model", "hf_bert_from_config.py::bert")
        for test in ("eval", "train")}
    assert json.dumps([r["model"]["labels"]["author"] for r in records]).count("ptbench") == 4
