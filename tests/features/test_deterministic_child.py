"""--deterministic in the child (features/deterministic/child.py), its bitwise comparison (child/accuracy/bitwise.py) and how the
hooks' verdicts make the record's one (config_hooks.deciding): the hook turns torch's deterministic algorithms on
and says so in the record, Inductor's `deterministic` setting is set or named absent, two runs of a model whose output
changes every call fail naming the largest difference while a deterministic one passes (training from the same
weights too), and torch's error for an operator without a deterministic implementation (`Tensor.put_`, on the CPU in
torch 2.9) names the operator. Real torch, eager steps in this process; the sweeps are the integration tests."""

import csv
import re
import types

import pytest

from helpers import records_by_slug, run_runner, run_tool

torch = pytest.importorskip("torch")

from benchmarks.child import measured_loop, torch_internals  # noqa: E402
from benchmarks.child.accuracy import bitwise  # noqa: E402
from benchmarks.child.config_hooks import Verdict, deciding  # noqa: E402
from benchmarks.config.experiment_config import ExperimentConfig  # noqa: E402
from benchmarks.features.deterministic import child as deterministic_child
from benchmarks.results.accuracy_status import AccuracyStatus  # noqa: E402
from benchmarks.suites import BenchmarkModel, faults_models  # noqa: E402


@pytest.fixture
def deterministic_off_after():
    """The hook turns a process-wide switch on (a child runs one config); put it back for the other tests."""
    yield
    torch.use_deterministic_algorithms(False)
    torch_internals.ABSENT.clear()


def run_of(model, test="eval", dynamo=None):
    """What the hook reads of the child's run (config_run.ConfigRun), with a real eager step."""
    experiment = ExperimentConfig("cpu", None, dynamo, test, deterministic=True)
    bm = BenchmarkModel(model, (torch.randn(4, 8, generator=torch.Generator().manual_seed(0)),), 4)
    run = types.SimpleNamespace(experiment=experiment, bm=bm, module=bm.module, args=bm.example_inputs, kwargs={},
                                record={"status": "ok"}, phases=[])
    run.channel = types.SimpleNamespace(set_phase=run.phases.append)
    run.example_step = lambda: measured_loop.make_step(bm, experiment, bm.module, run.args, run.kwargs)
    return run


# The changing model's step: two runs differ by it, as float32 sums it (0.000999987 or 0.001, by how many calls the
# timed blocks made, which the machine's speed decides).
STEP = faults_models.CountsItsCalls.STEP


def largest_difference(message: str) -> float:
    """The largest difference an accuracy message names ("..., the largest by 0.000999987 at output")."""
    return float(re.search(r"the largest by ([0-9.eE+-]+) at ", message).group(1))


def checked(run) -> tuple:
    hook = deterministic_child.hook_for(True, run.experiment)
    hook.setup(run)
    hook.check(run)
    return hook.finish(run.record), run.record["determinism"]


def test_a_model_whose_output_changes_every_call_fails_naming_the_largest_difference(deterministic_off_after):
    verdict, state = checked(run_of(faults_models.CountsItsCalls()))
    assert verdict.status == AccuracyStatus.FAIL_NONDETERMINISTIC
    assert verdict.message.startswith("two runs differ: 32 of 32 element(s) differ, the largest by 0.001")
    assert verdict.message.endswith(" at output") and "bit by bit" in verdict.reason
    assert state["use_deterministic_algorithms"] is True and state["fill_uninitialized_memory"] is True
    assert state["runs_compared"] == 2 and state["identical"] is False and state["where"] == "output"
    assert state["max_abs_difference"] == pytest.approx(1e-3, rel=1e-3) and state["elements_differing"] == 32
    assert state["cublas_workspace_config"] is None and state["inductor_deterministic"] is None  # CPU, eager
    assert torch.are_deterministic_algorithms_enabled()


@pytest.mark.parametrize("test", ["eval", "train"])
def test_a_deterministic_model_passes_and_training_starts_each_run_from_the_same_weights(test,
                                                                                         deterministic_off_after):
    run = run_of(faults_models.Plain(), test)
    before = {k: v.clone() for k, v in run.module.state_dict().items()}
    verdict, state = checked(run)
    assert verdict == Verdict(AccuracyStatus.PASS, None, verdict.reason) and verdict.reason.endswith(": equal")
    assert state["identical"] is True and "max_abs_difference" not in state and run.phases == ["verify"]
    if test == "train":  # each run an SGD step from the weights timing left; put back after the check
        assert all(torch.equal(before[k], v) for k, v in run.module.state_dict().items())


def test_inductor_configs_ask_for_inductors_setting_or_name_it_absent(deterministic_off_after):
    import torch._inductor.config as config

    found = deterministic_child.inductor_deterministic(ExperimentConfig("cpu", None, "inductor", "eval"))
    if hasattr(config, "deterministic"):  # torch 2.10 on
        assert found is True and config.deterministic is True
        config.deterministic = False
    else:  # torch 2.9: the config runs without it, and the record's `absent` says why
        assert found is None
        assert torch_internals.absent()["inductor_deterministic"].startswith(
            f"torch {torch.__version__}: torch._inductor.config.deterministic could not be read (AttributeError")
    assert deterministic_child.inductor_deterministic(ExperimentConfig("cpu", None, "aot_eager", "eval")) is None


def test_torchs_error_for_an_operator_without_a_deterministic_implementation_names_it(deterministic_off_after):
    """Tensor.put_ (accumulate=False) has no deterministic implementation on the CPU in torch 2.9 (most of torch's
    listed operators, index_add_ and scatter_add_ among them, raise on CUDA only)."""
    torch.use_deterministic_algorithms(True)
    with pytest.raises(RuntimeError) as raised:
        faults_models.NoDeterministicKernel()(torch.randn(4, 8))
    assert deterministic_child.operator_without_implementation(str(raised.value)) == "put_"
    wrapped = "TorchRuntimeError: Dynamo failed to run FX node: aten.put_.default does not have a deterministic " \
              "implementation, but you set 'torch.use_deterministic_algorithms(True)'"
    assert deterministic_child.operator_without_implementation(wrapped) == "aten.put_.default"
    assert deterministic_child.operator_without_implementation("some other failure") is None
    hook = deterministic_child.DeterministicMode()
    hook.after_failure(types.SimpleNamespace(record={"error": {"message": str(raised.value)}}))
    record = {"status": "error"}
    assert hook.finish(record) is None and record["determinism"] == {"no_deterministic_implementation": "put_"}


def test_bitwise_tells_zero_from_negative_zero_and_names_structure():
    same = bitwise.compare({"a": torch.tensor([1.0, float("nan")])}, {"a": torch.tensor([1.0, float("nan")])})
    assert same.identical
    signed = bitwise.compare(torch.tensor([0.0, 2.0]), torch.tensor([-0.0, 2.0]), "out")
    assert not signed.identical and signed.describe() == "1 of 2 element(s) differ, the largest by 0 at out"
    nan = bitwise.compare(torch.tensor([1.0]), torch.tensor([float("nan")]))
    assert nan.figures() == {"elements_differing": 1, "elements_compared": 1, "max_abs_difference": None,
                             "where": "output"}
    shape = bitwise.compare((torch.ones(2),), [torch.ones(3)], "out")
    assert shape.describe() == "out[0]: torch.float32 (3,), expected torch.float32 (2,)"
    assert bitwise.compare({"a": 1, "b": torch.ones(1)}, {"a": 1}).describe() == "output['b']: missing"
    ints = bitwise.compare(torch.tensor([1, 5]), torch.tensor([1, 2]))
    assert (ints.elements, ints.largest) == (1, 3.0)


def test_the_records_verdict_is_the_first_failure_else_the_last_pass():
    ours_fail = Verdict(AccuracyStatus.FAIL_NONDETERMINISTIC, "two runs differ", "why")
    ours_pass = Verdict(AccuracyStatus.PASS, None, "equal")
    assert deciding([ours_fail, AccuracyStatus.PASS]) is ours_fail  # --verify's pass doesn't hide our failure
    assert deciding([ours_pass, AccuracyStatus.FAIL_ACCURACY]) == Verdict(AccuracyStatus.FAIL_ACCURACY)
    assert deciding([ours_pass, AccuracyStatus.PASS]) == Verdict(AccuracyStatus.PASS)  # --verify's says the most
    assert deciding([ours_pass, AccuracyStatus.NOT_CHECKED]) is ours_pass  # our check judged; --verify's did not
    assert deciding([None, AccuracyStatus.NOT_CHECKED]) == Verdict(AccuracyStatus.NOT_CHECKED)
    assert deciding([None, None]) is None and deciding([]) is None


@pytest.mark.integration
def test_a_deterministic_sweep_fails_a_changing_model_passes_a_steady_one_and_names_a_missing_kernel(tmp_path):
    """make bench's size: three faults models, eager and aot_eager, under --deterministic; the dashboard's row and the
    analyzer's CSV show the verdicts."""
    out = tmp_path / "out"
    result = run_runner("--suite-name=faults", "-k", "^(counts_its_calls|no_deterministic_kernel|elementwise_chain)$",
                        "--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=aot_eager", "--test=eval",
                        "--deterministic", "--repeat=1", "--warmup=1", f"--output-dirname={out}")
    assert result.returncode == 1, result.stderr  # an accuracy failure and an error: the sweep's exit status 1
    summary = result.stdout + result.stderr
    assert "accuracy: 2 fail_nondeterministic, 2 fail_to_run, 2 pass" in summary  # judged without --verify
    found = records_by_slug(out)
    for backend in ("eager", "aot_eager"):
        slug = f"cpu-{backend}-eval-deterministic"
        changing, missing, steady = (found[(model, slug)] for model in
                                     ("counts_its_calls", "no_deterministic_kernel", "elementwise_chain"))
        assert changing["status"] == "ok" and changing["accuracy"] == "fail_nondeterministic"
        assert largest_difference(changing["accuracy_message"]) == pytest.approx(STEP, rel=1e-4)
        assert changing["determinism"]["identical"] is False
        assert steady["status"] == "ok" and steady["accuracy"] == "pass" and steady["determinism"]["identical"]
        assert missing["status"] == "error" and missing["error"]["type"] == "RuntimeError"
        assert "put_ does not have a deterministic implementation" in missing["error"]["message"]
        assert missing["determinism"]["no_deterministic_implementation"] == "put_"
        for record in (changing, missing, steady):
            assert record["experiment"]["deterministic"] is True
            assert record["determinism"]["use_deterministic_algorithms"] is True
    rows = run_tool("aggregate.py", out, "--report=dashboard", "--format=csv", check_rc=0).stdout
    assert "fail_nondeterministic: counts_its_calls" in rows and "fail_to_run: no_deterministic_kernel" in rows
    run_tool("aggregate.py", out, "-o", out / "page.html", check_rc=0)
    page = (out / "page.html").read_text()
    assert "fail_nondeterministic" in page and "aot_eager[deterministic]" in page.lower()
    run_tool("result_analyzer.py", f"--output-dirname={out}", check_rc=0)
    with open(out / "metric_report.csv", newline="") as handle:
        by_model = {(row["model_name"], row["dynamo"]): row for row in csv.DictReader(handle)}
    changing = by_model[("counts_its_calls", "aot_eager")]
    assert changing["accuracy"] == "fail_nondeterministic"
    assert largest_difference(changing["accuracy_message"]) == pytest.approx(STEP, rel=1e-4)
    assert by_model[("elementwise_chain", "aot_eager")]["accuracy"] == "pass"
