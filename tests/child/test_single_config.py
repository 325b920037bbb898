"""The child's run in phases (child/config_run.ConfigRun) and the hooks that join it (child/config_hooks.py):
each hook is called at its point of the run, in the order `for_config` gives; a hook that raises fails the config
in the phase it was called in, and the record is settled all the same. In process: the dummy MLP, eager, CPU."""

import pytest

from benchmarks.child import config_failures, config_hooks, config_run, hand_back
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.run_options import build_parser
from benchmarks.suites import all_suites

MODEL = {"suite_name": "dummy", "model_name": "mlp"}


class Phases(hand_back.Channel):
    """A channel with no parent that keeps every phase marker the run sets."""

    def __init__(self):
        super().__init__(None)
        self.markers = []

    def set_phase(self, phase: str) -> None:
        self.markers.append(phase)
        super().set_phase(phase)


class Spy(config_hooks.Hook):
    """Notes each call with the phase it came in; `fail`: the method that raises."""

    def __init__(self, channel, fail=None):
        self.channel, self.fail, self.calls = channel, fail, []

    def _called(self, name: str) -> None:
        self.calls.append((name, self.channel.phase))
        if name == self.fail:
            raise RuntimeError(f"the spy's {name} fails, on purpose")

    def setup(self, run):
        self._called("setup")

    def built(self, bm):
        self._called("built")
        return bm

    def compile(self, run):
        self._called("compile")

    def step_inputs(self, run, inputs):
        self._called("step_inputs")
        return inputs

    def before_timing(self, run):
        self._called("before_timing")

    def after_timing(self, run):
        self._called("after_timing")

    def check(self, run):
        self._called("check")

    def after_failure(self, run):
        self._called("after_failure")

    def finish(self, record):
        self._called("finish")
        return None


def run_with_spy(tmp_path, monkeypatch, *flags, fail=None):
    """(the record, the spy's calls, the phase markers) of the MLP's eager eval config, the spy last of its hooks."""
    options = build_parser(all_suites()).options(["--repeat=1", "--warmup=1", f"--output-dirname={tmp_path}", *flags])
    channel = Phases()
    spy = Spy(channel, fail)
    registered = config_hooks.for_config
    monkeypatch.setattr(config_hooks, "for_config", lambda *args: registered(*args) + [spy])
    experiment = ExperimentConfig(accelerator="cpu", xla=None, dynamo=None, test="eval")
    record = config_run.run_config(options, MODEL, experiment, channel)
    return record, spy.calls, channel.markers


def test_each_hook_is_called_at_its_phase_and_the_checks_follow_the_timed_runs(tmp_path, monkeypatch):
    record, calls, markers = run_with_spy(tmp_path, monkeypatch, "--verify")
    assert record["status"] == "ok" and record["accuracy"] == "pass"
    # --verify's eager models are built through the hooks too, in its reference phase, after the timed runs
    own = [call for call in calls if call != ("built", "reference")]
    assert own == [("setup", "setup"), ("built", "load"), ("compile", "compile"), ("step_inputs", "compile"),
                   ("before_timing", "compile"), ("after_timing", "run"), ("check", "verify"), ("finish", "verify")]
    assert calls.index(("built", "reference")) == own.index(("after_timing", "run")) + 1
    # the markers the parent's failure records read, in the order the phases came
    assert [m for i, m in enumerate(markers) if i == 0 or m != markers[i - 1]] == [
        "setup", "load", "compile", "run", "reference", "verify"]
    # the experiment as it ran, written once: the machine's name and the model's own batch size
    assert record["experiment"]["accelerator_model"] and record["experiment"]["batch_size"] == 16


@pytest.mark.parametrize("method, phase", [("setup", "setup"), ("compile", "compile"), ("before_timing", "compile"),
                                           ("after_timing", "run"), ("check", "run")])
def test_a_hook_that_raises_fails_the_config_in_the_phase_it_was_called_in(tmp_path, monkeypatch, method, phase):
    record, calls, _ = run_with_spy(tmp_path, monkeypatch, fail=method)
    assert record["status"] == "error"
    assert record["error"]["type"] == "RuntimeError" and record["error"]["phase"] == phase
    assert record["error"]["message"] == f"the spy's {method} fails, on purpose"
    assert record["accuracy"] == ("model_fail_to_load" if phase == "setup" else "fail_to_run")  # settled all the same
    # after the failure: nothing of the later phases; what can still run, then the record's keys
    names = [name for name, _ in calls]
    assert names[names.index(method) + 1:] == ["after_failure", "finish"]
    assert ("metrics" in record and "total_time" in record["metrics"]) == (method in ("after_timing", "check"))


def test_verify_still_computes_eager_after_a_failure_and_says_the_config_raised_before_its_check(tmp_path,
                                                                                               monkeypatch):
    record, _, markers = run_with_spy(tmp_path, monkeypatch, "--verify", fail="before_timing")
    assert record["error"]["phase"] == "compile" and markers[-1] == "reference"
    assert record["verification_code"] == "EXCEPTION_RAISED"
    assert record["verification_message"].startswith("the config raised before it could be compared (phase compile)")


def test_hooks_are_registered_per_config_in_the_order_their_phases_need(tmp_path):
    parser = build_parser(all_suites())
    plain = parser.options([f"--output-dirname={tmp_path}"])
    experiment = ExperimentConfig(accelerator="cpu", xla=None, dynamo="aot_eager", test="eval")
    # every config's matmul precision is set (and recorded) by its axis's hook
    assert [type(hook).__name__ for hook in config_hooks.for_config(plain, experiment)] == ["MatmulPrecision"]
    every = parser.options([f"--output-dirname={tmp_path}", "--verify", f"--save-golden={tmp_path / 'golden'}",
                            f"--golden={tmp_path / 'golden'}"])
    experiment = experiment.with_(dynamo="export", dynamic="batch", speedup="paired", channels_last=True)
    # the axes' hooks first, in the table's order (what they set is in place before the golden save's model and
    # --verify's references are built; the batch goes back to the examples before the checks); then a golden entry
    # is saved before it is read, and --verify's check runs before the golden one
    assert [type(hook).__name__ for hook in config_hooks.for_config(every, experiment)] == [
        "DynamicBatch", "PairedSpeedup", "ChannelsLast", "MatmulPrecision", "GoldenSave", "Export", "Verify",
        "GoldenCheck"]


def test_a_lost_cuda_context_is_the_failures_cause_where_a_later_call_surfaced_it():
    # As an H100 with torch 2.11 gave them: the illegal access surfaced as cuBLAS's failure to create its handle.
    surfaced = RuntimeError("CUDA error: CUBLAS_STATUS_INTERNAL_ERROR when calling `cublasCreate(handle)`")
    lost = RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be "
                        "asynchronously reported at some other API call")
    kind, message = config_failures.failure_cause(surfaced, lost)
    assert kind == "RuntimeError" and message.startswith("CUDA error: an illegal memory access was encountered")
    assert message.endswith("(it surfaced as RuntimeError: CUDA error: CUBLAS_STATUS_INTERNAL_ERROR when calling "
                            "`cublasCreate(handle)`)")
    assert config_failures.device_lost(RuntimeError(message))  # so no eager reference runs on the dead context
    assert config_failures.failure_cause(lost, None) == ("RuntimeError", str(lost))  # the cause itself: as it is
    assert config_failures.failure_cause(surfaced, None) == ("RuntimeError", str(surfaced))  # a context still alive
    # no CUDA config, or no CUDA used in this process: nothing to ask
    assert config_failures.lost_context_error(ExperimentConfig("cpu", None, None, "eval")) is None
    assert config_failures.lost_context_error(ExperimentConfig("cuda", None, None, "eval")) is None
