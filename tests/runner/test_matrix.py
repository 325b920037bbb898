"""Expansion, support rules with their reasons, config parsing and the resume fingerprint (no torch)."""

import argparse

import pytest

from benchmarks.config import axes, experiment_config

from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities

from benchmarks.plumbing.cli_support import memory_size

from benchmarks.results import records

CPU_ONLY = Capabilities(dynamo_backends=("inductor", "openxla", "openxla_eval", "eager", "aot_eager"),
                               torch_xla_error=None, xla_devices=("CPU",))


def kept_and_reasons(configs, caps=CPU_ONLY):
    kept, dropped = matrix.split(configs, caps)
    return [(e.accelerator, e.xla, e.dynamo, e.test) for e in kept], {(e.accelerator, e.xla, e.dynamo): r for e, r in dropped}


def test_expansion_is_the_product_in_command_line_order_without_duplicates():
    configs = matrix.expand({"accelerator": ["cpu"], "xla": ["PJRT", None, "PJRT"], "dynamo": ["openxla", None],
                             "test": ["train", "eval"]})
    assert [(e.xla, e.dynamo, e.test) for e in configs] == [
        ("PJRT", "openxla", "train"), ("PJRT", "openxla", "eval"), ("PJRT", None, "train"), ("PJRT", None, "eval"),
        (None, "openxla", "train"), (None, "openxla", "eval"), (None, None, "train"), (None, None, "eval"),
    ]


def test_upstream_worked_example_cpu_pjrt_none_openxla_inductor():
    # Upstream's test: cpu x {PJRT,None} x {openxla,inductor} x {eval,train} keeps 4 configs.
    kept, dropped = kept_and_reasons(matrix.expand({"accelerator": ["cpu"], "xla": ["PJRT", None],
                                                     "dynamo": ["openxla", "inductor"], "test": ["eval", "train"]}))
    assert kept == [("cpu", "PJRT", "openxla", "eval"), ("cpu", "PJRT", "openxla", "train"),
                    ("cpu", None, "inductor", "eval"), ("cpu", None, "inductor", "train")]
    assert "not XLA tensors" in dropped[("cpu", "PJRT", "inductor")]
    assert "XLA devices only" in dropped[("cpu", None, "openxla")]


@pytest.mark.parametrize("accelerator, xla, dynamo, caps, reason", [
    ("tpu", None, None, CPU_ONLY, "runs only through PyTorch/XLA"),
    ("cuda", "PJRT", None, CPU_ONLY, "XLA:CUDA is not supported"),
    ("cpu", "PJRT", "inductor", CPU_ONLY, "inductor compiles for native devices"),
    ("cpu", None, "openxla_eval", CPU_ONLY, "runs on XLA devices only"),
    ("cpu", None, "no_such_backend", CPU_ONLY, "'no_such_backend' is not registered"),
    ("cpu", "PJRT", None, Capabilities(torch_xla_error="ImportError: no torch_xla"), "torch_xla is not usable"),
    ("tpu", "PJRT", None, CPU_ONLY, "no XLA TPU device"),
    ("cuda", None, "inductor", CPU_ONLY, "no CUDA device"),
])
def test_each_support_rule_drops_with_its_reason(accelerator, xla, dynamo, caps, reason):
    experiment = experiment_config.ExperimentConfig(accelerator=accelerator, xla=xla, dynamo=dynamo, test="eval")
    assert reason in matrix.unsupported_reason(experiment, caps)


def test_supported_configs_pass_every_rule():
    gpu = Capabilities(dynamo_backends=("inductor",), torch_xla_error=None, cuda_devices=("NVIDIA H100",))
    assert matrix.unsupported_reason(experiment_config.ExperimentConfig("cuda", None, "inductor", "train"), gpu) is None
    assert matrix.unsupported_reason(experiment_config.ExperimentConfig("cpu", "PJRT", "openxla", "eval"), CPU_ONLY) is None


def test_experiment_config_round_trip_keeps_upstream_key_order():
    data = experiment_config.ExperimentConfig("cpu", "PJRT", "openxla", "train", batch_size=4).to_dict()
    assert list(data) == list(experiment_config.EXPERIMENT_KEYS) + list(axes.KEYS)  # ours after upstream's, in the table's order
    assert experiment_config.ExperimentConfig.from_dict(data).to_dict() == data


@pytest.mark.parametrize("data, message", [
    ([], "must be a JSON object"),
    ({"accelerator": "cpu", "xla": None, "test": "eval"}, "lacks key(s): dynamo"),
    ({"accelerator": "gpu", "xla": None, "dynamo": None, "test": "eval"}, "accelerator must be one of"),
    ({"accelerator": "cpu", "xla": "XRT", "dynamo": None, "test": "eval"}, "xla must be null"),
    ({"accelerator": "cpu", "xla": None, "dynamo": None, "test": "infer"}, "test must be eval or train"),
    ({"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval", "batch_size": 0}, "batch_size must be"),
])
def test_bad_experiment_configs_say_what_is_wrong(data, message):
    with pytest.raises(experiment_config.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        experiment_config.ExperimentConfig.from_dict(data)


def test_slug_is_deterministic_and_file_name_safe():
    e = experiment_config.ExperimentConfig("cpu", "PJRT", "openxla", "train", batch_size=8, xla_flags="--xla_foo=1 --bar")
    assert e.slug() == experiment_config.ExperimentConfig.from_dict(e.to_dict()).slug()
    assert e.slug().startswith("cpu-openxla-dynamo-train-bs8-xlaflags-")
    assert "/" not in e.slug() and " " not in e.slug()


def test_fingerprint_counts_the_requested_batch_size_not_the_real_one_nor_accelerator_model():
    model = {"suite_name": "dummy", "model_name": "mlp"}
    requested = experiment_config.ExperimentConfig("cpu", None, None, "eval").to_dict()
    real = dict(requested, batch_size=16, accelerator_model="Some CPU")
    assert records.fingerprint(model, requested, None, False) == records.fingerprint(model, real, None, False)
    assert records.fingerprint(model, requested, None, False) != records.fingerprint(model, requested, 8, False)
    assert records.fingerprint(model, requested, None, False) != records.fingerprint(model, requested, None, True)
    labelled = dict(model, labels={"task": ["vision"]})
    assert records.fingerprint(model, requested, None, False) == records.fingerprint(labelled, requested, None, False)


def test_memory_sizes():
    assert memory_size("8G") == 8 * 2**30
    assert memory_size("512m") == 512 * 2**20
    assert memory_size("1.5GiB") == int(1.5 * 2**30)
    assert memory_size("1000") == 1000
    with pytest.raises(argparse.ArgumentTypeError):
        memory_size("lots")


def test_children_get_run_flags_but_not_sweep_flags():
    from benchmarks.config.run_options import build_parser
    from benchmarks.suites import all_suites

    options = build_parser(all_suites()).options([
        "--accelerator=cpu", "--dynamo=inductor", "-k", "mlp", "--repeat=3", "--warmup=0", "--subprocess-timeout=5",
        "--output-dirname=/tmp/x", "--timestamp=12.5"])
    forwarded = options.child_flags
    assert "--repeat=3" in forwarded and "--warmup=0" in forwarded and "--timestamp=12.5" in forwarded
    assert "--output-dirname=/tmp/x" in forwarded
    assert not any(a.startswith(("--accelerator", "--dynamo", "--filter", "--subprocess-timeout")) for a in forwarded)


def test_upstream_records_infer_their_status():
    assert records.record_status({"metrics": {"total_time": [1.0]}}) == "ok"
    assert records.record_status({"metrics": {"error": "SKIP"}}) == "skip"
    assert records.record_status({"metrics": {"error": "Command '[...]' timed out after 5 seconds"}}) == "timeout"
    assert records.record_status({"metrics": {"error": "Traceback ..."}}) == "error"
