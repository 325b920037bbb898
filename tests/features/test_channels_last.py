"""--channels-last, a switch axis (experiment key `channels_last`): its flag alone, on and off swept together, a bad
word as one line, off leaving fingerprints and labels as records without the key had them, the label and slug, the
drop on XLA with its reason, and selecting records by it in compare and aggregate (no torch)."""

import pytest

from helpers import call_runner, call_tool

from benchmarks.config import axes
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.run_options import build_parser
from benchmarks.results import records, selection
from benchmarks.results.measurement import Measurement
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities
from benchmarks.suites import all_suites

CNN = {"suite_name": "dummy", "model_name": "cnn"}
CPU = Capabilities(dynamo_backends=("inductor", "openxla"), torch_xla_error=None, xla_devices=("CPU",))
UPSTREAM = {"accelerator": ["cpu"], "xla": [None, "PJRT"], "dynamo": [None], "test": ["eval"]}


def asked(*argv) -> tuple:
    return axes.BY_KEY["channels_last"].asked(build_parser(all_suites()).options(list(argv)))


def test_the_flag_alone_is_on_and_on_and_off_sweep_both():
    assert asked() == () and asked("--channels-last") == (True,)
    assert asked("--channels-last=on", "--channels-last=off") == (True, False)
    assert asked("--channels-last=OFF") == (False,) and asked("--channels-last=true") == (True,)
    configs = matrix.expand(dict(UPSTREAM, xla=[None], channels_last=[True, False]))
    assert [c.channels_last for c in configs] == [True, False]
    assert [c.channels_last for c in matrix.expand(dict(UPSTREAM, xla=[None]))] == [False]  # its default: off


def test_a_bad_word_is_one_line_and_exit_2():
    result = call_runner("--channels-last=sideways", "--dry-run", check_rc=2)
    assert result.stderr.count("\n") == 1 and "expected on or off, not 'sideways'" in result.stderr
    assert "Traceback" not in result.stderr


def test_off_is_a_record_without_the_key_and_on_is_named():
    off = ExperimentConfig("cpu", None, "inductor", "eval", channels_last=False).to_dict()
    without = {k: v for k, v in off.items() if k != "channels_last"}
    assert records.fingerprint(CNN, off, None, False) == records.fingerprint(CNN, without, None, False)
    on = dict(off, channels_last=True)
    assert records.fingerprint(CNN, on, None, False) != records.fingerprint(CNN, off, None, False)
    assert Measurement({"model": CNN, "experiment": off}).backend == "inductor"
    assert Measurement({"model": CNN, "experiment": on}).backend == "inductor[channels-last]"
    assert ExperimentConfig.from_dict(on).slug() == "cpu-inductor-eval-channels-last"
    assert ExperimentConfig.from_dict(without).channels_last is False


def test_xla_configs_are_dropped_with_the_reason():
    kept, dropped = matrix.split(matrix.expand(dict(UPSTREAM, channels_last=[True, False])), CPU)
    assert [(c.xla, c.channels_last) for c in kept] == [(None, True), (None, False), ("PJRT", False)]
    [(config, reason)] = dropped
    assert (config.xla, config.channels_last) == ("PJRT", True) and "XLA tensors have no strides" in reason


def test_records_are_selected_by_it_as_by_any_axis():
    def view(**keys):
        return Measurement({"model": CNN, "experiment": ExperimentConfig("cpu", None, None, "eval", **keys).to_dict()})

    old, off, on = view(), view(channels_last=False), view(channels_last=True)
    del old.record["experiment"]["channels_last"]
    views = [old, off, on]
    assert selection.Selection(axes={"channels_last": [True]}).select(views) == [on]
    assert selection.Selection(axes={"channels_last": [False]}).select(views) == [old, off]  # no key: its default


@pytest.mark.parametrize("tool", ["compare.py", "aggregate.py", "history.py"])
def test_every_axis_is_a_selection_flag_of_the_tools_that_select(tool):
    helps = call_tool(tool, *(["show"] if tool == "history.py" else []), "--help-all", check_rc=0).stdout
    for axis in axes.AXES:
        assert axis.flag in helps, (tool, axis.flag)


def test_a_selection_flag_parses_as_the_runner_does():
    from benchmarks.config.flags import tool_parser

    parser = tool_parser(selection.flags(axes=True), None, prog="t")
    options = parser.parse_args(["--channels-last", "--matmul-precision=high", "--precision=BF16"])
    assert selection.Selection.of(options).axes == {"channels_last": [True], "matmul_precision": ["high"],
                                                    "precision": ["bf16"]}
    with pytest.raises(SystemExit):
        parser.parse_args(["--matmul-precision=fastest"])
