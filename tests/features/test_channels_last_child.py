"""--channels-last in the child (features/channels_last/child.py): the hook converts a built model and its 4-D inputs, asserts
the layout on the module and on every input set the step takes, and says in the record what it converted; one real
sweep sweeps it on and off with --verify and --randomize-input (dummy cnn, eager and aot_eager)."""

import types

import pytest

from helpers import records_by_slug, run_runner

torch = pytest.importorskip("torch")

from benchmarks.child import tensor_layout  # noqa: E402
from benchmarks.child.config_hooks import axis_hooks, for_config  # noqa: E402
from benchmarks.child.feature_methods import feature_child  # noqa: E402
from benchmarks.config import axes  # noqa: E402
from benchmarks.config.experiment_config import ExperimentConfig  # noqa: E402
from benchmarks.config.run_options import RunOptions  # noqa: E402
from benchmarks.features.channels_last import child as channels_last_child
from benchmarks.suites import BenchmarkModel  # noqa: E402


def built_cnn():
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    return BenchmarkModel(module, (torch.randn(2, 3, 8, 8),), 2, {"mask": torch.ones(2, 8)})


def test_each_feature_child_half_with_a_hook_gives_it_for_its_axis_value():
    with_hooks = 0
    for axis in axes.AXES:
        child = feature_child(axis.feature)
        if child is not None and hasattr(child, "hook_for"):  # a hook (or None) for any value
            with_hooks += 1
            hooks = axis_hooks(ExperimentConfig("cpu", None, "inductor", "eval", **{axis.key: axis.parse(axis.example)}))
            assert any(type(hook).__module__ == f"benchmarks.features.{axis.feature}.child" for hook in hooks), axis.key
    assert with_hooks >= 7  # channels_last, matmul_precision, deterministic, ... speedup, dynamic
    plain = axis_hooks(ExperimentConfig("cpu", None, None, "eval"))
    assert [type(hook).__name__ for hook in plain] == ["MatmulPrecision"]  # every config records its precision
    hooks = for_config(RunOptions(), ExperimentConfig("cpu", None, None, "eval", channels_last=True))
    assert [type(hook).__name__ for hook in hooks] == ["ChannelsLast", "MatmulPrecision"]


def test_the_hook_converts_every_built_model_and_asserts_the_layout_it_is_handed():
    hook = channels_last_child.ChannelsLast()
    bm = hook.built(built_cnn())
    assert tensor_layout.is_channels_last(bm.example_inputs[0]) and bm.example_kwargs["mask"].is_contiguous()
    assert tensor_layout.is_channels_last(bm.module[0].weight) and (hook.parameters, hook.inputs) == (1, 1)
    run = types.SimpleNamespace(module=bm.module, args=bm.example_inputs, kwargs=bm.example_kwargs)
    hook.before_timing(run)  # as built: passes
    run.args = (torch.randn(2, 3, 8, 8),)  # an input rebuilt contiguous: named, not timed
    with pytest.raises(channels_last_child.LayoutLost, match=r"example input \[0\]\[0\] \(shape \(2, 3, 8, 8\)"):
        hook.before_timing(run)
    assert hook.step_inputs(run, None) is None  # the fixed examples: nothing added to the timed loop
    sets = [((bm.example_inputs[0],), {}), ((torch.randn(2, 3, 8, 8),), {})]
    source = hook.step_inputs(run, iter(sets).__next__)
    assert source() is sets[0]
    with pytest.raises(channels_last_child.LayoutLost, match="input"):
        source()
    record = {}
    hook.finish(record)
    assert record["memory_format"] == {"format": "channels_last", "parameters_4d": 1, "inputs_4d": 1,
                                       "input_sets_checked": 1} and "warnings" not in record


def test_a_model_without_4d_tensors_is_warned_about():
    hook = channels_last_child.ChannelsLast()
    hook.built(BenchmarkModel(torch.nn.Linear(4, 4), (torch.randn(2, 4),), 2))
    record = {}
    hook.finish(record)
    assert record["warnings"] == ["--channels-last changed nothing: the model has no 4-D weight or input"]


@pytest.mark.integration
def test_a_sweep_runs_channels_last_on_and_off_and_verifies_against_eager(tmp_path):
    run_runner("--suite-name=dummy", "-k", "^cnn$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
               "--dynamo=aot_eager", "--test=eval", "--channels-last=on", "--channels-last=off", "--repeat=2",
               "--iterations-per-run=1",  # one call a timed run: one fresh input set each (a block would take many)
               "--warmup=1", "--verify", "--randomize-input", f"--output-dirname={tmp_path}", check_rc=0)
    found = records_by_slug(tmp_path)
    assert set(found) == {("cnn", slug) for slug in ("cpu-eager-eval", "cpu-eager-eval-channels-last",
                                                     "cpu-aot_eager-eval", "cpu-aot_eager-eval-channels-last")}
    for (_, slug), record in found.items():
        assert record["status"] == "ok" and record["accuracy"] == "pass", (slug, record.get("error"))
        on = slug.endswith("channels-last")
        assert record["experiment"]["channels_last"] is on
        assert ("memory_format" in record) is on
        if on:  # the examples (warm-up), then a fresh set per timed repeat: each checked where the step took it
            assert record["memory_format"] == {"format": "channels_last", "parameters_4d": 2, "inputs_4d": 1,
                                               "input_sets_checked": 3}
