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


def test_the_axes_eager_never_varies_are_those_the_features_declare_so():
    from benchmarks.config.axes import AXES
    from benchmarks.config.axis import EAGER_LACKS, EAGER_VARIES

    plain = ExperimentConfig("cpu", None, None, "eval", batch_size=1)
    inductor = plain.with_(dynamo="inductor")
    assert key(inductor) == key(plain)
    for axis in AXES:  # each axis's example on a compiled config: its eager baseline is plain eager or not
        shared = key(inductor.with_(**{axis.key: axis.example})) == key(plain)
        assert shared == (axis.on_eager != EAGER_VARIES), axis.key
        assert (axis.key in against_eager.COMPILE_ONLY_AXES) == (axis.on_eager == EAGER_LACKS), axis.key
    assert {"compile_mode", "dynamic", "speedup", "aot_precompile", "generation_compile"} <= set(
        against_eager.BACKEND_ONLY_AXES)
    assert "precision" not in against_eager.BACKEND_ONLY_AXES and "prompt_tokens" not in against_eager.BACKEND_ONLY_AXES


def test_an_axis_says_what_eager_holds_of_it_in_a_word_it_knows():
    import pytest

    from benchmarks.config.axis import Axis

    with pytest.raises(ValueError, match="on_eager must be"):
        Axis("made_up", "help", parse=str, on_eager="sometimes")


def test_a_paired_configs_speedup_is_pooled_by_its_features_hook():
    def paired(ratios):
        return Measurement({"model": MODEL, "experiment": EAGER.with_(dynamo="inductor").to_dict(),
                            "paired_speedup": {"ratios": ratios}})

    pooled = against_eager.paired_speedup([paired([1.0, 2.0, 3.0]), paired([4.0, 5.0])])
    assert pooled["median"] == 3.0 and pooled["pairs"] == 5 and pooled["processes"] == 2
    assert against_eager.paired_speedup([Measurement({"model": MODEL, "experiment": EAGER.to_dict()})]) is None
