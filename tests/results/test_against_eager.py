"""A config's eager baseline (results/against_eager.py): the same model and axes, torch.compile's own aside; for an
LLM row, what it compiles (generation_compile) is torch.compile's, its lengths are not."""

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.results import against_eager
from benchmarks.results.measurement import Measurement

MODEL = {"suite_name": "huggingface", "model_name": "Qwen/Qwen3-0.6B"}
EAGER = ExperimentConfig("cpu", None, None, "eval", batch_size=1, prompt_tokens=32, new_tokens=16)


def key(experiment) -> str:
    return against_eager.baseline_key(Measurement({"model": MODEL, "experiment": experiment.to_dict()}))


def test_a_generate_run_under_inductor_has_the_eager_run_of_its_lengths_as_baseline():
    for compiled in ("generate", "forward"):
        inductor = EAGER.with_(dynamo="inductor", compile_mode="default", generation_compile=compiled)
        assert key(inductor) == key(EAGER)
    assert key(EAGER.with_(dynamo="inductor", new_tokens=8)) != key(EAGER)  # other lengths: another baseline
