"""Golden inputs and outputs: the entry's files and manifest, the comparison and its figures, the flags' refusals
(fast); then real children: save on eager, check on eager, Inductor and XLA (lazy and openxla; pass), and a perturbed result,
a corrupt file, rescaled weights or inputs, another model's entry and a missing one, each recorded with its status and reason."""

import json
import shutil

import pytest

from helpers import XLA, call_runner, read_jsonl, run_runner

from benchmarks.child.accuracy import golden, golden_store, tensor_tree_file
from benchmarks.config import experiment_config
from benchmarks.results.accuracy_status import GoldenStatus

COMMON = ["--suite-name=dummy", "--accelerator=cpu", "--repeat=1", "--warmup=1"]


def exp(test="eval", batch_size=None):
    return experiment_config.ExperimentConfig("cpu", None, None, test, batch_size=batch_size, precision="fp32")


def test_a_tree_of_tensors_reads_back_as_it_was_written(tmp_path):
    import torch

    tree = ((torch.arange(6.0).reshape(2, 3)[:, 1], torch.tensor([1, 2])), {"mask": torch.tensor([True]), "n": 3,
                                                                              "name": "x", "none": None})
    tensor_tree_file.save(tree, str(tmp_path / "t.safetensors"))
    back = tensor_tree_file.load(str(tmp_path / "t.safetensors"))
    assert isinstance(back, tuple) and isinstance(back[0], tuple)
    assert torch.equal(back[0][0], torch.tensor([1.0, 4.0])) and torch.equal(back[0][1], torch.tensor([1, 2]))
    assert torch.equal(back[1]["mask"], torch.tensor([True])) and back[1]["n"] == 3 and back[1]["none"] is None
    (tmp_path / "bad.safetensors").write_bytes(b"not a tensor file")
    with pytest.raises(tensor_tree_file.TreeFileError, match="not a readable safetensors file"):
        tensor_tree_file.load(str(tmp_path / "bad.safetensors"))


def test_dict_keys_keep_their_type_and_dotted_names_do_not_collide(tmp_path):
    import torch

    tree = {0: torch.tensor([1.0]), "0": torch.tensor([2.0]), "a.b": torch.tensor([3.0]),
            "a": {"b": torch.tensor([4.0]), None: torch.tensor([5.0])}, 1.5: [torch.tensor([6.0])]}
    path = str(tmp_path / "keys.safetensors")
    tensor_tree_file.save(tree, path)
    back = tensor_tree_file.load(path)
    assert list(back) == [0, "0", "a.b", "a", 1.5] and list(back["a"]) == ["b", None]
    assert [float(v) for v in (back[0], back["0"], back["a.b"], back["a"]["b"], back["a"][None], back[1.5][0])] == [
        1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert golden.compare(tree, back, atol=0.0, rtol=0.0).status() == (GoldenStatus.PASS, None)
    with pytest.raises(tensor_tree_file.TreeFileError, match=r"a dict key of type tuple \(\(1, 2\)\) at \[\"a\"\]"):
        tensor_tree_file.save({"a": {(1, 2): torch.ones(1)}}, path)


def test_the_comparison_gives_the_figures_and_the_status():
    import torch

    expected = {"out": torch.tensor([1.0, -2.0, 0.0]), "ids": torch.tensor([1, 2])}
    close = {"out": torch.tensor([1.00001, -2.0, 0.0]), "ids": torch.tensor([1, 2])}
    figures = golden.compare(expected, close, atol=1e-4, rtol=1e-3)
    assert figures.status() == (GoldenStatus.PASS, None) and figures.elements == 3
    assert figures.max_abs_error == pytest.approx(1e-5, rel=1e-2)
    far = golden.compare(expected, {"out": torch.tensor([1.1, -2.0, 0.5]), "ids": torch.tensor([1, 3])}, 1e-4, 1e-3)
    status, message = far.status()
    assert status == GoldenStatus.FAIL_GOLDEN and "['ids']: 1 of 2 elements differ" in message
    assert far.max_abs_error == pytest.approx(0.5) and far.max_rel_error == pytest.approx(0.1) and far.outside == 2
    shape = golden.compare(expected, {"out": torch.zeros(4), "ids": torch.tensor([1, 2])}, 1e-4, 1e-3)
    assert "golden torch.float32 (3,)" in shape.status()[1]
    assert golden.lowest_float_dtype({"a": torch.zeros(1), "b": torch.zeros(1, dtype=torch.bfloat16)}) == "bfloat16"


def test_an_entry_of_another_config_or_format_is_refused_with_the_reason(tmp_path):
    mlp, cnn = {"suite_name": "dummy", "model_name": "mlp"}, {"suite_name": "dummy", "model_name": "cnn"}
    directory = golden_store.entry_dir(str(tmp_path), mlp, exp())
    assert directory == str(tmp_path / "dummy" / "mlp" / "eval-fp32")
    assert golden_store.entry_dir(str(tmp_path), mlp, exp("train", 4)).endswith("train-fp32-bs4")
    assert golden_store.read_manifest(directory, mlp, exp()) is None  # no entry: no_golden, not a refusal
    manifest = golden_store.new_manifest(mlp, exp(), 1, 1e-4, 1e-3, "float32")
    assert manifest["versions"]["torch"] and manifest["machine"]["hostname"]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "manifest.json").write_text(json.dumps(manifest))
    single = golden_store.entry_dir(str(tmp_path / "m"), cnn, exp())  # a directory that is one entry
    assert single == str(tmp_path / "m") and golden_store.read_manifest(single, mlp, exp())["model"] == mlp
    with pytest.raises(golden_store.GoldenRefused, match="golden of another config: model dummy/mlp, this config's "
                                                         "is dummy/cnn"):
        golden_store.read_manifest(single, cnn, exp())
    with pytest.raises(golden_store.GoldenRefused, match="test \"eval\", this config's is \"train\""):
        golden_store.read_manifest(single, mlp, exp("train"))
    (tmp_path / "m" / "manifest.json").write_text(json.dumps({**manifest, "format_version": 7}))
    with pytest.raises(golden_store.GoldenRefused, match="golden format version 7; this runner reads version 1"):
        golden_store.read_manifest(single, mlp, exp())


def test_an_entry_saved_in_another_checkout_fits_and_another_model_is_still_refused(tmp_path):
    here = {"suite_name": "files", "model_name": "net.py::Net", "params": {"image_size": 32},
            "path": "/checkout/a/models/net.py", "labels": {"kind": ["cnn"]}}
    there = {**here, "path": "/checkout/b/models/net.py", "labels": {}}  # saved elsewhere, labels edited since
    manifest = golden_store.new_manifest(there, exp(), 1, 1e-4, 1e-3, "float32")
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert golden_store.read_manifest(str(tmp_path), here, exp())["format"] == golden_store.FORMAT
    old_style = {**manifest, "model": dict(sorted(there.items()))}  # an entry that stored the whole model config
    (tmp_path / "manifest.json").write_text(json.dumps(old_style))
    assert golden_store.read_manifest(str(tmp_path), here, exp())["format"] == golden_store.FORMAT
    for other in ({**here, "model_name": "net.py::Other"}, {**here, "params": {"image_size": 64}},
                  {**here, "script_model": "encoder"}):
        with pytest.raises(golden_store.GoldenRefused, match="golden of another config: model"):
            golden_store.read_manifest(str(tmp_path), other, exp())


def test_an_entry_rewritten_by_a_save_that_crashes_has_no_manifest(tmp_path):
    import torch

    mlp, entry = {"suite_name": "dummy", "model_name": "mlp"}, str(tmp_path)
    manifest = golden_store.new_manifest(mlp, exp(), 1, 1e-4, 1e-3, "float32")
    trees = {"weights": {"w": torch.ones(2)}, "inputs": (torch.ones(1, 2),), "expected": torch.zeros(1)}
    golden_store.write_entry(entry, manifest, trees)
    assert golden_store.read_manifest(entry, mlp, exp()) == manifest
    with pytest.raises(TypeError):  # the last file can't be written (a value JSON can't hold)
        golden_store.write_entry(entry, manifest, {**trees, "expected": {"bad": object()}})
    assert golden_store.read_manifest(entry, mlp, exp()) is None  # no_golden, not the old manifest over new weights


def test_contradicting_golden_flags_are_one_line_and_exit_2(tmp_path):
    both = call_runner(*COMMON, f"--save-golden={tmp_path}", f"--golden={tmp_path}", "--dry-run", check_rc=2)
    assert "pass one of them" in both.stderr and both.stderr.count("\n") == 1
    missing = call_runner(*COMMON, f"--golden={tmp_path / 'nowhere'}", "--dry-run", check_rc=2)
    assert "no such directory" in missing.stderr and missing.stderr.count("\n") == 1


def test_the_golden_flags_are_part_of_the_fingerprint_and_a_plain_config_keeps_its_old_one(tmp_path):
    from benchmarks.config.feature_options import GoldenOptions
    from benchmarks.results import records

    model, experiment = {"suite_name": "dummy", "model_name": "mlp"}, exp().to_dict()
    plain = records.fingerprint(model, experiment, None, False)
    assert plain == ('{"experiment": {"accelerator": "cpu", "batch_size": null, "dynamo": null, '
                     '"enable_functionalization": false, "test": "eval", "torch_xla2": null, "xla": null, '
                     '"xla_flags": null}, "model": {"model_name": "mlp", "suite_name": "dummy"}, "verify": false}')
    assert GoldenOptions().request() is None
    record = records.new_record(model, experiment, repeat=1, iterations_per_run=1, warmup=1, timestamp=1.0,
                                verify=False, requested_batch_size=None, environment={},
                                golden=GoldenOptions().request())
    assert "golden_request" not in record and records.record_fingerprint(record) == plain
    checked = GoldenOptions(check_dir=str(tmp_path), atol=0.1).request()
    assert checked == {"check_dir": str(tmp_path), "atol": 0.1}
    record = records.new_record(model, experiment, repeat=1, iterations_per_run=1, warmup=1, timestamp=1.0,
                                verify=False, requested_batch_size=None, environment={}, golden=checked)
    assert list(record)[list(record).index("verify") + 1] == "golden_request"
    fingerprints = {plain, records.record_fingerprint(record),
                    records.fingerprint(model, experiment, None, False, golden={"check_dir": str(tmp_path)}),
                    records.fingerprint(model, experiment, None, False, golden={"save_dir": str(tmp_path)})}
    assert len(fingerprints) == 4
    assert records.RecordFingerprints()(record) == records.record_fingerprint(record)


@pytest.mark.integration
def test_a_crash_while_the_golden_is_saved_is_eagers(tmp_path):
    """--save-golden runs eager before the config's model is built: a crash there is eager's, not the backend's."""
    out = tmp_path / "out"
    run_runner("--suite-name=faults", "--accelerator=cpu", "--repeat=1", "--warmup=1", "-k", "^segfault$",
               "--xla=None", "--dynamo=None", "--test=eval", f"--save-golden={tmp_path / 'store'}",
               f"--output-dirname={out}", check_rc=1)
    [record] = read_jsonl(out / "results.jsonl")
    assert record["status"] == "crash" and "SIGSEGV" in record["error"]["message"]
    assert record["error"]["phase"] == "reference" and record["accuracy"] == "eager_fail_to_run"


def golden_of(records: list) -> dict:
    return {(r["model"]["model_name"], r["experiment"]["xla"], r["experiment"]["dynamo"], r["experiment"]["test"]):
            r["golden"] for r in records}


@pytest.fixture(scope="module")
def golden_runs(tmp_path_factory):
    store, saved_out, check_out, bad_out = (tmp_path_factory.mktemp(n) for n in ("store", "saved", "check", "bad"))
    run_runner(*COMMON, "-k", "^(mlp|multi_output)$", "--xla=None", "--dynamo=None", "--test=eval", "--test=train",
               f"--save-golden={store}", f"--output-dirname={saved_out}", check_rc=0)
    run_runner(*COMMON, "-k", "^mlp$", "--xla=None", "--xla=PJRT", "--dynamo=None", "--dynamo=inductor",
               "--dynamo=openxla", "--test=eval", "--test=train", f"--golden={store}", f"--output-dirname={check_out}",
               check_rc=0)
    # A copy with a perturbed result, a corrupt weights file, scaled weights and scaled inputs (valid files: the
    # model's own seeded weights and inputs would pass; only apply loads the inputs), and mlp's entry where cnn's
    # belongs.
    import torch

    broken = tmp_path_factory.mktemp("broken") / "golden"
    shutil.copytree(store, broken)
    entry = broken / "dummy" / "mlp" / "eval-fp32"
    expected = tensor_tree_file.load(str(entry / "expected.safetensors"))
    tensor_tree_file.save(expected * 1.01 + 0.001, str(entry / "expected.safetensors"))
    (broken / "dummy" / "mlp" / "train-fp32" / "weights.safetensors").write_bytes(b"\0" * 10)
    from benchmarks.suites.tensor_trees import map_tensors

    for test, kind in (("eval", "weights"), ("train", "inputs")):
        scaled = str(broken / "dummy" / "multi_output" / f"{test}-fp32" / f"{kind}.safetensors")
        tree = tensor_tree_file.load(scaled)
        tensor_tree_file.save(map_tensors(tree, lambda t: t * 1.5 if t.is_floating_point() else t), scaled)
    shutil.copytree(entry, broken / "dummy" / "cnn" / "eval-fp32")
    run_runner(*COMMON, "-k", "^(mlp|cnn|multi_output)$", "--xla=None", "--dynamo=None", "--test=eval",
               "--test=train", f"--golden={broken}", f"--output-dirname={bad_out}", check_rc=1)  # golden failures: bad news
    return (read_jsonl(saved_out / "results.jsonl"), read_jsonl(check_out / "results.jsonl"),
            read_jsonl(bad_out / "results.jsonl"), store, broken, expected, torch)


@pytest.mark.integration
def test_saved_then_checked_on_eager_inductor_and_xla_pass(golden_runs):
    saved, checked, _, store, _, _, _ = golden_runs
    for record in saved:
        assert record["status"] == "ok" and record["golden"]["status"] == "saved", record.get("golden")
    manifest = json.loads((store / "dummy" / "mlp" / "train-fp32" / "manifest.json").read_text())
    assert manifest["steps"] == 2 and manifest["dtype"] == "float32" and manifest["versions"]["torch"]
    got = golden_of(checked)
    # eager, inductor, XLA lazy tensor, XLA + openxla x eval, train (XLA's dropped where torch-xla can't run)
    assert len(got) == (8 if XLA else 4)
    for key, value in got.items():
        assert value["status"] == "pass", (key, value)
        assert value["max_abs_error"] <= value["atol"] and value["elements_outside"] == 0
        assert value["saved"]["versions"]["torch"] == manifest["versions"]["torch"]


@pytest.mark.integration
def test_a_perturbed_a_corrupt_a_rescaled_another_models_and_a_missing_entry_are_recorded(golden_runs):
    _, _, bad, _, broken, expected, torch = golden_runs
    assert all(r["status"] == "ok" for r in bad)  # timing never depends on the golden check
    assert all(r["accuracy"] == r["golden"]["status"] for r in bad)  # the record's verdict (no --verify here)
    got = golden_of(bad)
    perturbed = got[("mlp", None, None, "eval")]
    assert perturbed["status"] == "fail_golden" and "elements outside atol + rtol" in perturbed["message"]
    largest = float((expected * 0.01 + 0.001).abs().max())
    assert perturbed["max_abs_error"] == pytest.approx(largest, rel=1e-3)
    assert perturbed["max_rel_error"] > 0.0099 and perturbed["elements_outside"] > 0
    corrupt = got[("mlp", None, None, "train")]
    assert corrupt["status"] == "bad_golden" and corrupt["path"].endswith("train-fp32/weights.safetensors")
    assert "not a readable safetensors file" in corrupt["message"]
    other = got[("cnn", None, None, "eval")]
    assert other["status"] == "bad_golden" and other["path"].endswith("cnn/eval-fp32/manifest.json")
    assert "golden of another config: model dummy/mlp, this config's is dummy/cnn" in other["message"]
    for test in ("eval", "train"):  # the stored weights (eval), the stored inputs (train) were used, not seeded ones
        rescaled = got[("multi_output", None, None, test)]
        assert rescaled["status"] == "fail_golden" and rescaled["elements_outside"] > 0, rescaled
    missing = got[("cnn", None, None, "train")]
    assert missing["status"] == "no_golden" and missing["path"].endswith("manifest.json")
    assert "does not exist" in missing["message"]


@pytest.mark.integration
def test_a_sweep_with_golden_flags_runs_again_after_a_plain_one_and_resumes_itself(tmp_path):
    store, out = tmp_path / "store", tmp_path / "out"
    sweep = [*COMMON, "-k", "^mlp$", "--xla=None", "--dynamo=None", "--test=eval", f"--output-dirname={out}"]

    def run(*flags):
        return run_runner(*sweep, *flags, check_rc=0).stderr

    assert "1 to run, 0 already in" in run()
    assert "0 to run, 1 already in" in run()  # plain twice: skipped
    assert "1 to run, 0 already in" in run(f"--save-golden={store}")  # saving is another run
    assert "1 to run, 0 already in" in run(f"--golden={store}")  # so is checking, after a plain run and a save
    assert "0 to run, 1 already in" in run(f"--golden={store}")  # the same check: skipped
    assert "1 to run, 0 already in" in run(f"--golden={store}", "--golden-atol=0.5")  # another tolerance
    found = read_jsonl(out / "results.jsonl")
    assert [r.get("golden_request") for r in found] == [
        None, {"save_dir": str(store)}, {"check_dir": str(store)}, {"check_dir": str(store), "atol": 0.5}]
    assert [(r.get("golden") or {}).get("status") for r in found] == [None, "saved", "pass", "pass"]
