"""--batch-invariant in the child (features/batch_invariant/child.py): the forward at the config's batch N, then N/2, ..., 1,
each sample's output against its own at N, bit by bit. A row-wise model passes; a model that normalises over the
batch fails, naming the first batch size that differed and the largest difference; what can't be checked (batch 1, a
train config, inputs without the batch dimension) says why; Inductor's setting is set on CUDA or named absent. Real
torch, eager steps in this process; the sweeps are the integration tests."""

import types

import pytest

from helpers import records_by_slug, run_runner, run_tool

torch = pytest.importorskip("torch")

from benchmarks.child import measured_loop, torch_internals  # noqa: E402
from benchmarks.child.config_hooks import Verdict  # noqa: E402
from benchmarks.config.experiment_config import ExperimentConfig  # noqa: E402
from benchmarks.features.batch_invariant import child as batch_invariant_child
from benchmarks.results.accuracy_status import AccuracyStatus  # noqa: E402
from benchmarks.suites import BenchmarkModel, faults_models  # noqa: E402


def run_of(model, batch_size=4, test="eval", inputs=None):
    """What the hook reads of the child's run (config_run.ConfigRun), eager."""
    experiment = ExperimentConfig("cpu", None, None, test, batch_invariant=True)
    args = inputs if inputs is not None else (torch.randn(batch_size, 8, generator=torch.Generator().manual_seed(0)),)
    bm = BenchmarkModel(model.eval(), args, batch_size)
    run = types.SimpleNamespace(experiment=experiment, bm=bm, module=bm.module, args=args, kwargs={},
                                record={"status": "ok"}, diag=types.SimpleNamespace(fullgraph=False), phases=[])
    run.channel = types.SimpleNamespace(set_phase=run.phases.append)
    return run


def checked(run):
    hook = batch_invariant_child.hook_for(True, run.experiment)
    hook.setup(run)
    hook.check(run)
    return hook.finish(run.record), run.record["batch_invariance"]


def test_a_row_wise_model_passes_at_every_smaller_batch():
    verdict, state = checked(run_of(faults_models.RowWise(), batch_size=8))
    assert verdict == Verdict(AccuracyStatus.PASS, None, batch_invariant_child.REASON + ": equal")
    assert state["batch_size"] == 8 and state["batch_sizes"] == [4, 2, 1] and state["leaves_compared"] == 1
    assert state["first_differing_batch_size"] is None and state["inductor_batch_invariant"] is None  # CPU, eager
    assert all(c["identical"] and c["elements_differing"] == 0 for c in state["compared"].values())
    assert list(state["compared"]) == ["4", "2", "1"] and state["compared"]["1"]["elements_compared"] == 8


def test_a_model_normalising_over_the_batch_fails_naming_the_first_batch_size_and_the_largest_difference():
    run = run_of(faults_models.NormalisesOverBatch())
    verdict, state = checked(run)
    assert verdict.status == AccuracyStatus.FAIL_BATCH_INVARIANCE and run.phases == ["verify"]
    assert state["first_differing_batch_size"] == 2 and not state["compared"]["2"]["identical"]
    # at 1 a sample is its own mean: 0 everywhere, the farthest from its output at 4
    assert verdict.message.startswith("batch 2 differs from batch 4: 16 of 16 element(s) differ, the largest by ")
    worst = state["compared"]["1"]["max_abs_difference"]
    assert worst > state["compared"]["2"]["max_abs_difference"]
    assert verdict.message.endswith(f"; the largest difference, {worst:.6g}, at batch 1")


def test_the_dummy_mlp_is_judged_either_way_and_says_so():
    """On this machine's CPU the MLP's matmul blocks differ between batches (eager and Inductor alike); elsewhere it
    may not: either way the verdict and the figures agree."""
    from benchmarks.suites import dummy_models

    module, inputs = dummy_models.build("mlp", 16, "cpu")[:2]
    verdict, state = checked(run_of(module, 16, inputs=tuple(inputs)))
    first = state["first_differing_batch_size"]
    assert (verdict.status == AccuracyStatus.PASS) == (first is None)
    if first is not None:
        assert verdict.message.startswith(f"batch {first} differs from batch 16: ")


@pytest.mark.parametrize("batch_size, test, inputs, why", [
    (1, "eval", None, "batch size 1: no smaller batch to compare"),
    (4, "train", None, "an accuracy mode of inference (--test=eval)"),
    (4, "eval", (torch.randn(3, 8),), "no input tensor has the batch size 4 in dimension 0"),
])
def test_what_cant_be_checked_says_why_and_judges_nothing(batch_size, test, inputs, why):
    run = run_of(faults_models.RowWise(), batch_size, test, inputs)
    verdict, state = checked(run)
    assert verdict is None and state["unchecked_because"] == why and "compared" not in state
    assert run.record["warnings"] == [f"--batch-invariant: not checked: {why}"]


def test_cuda_inductor_configs_ask_for_inductors_setting_or_name_it_absent():
    import torch._inductor.config as config

    try:
        found = batch_invariant_child.inductor_batch_invariant(ExperimentConfig("cuda", None, "inductor", "eval"))
        if hasattr(config, "batch_invariant"):
            assert found is True
            config.batch_invariant = False
        else:  # torch 2.9: the config runs without it, and the record's `absent` says why
            assert found is None and torch_internals.absent()["inductor_batch_invariant"].startswith(
                f"torch {torch.__version__}: torch._inductor.config.batch_invariant could not be read (AttributeError")
        assert batch_invariant_child.inductor_batch_invariant(ExperimentConfig("cpu", None, "inductor", "eval")) is None
    finally:
        torch_internals.ABSENT.clear()


@pytest.mark.integration
def test_a_batch_invariant_sweep_passes_a_row_wise_model_and_fails_one_normalising_over_the_batch(tmp_path):
    """make bench's size: two faults models under aot_eager, eager beside it; the dashboard's row and the analyzer's
    CSV show the verdicts."""
    out = tmp_path / "out"
    result = run_runner("--suite-name=faults", "-k", "^(row_wise|normalises_over_batch)$", "--accelerator=cpu",
                        "--xla=None", "--dynamo=None", "--dynamo=aot_eager", "--test=eval", "--batch-invariant",
                        "--repeat=1", "--warmup=1", f"--output-dirname={out}")
    assert result.returncode == 1, result.stderr  # an accuracy failure: the sweep's exit status 1
    found = records_by_slug(out)
    for backend in ("eager", "aot_eager"):
        slug = f"cpu-{backend}-eval-batch-invariant"
        steady, varying = found[("row_wise", slug)], found[("normalises_over_batch", slug)]
        assert steady["status"] == varying["status"] == "ok"
        assert steady["accuracy"] == "pass" and steady["batch_invariance"]["batch_sizes"] == [2, 1]
        assert varying["accuracy"] == "fail_batch_invariance"
        assert varying["accuracy_message"].startswith("batch 2 differs from batch 4: ")
        assert varying["batch_invariance"]["first_differing_batch_size"] == 2
    dashboard = run_tool("aggregate.py", out, "--report=dashboard", "--format=csv", check_rc=0).stdout
    assert "fail_batch_invariance: normalises_over_batch" in dashboard
    run_tool("result_analyzer.py", f"--output-dirname={out}", check_rc=0)
    report = (out / "metric_report.csv").read_text()
    assert "fail_batch_invariance" in report and "batch 2 differs from batch 4" in report


@pytest.mark.integration
def test_inductor_runs_both_modes_and_says_what_this_torch_lacks(tmp_path):
    """One Inductor config under --deterministic and --batch-invariant together: the row-wise model passes both,
    and where this torch lacks Inductor's deterministic setting the record's `absent` says so."""
    out = tmp_path / "out"
    run_runner("--suite-name=faults", "-k", "^row_wise$", "--accelerator=cpu", "--xla=None", "--dynamo=inductor",
               "--test=eval", "--batch-invariant", "--deterministic", "--repeat=1", "--warmup=1",
               f"--output-dirname={out}", check_rc=0)
    [record] = records_by_slug(out).values()
    assert record["status"] == "ok" and record["accuracy"] == "pass", record.get("error")
    assert record["determinism"]["identical"] is True
    assert record["batch_invariance"]["first_differing_batch_size"] is None
    assert record["batch_invariance"]["inductor_batch_invariant"] is None  # CUDA only
    import torch._inductor.config as config

    if not hasattr(config, "deterministic"):
        assert "inductor_deterministic" in record["absent"] and record["determinism"]["inductor_deterministic"] is None
    table = run_tool("aggregate.py", out, "--report=dashboard", "--format=tab", check_rc=0).stdout
    assert "Inductor [batch-invariant] (faults): the pass rate counts" in " ".join(table.split())
