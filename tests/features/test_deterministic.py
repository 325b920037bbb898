"""--deterministic, a switch axis (experiment key `deterministic`): its flag alone, on and off swept together, off
leaving fingerprints and labels as records without the key had them, the label `inductor[deterministic]` and slug,
and the drop on XLA with its reason (no torch)."""

from helpers import call_runner

from benchmarks.config import axes
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.run_options import build_parser
from benchmarks.results import records
from benchmarks.results.measurement import Measurement
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities
from benchmarks.suites import all_suites

MLP = {"suite_name": "dummy", "model_name": "mlp"}
CPU = Capabilities(dynamo_backends=("inductor", "openxla"), torch_xla_error=None, xla_devices=("CPU",))
UPSTREAM = {"accelerator": ["cpu"], "xla": [None, "PJRT"], "dynamo": [None], "test": ["eval"]}


def asked(*argv) -> tuple:
    return axes.BY_KEY["deterministic"].asked(build_parser(all_suites()).options(list(argv)))


def test_the_flag_alone_is_on_and_on_and_off_sweep_both():
    assert asked() == () and asked("--deterministic") == (True,)
    assert asked("--deterministic=on", "--deterministic=off") == (True, False)
    assert [c.deterministic for c in matrix.expand(dict(UPSTREAM, xla=[None]))] == [False]  # its default: off


def test_off_is_a_record_without_the_key_and_on_is_named():
    off = ExperimentConfig("cpu", None, "inductor", "eval", deterministic=False).to_dict()
    without = {k: v for k, v in off.items() if k != "deterministic"}
    assert records.fingerprint(MLP, off, None, False) == records.fingerprint(MLP, without, None, False)
    on = dict(off, deterministic=True)
    assert records.fingerprint(MLP, on, None, False) != records.fingerprint(MLP, off, None, False)
    assert Measurement({"model": MLP, "experiment": on}).backend == "inductor[deterministic]"
    assert Measurement({"model": MLP, "experiment": off}).backend == "inductor"
    assert ExperimentConfig.from_dict(on).slug() == "cpu-inductor-eval-deterministic"
    assert axes.BY_KEY["deterministic"].flag_args(True) == ["--deterministic"]


def test_xla_configs_are_dropped_with_the_reason():
    kept, dropped = matrix.split(matrix.expand(dict(UPSTREAM, deterministic=[True, False])), CPU)
    assert [(c.xla, c.deterministic) for c in kept] == [(None, True), (None, False), ("PJRT", False)]
    [(config, reason)] = dropped
    assert (config.xla, config.deterministic) == ("PJRT", True) and "XLA compiler's" in reason


def test_dry_run_lists_the_deterministic_configs_with_their_label():
    result = call_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                         "--dynamo=inductor", "--test=eval", "--deterministic", "--dry-run", check_rc=0)
    commands = [line for line in result.stdout.splitlines() if "--experiment-config=" in line]
    assert len(commands) == 2 and all('"deterministic": true' in line for line in commands), result.stdout
