"""--dynamic (static, batch, unbacked, all; experiment key `dynamic`) and --dynamo=export / export_nonstrict /
aot_inductor: the key in old and new records and in the resume fingerprint, labels, the support rules, the
batch cycle; sweeps that show the batch really varied with its recompile count, export passing and failing
(a data-dependent branch) and an AOTInductor package timed (benchmarks/features/dynamic/__init__.py)."""

import csv
import io

import pytest

from helpers import by_model, call_runner, call_tool, read_jsonl, run_runner, run_tool

from benchmarks.config import experiment_config
from benchmarks.results import records
from benchmarks.results.measurement import Measurement
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities

CPU = Capabilities(dynamo_backends=("inductor", "aot_eager", "openxla"), torch_xla_error=None,
                          xla_devices=("CPU",))


def exp(**kw):
    base = dict(accelerator="cpu", xla=None, dynamo="inductor", test="eval")
    base.update(kw)
    return experiment_config.ExperimentConfig(**base)


def test_dynamic_key_defaults_to_static_and_bad_values_are_refused():
    data = exp(dynamic="batch").to_dict()
    assert list(data)[:len(experiment_config.EXPERIMENT_KEYS)] == list(experiment_config.EXPERIMENT_KEYS)
    assert experiment_config.ExperimentConfig.from_dict(data).dynamic == "batch"
    old = {k: v for k, v in exp().to_dict().items() if k != "dynamic"}
    assert experiment_config.ExperimentConfig.from_dict(old).dynamic == "static"
    with pytest.raises(experiment_config.ConfigError, match="dynamic must be one of static, batch, unbacked, all"):
        experiment_config.ExperimentConfig.from_dict(dict(old, dynamic="sometimes"))
    assert "dyn-batch" in exp(dynamic="batch").slug() and "dyn-" not in exp().slug()
    assert "dynamic" not in exp().describe() and "dynamic=all" in exp(dynamic="all").describe()


def test_fingerprint_of_static_is_the_old_one_and_others_differ():
    model = {"suite_name": "dummy", "model_name": "mlp"}
    old = {k: v for k, v in exp().to_dict().items() if k != "dynamic"}
    assert records.fingerprint(model, exp().to_dict(), None, False) == records.fingerprint(model, old, None, False)
    fingerprints = {records.fingerprint(model, exp(dynamic=d).to_dict(), None, False)
                    for d in ("static", "batch", "unbacked", "all")}
    assert len(fingerprints) == 4


def test_labels_show_dynamic_only_off_its_default():
    def record(**kw):
        return {"model": {"suite_name": "dummy", "model_name": "mlp"}, "experiment": exp(**kw).to_dict(),
                "metrics": {}}

    assert Measurement(record()).backend == "inductor"
    assert Measurement(record(dynamic="batch")).backend == "inductor[batch]"
    assert Measurement(record(dynamo="export")).backend == "export"
    assert Measurement(record(dynamic="all")).labels["dynamic"] == "all"


@pytest.mark.parametrize("config, rule", [
    (exp(dynamo=None, dynamic="batch"), "dynamic-needs-dynamo"),
    (exp(dynamo=None, xla="PJRT", dynamic="all"), "dynamic-needs-dynamo"),
    (exp(dynamo="export", dynamic="batch"), "dynamic-needs-dynamo"),
    (exp(dynamo="export", test="train"), "export-eval-only"),
    (exp(dynamo="aot_inductor", test="train"), "export-eval-only"),
    (exp(dynamo="export_nonstrict", xla="PJRT"), "export-not-with-xla"),
])
def test_each_drop_rule_says_why(config, rule):
    for name, blocked, reason in matrix.SUPPORT_RULES:
        if blocked(config, CPU):
            assert name == rule and reason(config, CPU)
            return
    pytest.fail(f"{config.describe()} was not dropped")


def test_export_names_need_no_registered_backend_and_dynamic_axes_run_on_dynamo():
    for config in (exp(dynamo="export"), exp(dynamo="export_nonstrict"), exp(dynamo="aot_inductor"),
                   exp(dynamic="batch"), exp(dynamo="aot_eager", dynamic="all"), exp(dynamo="openxla", xla="PJRT",
                                                                                   dynamic="batch")):
        assert matrix.unsupported_reason(config, CPU) is None, config.describe()


def test_expand_puts_dynamic_after_quantization():
    configs = matrix.expand({"accelerator": ["cpu"], "xla": [None], "dynamo": ["inductor"], "test": ["eval"],
                             "dynamic": ["static", "batch", "static"]})
    assert [c.dynamic for c in configs] == ["static", "batch"]


def test_bad_dynamic_value_is_one_line_and_exit_2():
    result = call_runner("--suite-name=dummy", "--dynamic=sometimes", "--dry-run", check_rc=2)
    assert result.stderr.count("\n") == 1 and "--dynamic" in result.stderr and "Traceback" not in result.stderr
    result = call_runner('--model-config={"suite_name": "dummy", "model_name": "mlp"}',
                        '--experiment-config={"accelerator": "cpu", "xla": null, "dynamo": "inductor", '
                        '"test": "eval", "dynamic": "sometimes"}', check_rc=2)
    assert "dynamic must be one of" in result.stderr and "Traceback" not in result.stderr


def test_unbacked_marks_take_what_this_torchs_mark_unbacked_takes_and_name_what_it_lacks(monkeypatch):
    import inspect

    import torch

    from benchmarks.child import torch_internals
    from benchmarks.features.dynamic import child as dynamic_child

    monkeypatch.setattr(torch_internals, "ABSENT", {})
    taken = set(inspect.signature(torch._dynamo.decorators.mark_unbacked).parameters)
    found = dynamic_child.unbacked_arguments(16)
    assert found == {k: v for k, v in {"hint_override": 16, "shape_id": "batch"}.items() if k in taken}
    lacking = [name for name in ("hint_override", "shape_id") if name not in taken]  # torch 2.9: both
    reason = torch_internals.absent() and torch_internals.absent().get("unbacked_arguments")
    assert bool(reason) == bool(lacking) and all(name in reason for name in lacking)

    # A newer torch's mark_unbacked (hint_override, shape_id): both are passed, nothing is absent.
    calls = []
    original = torch._dynamo.decorators.mark_unbacked

    def newer(t, index, hint_override=None, strict=False, specialize_on=None, shape_id=None):
        calls.append((tuple(t.shape), index, hint_override, shape_id))
        original(t, index, strict=strict, specialize_on=specialize_on)

    monkeypatch.setattr(torch._dynamo.decorators, "mark_unbacked", newer)
    monkeypatch.setattr(torch_internals, "ABSENT", {})
    source = dynamic_child.VaryingBatch((torch.randn(16, 4), torch.randn(3)), {"mask": torch.ones(16)}, 16,
                                         dynamic_child.UNBACKED)
    assert torch_internals.absent() is None
    assert sorted(calls) == sorted([((size, 4), 0, 16, "batch") for size in (16, 13, 19)]
                                   + [((size,), 0, 16, "batch") for size in (16, 13, 19)])
    assert source.summary()["unbacked_arguments"] == {"hint_override": 16, "shape_id": "batch"}
    assert source.summary()["batch_dimension"] == "unbacked"


def test_batch_cycle_varies_by_a_fifth_and_never_runs_one_row():
    from benchmarks.features.dynamic import child as dynamic_child

    assert dynamic_child.batch_cycle(16) == [16, 13, 19]
    assert dynamic_child.batch_cycle(2) == [2]
    assert all(size >= 2 for size in dynamic_child.batch_cycle(3))


def test_resized_inputs_keep_other_dimensions_and_leaves():
    import torch

    from benchmarks.features.dynamic import child as dynamic_child

    x = torch.arange(8.0).reshape(4, 2)
    tree = (x, {"mask": torch.ones(4, 3), "scale": torch.tensor(2.0), "n": 4, "other": torch.ones(5)})
    bigger = dynamic_child.resized(tree, 4, 6)
    assert bigger[0].shape == (6, 2) and torch.equal(bigger[0][4:], x[:2])
    assert bigger[1]["mask"].shape == (6, 3) and bigger[1]["scale"].dim() == 0 and bigger[1]["n"] == 4
    assert bigger[1]["other"].shape == (5,)
    assert dynamic_child.resized(tree, 4, 3)[0].shape == (3, 2)


@pytest.mark.integration
def test_varying_batch_counts_recompiles_in_process():
    # Without a dynamic mark, dynamo recompiles at the second size (then goes automatically dynamic).
    import torch

    from benchmarks.features.compile_options import child as compile_options_child
    from benchmarks.features.dynamic import child as dynamic_child

    torch._dynamo.reset()
    module = torch.nn.Linear(4, 2)
    compiled = torch.compile(module, backend="eager")
    source = dynamic_child.VaryingBatch((torch.randn(16, 4),), {}, 16, mark=None)
    for _ in range(6):
        args, kwargs = source()
        assert compiled(*args, **kwargs).shape[0] == args[0].shape[0]
    summary = source.summary()
    assert summary["batch_sizes"] == [16, 13, 19]
    assert summary["iterations_by_batch_size"] == {"13": 2, "16": 2, "19": 2}
    assert compile_options_child.dynamo_stats()["recompiles"] >= 1  # the record's count of them
    source.stop()
    assert source()[0][0].shape[0] == 16


@pytest.mark.integration
def test_backed_and_unbacked_batches_side_by_side_and_compare_pairs_them(tmp_path):
    # The dynamo harness's --compare-backed-unbacked: one sweep, both markings of the batch dimension.
    run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=aot_eager",
               "--test=eval", "--dynamic=batch", "--dynamic=unbacked", "--verify", "--repeat=3", "--warmup=1",
               f"--output-dirname={tmp_path}", check_rc=0)
    found = {r["experiment"]["dynamic"]: r for r in read_jsonl(tmp_path / "results.jsonl")}
    assert sorted(found) == ["batch", "unbacked"]
    for dynamic, record in found.items():
        assert record["status"] == "ok" and record["accuracy"] == "pass", record.get("error")
        assert record["dynamo_stats"]["recompiles"] == 0  # one graph for every batch size, either way
        assert set(record["dynamic_shapes"]["iterations_by_batch_size"]) == {"13", "16", "19"}
    assert found["batch"]["dynamic_shapes"]["batch_dimension"] == "backed"
    unbacked = found["unbacked"]
    assert unbacked["dynamic_shapes"]["batch_dimension"] == "unbacked"
    given = unbacked["dynamic_shapes"]["unbacked_arguments"]
    if len(given) < 2:  # this torch's mark_unbacked lacks hint_override or shape_id (2.9 lacks both): said why
        assert "mark_unbacked" in unbacked["absent"]["unbacked_arguments"]
    assert "absent" not in found["batch"]
    result = call_tool("compare.py", str(tmp_path), "--pair", "dynamic=batch:unbacked", "--format=csv")
    assert result.returncode in (0, 1), result.stderr
    (row,) = list(csv.DictReader(io.StringIO(result.stdout)))[:1]
    assert row["model_name"] == "mlp" and "dynamic=batch:unbacked" in row["config"]
    assert row["control_median"] and row["treatment_median"]


@pytest.mark.integration
def test_dynamic_batch_sweep_varies_the_batch_and_records_recompiles(tmp_path):
    run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=aot_eager",
               "--test=eval", "--test=train", "--dynamic=batch", "--dynamic=all", "--repeat=3", "--warmup=1",
               f"--output-dirname={tmp_path}", check_rc=0)
    found = read_jsonl(tmp_path / "results.jsonl")
    assert len(found) == 4 and all(r["status"] == "ok" for r in found), [r.get("error") for r in found]
    for record in found:
        shapes = record["dynamic_shapes"]
        assert shapes["batch_sizes"] == [16, 13, 19]
        assert set(shapes["iterations_by_batch_size"]) == {"13", "16", "19"}  # the batch really varied
        assert record["dynamo_stats"]["recompiles"] == 0  # a dynamic batch dimension compiles once
        assert record["experiment"]["batch_size"] == 16
    csv_path = tmp_path / "analysis.csv"
    run_tool("result_analyzer.py", str(tmp_path / "results.jsonl"), f"--output={csv_path}", check_rc=0)
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["experiment_dynamic"] for row in rows) == ["all", "all", "batch", "batch"]


@pytest.mark.integration
def test_export_passes_on_a_plain_model_and_aot_inductor_runs_its_package(tmp_path):
    run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=export",
               "--dynamo=export_nonstrict", "--dynamo=aot_inductor", "--test=eval", "--repeat=2", "--warmup=1",
               f"--output-dirname={tmp_path}", check_rc=0)
    found = {r["experiment"]["dynamo"]: r for r in read_jsonl(tmp_path / "results.jsonl")}
    assert set(found) == {"export", "export_nonstrict", "aot_inductor"}
    for name, record in found.items():
        assert record["status"] == "ok" and record["export"]["passed"], record.get("error")
        assert record["export"]["strict"] == (name == "export") and record["export"]["export_seconds"] > 0
        assert len(record["metrics"]["per_iter_time"]) == 2
    aoti = found["aot_inductor"]["export"]
    assert aoti["aot_compile_seconds"] > 0 and aoti["load_seconds"] >= 0
    assert (tmp_path / found["aot_inductor"]["artifacts"]["aoti-package"]).is_file()


@pytest.mark.integration
def test_export_fails_on_data_dependent_control_flow_with_the_reason(tmp_path):
    run_runner("--suite-name=faults", "-k", "^graph_break$", "--accelerator=cpu", "--xla=None", "--dynamo=export",
               "--test=eval", "--repeat=1", "--warmup=1", f"--output-dirname={tmp_path}", check_rc=1)  # an error record: bad news
    record = by_model(read_jsonl(tmp_path / "results.jsonl"))["graph_break"]
    assert record["status"] == "error" and record["error"]["phase"] == "compile"
    assert record["error"]["type"] == "ExportFailed" and "torch.export (strict) failed" in record["error"]["message"]
    assert record["export"]["passed"] is False and record["export"]["reason"]


def test_end_of_sweep_table_keeps_dynamic_configs_apart():
    from benchmarks.runner import progress

    def record(ms, **kw):
        return {"model": {"suite_name": "dummy", "model_name": "mlp"}, "experiment": exp(**kw).to_dict(),
                "status": "ok", "requested_batch_size": None, "warmup": 1, "metrics": {"per_iter_time": [ms / 1e3] * 3}}

    table = progress.speedup_table([record(2.0, dynamo=None), record(1.0), record(1.5, dynamic="batch")])
    assert "inductor ms" in table and "inductor[batch] ms" in table
    assert "1.500 (1.33x)" in table and "1.000 (2.00x)" in table  # eager runs static: the baseline of both


def test_end_of_sweep_table_drops_shared_axes_and_compares_with_eager_at_the_same_precision():
    from benchmarks.runner import progress

    def record(ms, **kw):
        data = exp(**kw).to_dict()
        return {"model": {"suite_name": "dummy", "model_name": "mlp"}, "experiment": data, "status": "ok",
                "requested_batch_size": None, "warmup": 1, "metrics": {"per_iter_time": [ms / 1e3] * 3}}

    def shared(**kw):  # an extra axis every record of the sweep has (a microbench sweep's one dtype)
        rec = record(**kw)
        rec["experiment"]["dtype"] = "float32"
        return rec

    table = progress.speedup_table([shared(ms=2.0, dynamo=None), shared(ms=1.0)])
    header, _, row = table.splitlines()
    assert "eager ms" in header and "inductor ms" in header and "float32" not in header
    assert "(2.00x)" in row  # against eager: the shared axis does not hide the baseline

    table = progress.speedup_table([record(4.0, dynamo=None), record(8.0, dynamo=None, precision="bf16"),
                                    record(2.0, precision="bf16"), record(1.0)])
    header, _, row = table.splitlines()
    assert "eager[bf16] ms" in header and "inductor[bf16] ms" in header
    # inductor[bf16] against eager[bf16] (8 / 2), inductor against eager (4 / 1): never across precisions
    assert "2.000 (4.00x)" in row and "1.000 (4.00x)" in row
