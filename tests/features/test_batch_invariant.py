"""--batch-invariant, a switch axis (experiment key `batch_invariant`): its flag alone, off leaving fingerprints and
labels as records without the key had them, the label `inductor[batch-invariant]`, the batch sizes it checks, and the
drops of train and exported configs with their reasons (no torch)."""

from benchmarks.config import axes
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.run_options import build_parser
from benchmarks.features import batch_invariant
from benchmarks.results import records
from benchmarks.results.measurement import Measurement
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities
from benchmarks.suites import all_suites

MLP = {"suite_name": "dummy", "model_name": "mlp"}
CPU = Capabilities(dynamo_backends=("inductor", "aot_eager"), torch_xla_error=None, xla_devices=("CPU",))


def test_the_flag_alone_is_on_and_on_and_off_sweep_both():
    def asked(*argv):
        return axes.BY_KEY["batch_invariant"].asked(build_parser(all_suites()).options(list(argv)))

    assert asked() == () and asked("--batch-invariant") == (True,)
    assert asked("--batch-invariant=on", "--batch-invariant=off") == (True, False)


def test_off_is_a_record_without_the_key_and_on_is_named():
    off = ExperimentConfig("cpu", None, "inductor", "eval", batch_invariant=False).to_dict()
    without = {k: v for k, v in off.items() if k != "batch_invariant"}
    assert records.fingerprint(MLP, off, None, False) == records.fingerprint(MLP, without, None, False)
    on = dict(off, batch_invariant=True)
    assert records.fingerprint(MLP, on, None, False) != records.fingerprint(MLP, off, None, False)
    assert Measurement({"model": MLP, "experiment": on}).backend == "inductor[batch-invariant]"
    both = dict(on, deterministic=True)
    assert Measurement({"model": MLP, "experiment": both}).backend == "inductor[batch-invariant,deterministic]"
    assert ExperimentConfig.from_dict(on).slug() == "cpu-inductor-eval-batch-invariant"


def test_the_batches_checked_halve_down_to_one():
    assert batch_invariant.batch_sizes(4) == [2, 1]
    assert batch_invariant.batch_sizes(6) == [3, 1] and batch_invariant.batch_sizes(5) == [2, 1]
    assert batch_invariant.batch_sizes(1) == [] and batch_invariant.batch_sizes(16) == [8, 4, 2, 1]


def test_train_and_exported_configs_are_dropped_with_the_reason():
    upstream = {"accelerator": ["cpu"], "xla": [None], "dynamo": ["aot_eager", "export"], "test": ["eval", "train"]}
    kept, dropped = matrix.split(matrix.expand(dict(upstream, batch_invariant=[True])), CPU)
    assert [(c.dynamo, c.test) for c in kept] == [("aot_eager", "eval")]
    reasons = {(c.dynamo, c.test): reason for c, reason in dropped}
    assert "run it with --test=eval" in reasons[("aot_eager", "train")]
    assert "export's program is exported for its example batch only" in reasons[("export", "eval")]
