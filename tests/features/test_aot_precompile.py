"""--aot-precompile's configs (features/aot_precompile/__init__.py): Inductor's only, and the rules that drop those it can't
run, each with its reason."""

import pytest

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.features import aot_precompile

INDUCTOR = ExperimentConfig("cpu", None, "inductor", "eval", compile_mode="default", aot_precompile=True)


def test_it_is_for_inductor_configs_only():
    assert aot_precompile.for_config(True, INDUCTOR)
    for dynamo in (None, "aot_eager", "eager"):
        assert not aot_precompile.for_config(True, INDUCTOR.with_(dynamo=dynamo))
    assert not aot_precompile.for_config(False, INDUCTOR)


@pytest.mark.parametrize("change, words", [
    ({"test": "train"}, "eval only"),
    ({"dynamic": "batch"}, "static shapes only, not dynamic batch"),
    ({"compile_mode": "max-autotune"}, "compile mode default only, not max-autotune"),
])
def test_configs_it_cant_run_are_dropped_with_the_reason(change, words):
    experiment = INDUCTOR.with_(**change)
    found = [reason(experiment, None) for _, cannot, reason in aot_precompile.SUPPORT_RULES if cannot(experiment, None)]
    assert len(found) == 1 and words in found[0]
    assert not any(cannot(INDUCTOR, None) for _, cannot, _ in aot_precompile.SUPPORT_RULES)
    assert not any(cannot(experiment.with_(aot_precompile=False), None) for _, cannot, _ in aot_precompile.SUPPORT_RULES)
