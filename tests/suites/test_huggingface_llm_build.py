"""The LLM rows built in the child (suites/huggingface_llm_build.py): each published configuration gives the exact
parameter count of its hub model (built on the meta device: nothing allocated, nothing downloaded), what the
configuration classes derive is what the hub's files say, a class the installed transformers lacks is a skip
naming it, a model that can't fit is refused naming its weights and KV cache, and whisper's inputs are its feature
extractor's."""

import types

import pytest

from benchmarks.suites import ModelSkipped, huggingface_llm, huggingface_llm_build as build
from benchmarks.suites.huggingface_llm import ARCHITECTURES

# The table (transformers 5.23, built on the meta device); gpt-oss-20b is "about 20.91B" there.
PARAMETERS = {
    "meta-llama/Llama-3.2-1B": 1_235_814_400,
    "google/gemma-2-2b": 2_614_341_888,
    "google/gemma-3-4b-it": 4_300_079_472,
    "Qwen/Qwen3-0.6B": 596_049_920,
    "mistralai/Mistral-7B-Instruct-v0.3": 7_248_023_552,
    "openai/whisper-tiny": 37_760_640,
}


def config_of(name, params=None):
    import transformers

    _, config_class = build.classes(name, transformers)
    return build.make_config(name, config_class, params or {})


@pytest.mark.parametrize("name", huggingface_llm.NAMES)
def test_each_published_configuration_has_its_hub_models_parameter_count(name):
    import transformers

    model_class, config_class = build.classes(name, transformers)
    count = build.count_on_meta(model_class, build.make_config(name, config_class, {}))
    assert count == ARCHITECTURES[name].parameters
    if name in PARAMETERS:
        assert count == PARAMETERS[name]
    else:
        assert round(count / 1e7) == 2091  # gpt-oss-20b: about 20.91B


def test_what_the_configuration_classes_derive_is_what_the_hub_files_say():
    gemma2 = config_of("google/gemma-2-2b")
    assert gemma2.layer_types[:4] == ["sliding_attention", "full_attention"] * 2 and gemma2.sliding_window == 4096
    gemma3 = config_of("google/gemma-3-4b-it").text_config
    assert gemma3.layer_types[:6] == ["sliding_attention"] * 5 + ["full_attention"] and gemma3.sliding_window == 1024
    oss = config_of("openai/gpt-oss-20b")
    assert oss.layer_types == ["sliding_attention", "full_attention"] * 12 and oss.num_local_experts == 32
    assert oss.num_experts_per_tok == 4 and oss.rope_parameters["rope_type"] == "yarn"
    assert config_of("meta-llama/Llama-3.2-1B").rope_parameters["rope_type"] == "llama3"
    assert build.end_token(config_of("google/gemma-3-4b-it")) == 1


def test_model_params_set_every_stack_and_refuse_unknown_fields_and_seq_len():
    whisper = config_of("openai/whisper-tiny", {"num_hidden_layers": 2})
    assert (whisper.encoder_layers, whisper.decoder_layers) == (2, 2)
    gemma3 = config_of("google/gemma-3-4b-it", {"num_hidden_layers": 2, "sliding_window": 8})
    assert (gemma3.text_config.num_hidden_layers, gemma3.vision_config.num_hidden_layers) == (2, 2)
    assert gemma3.text_config.sliding_window == 8 and len(gemma3.text_config.layer_types) == 2
    assert len(config_of("openai/gpt-oss-20b", {"num_hidden_layers": 2}).layer_types) == 2
    with pytest.raises(ValueError, match="Qwen3Config has no field 'no_such_field'"):
        config_of("Qwen/Qwen3-0.6B", {"no_such_field": 1})
    with pytest.raises(ValueError, match="--prompt-tokens"):
        config_of("Qwen/Qwen3-0.6B", {"seq_len": 8})


def test_a_class_the_installed_transformers_lacks_is_a_skip_that_names_it():
    older = types.SimpleNamespace(__version__="4.40.0", LlamaForCausalLM=object, LlamaConfig=object)
    assert build.classes("meta-llama/Llama-3.2-1B", older) == (object, object)
    with pytest.raises(ModelSkipped, match="needs transformers' GptOssForCausalLM, which transformers 4.40.0 does not"):
        build.classes("openai/gpt-oss-20b", older)


def test_a_model_that_cant_fit_is_refused_naming_its_weights_and_its_kv_cache():
    mistral = config_of("mistralai/Mistral-7B-Instruct-v0.3")
    positions = 1000 + 2000
    kv = build.kv_cache_bytes(mistral, 1, positions, 4)
    assert kv == 2 * 32 * 8 * 128 * positions * 4  # keys and values, 32 layers of 8 KV heads of 128
    problem = build.fit_problem("mistral", 7_248_023_552, "float32", 4, kv, 1, positions, 24 * 2**30, "available")
    assert problem.startswith("mistral does not fit: 29.0 GB of weights (7,248,023,552 parameters in float32) + "
                              "0.8 GB of static KV cache (batch 1, 3000 positions) = 29.8 GB, more than the 25.8 GB")
    assert build.fit_problem("mistral", 7_248_023_552, "bfloat16", 2, kv // 2, 1, positions, 80 * 2**30, "") is None
    # sliding layers hold their window at most; whisper's decoder also holds its cross-attention over 1,500 frames
    gemma2 = config_of("google/gemma-2-2b")
    assert build.kv_cache_bytes(gemma2, 1, 8000, 2) == 2 * 4 * 256 * (13 * 4096 + 13 * 8000) * 2
    whisper = config_of("openai/whisper-tiny")
    assert build.kv_cache_bytes(whisper, 1, 448, 4) == 2 * 6 * 64 * 4 * (448 + 1500) * 4


def test_inputs_are_random_prompt_ids_with_a_mask_and_whisper_features_shaped_by_its_extractor():
    text = build.make_inputs("Qwen/Qwen3-0.6B", config_of("Qwen/Qwen3-0.6B"), 1, 12)
    assert text["input_ids"].shape == (1, 12) and text["attention_mask"].tolist() == [[1] * 12]
    speech = build.make_inputs("openai/whisper-tiny", config_of("openai/whisper-tiny"), 2, None)
    # 30 s at 16 kHz, a hop of 160 samples: 3,000 frames of 80 mel bins
    assert speech["input_features"].shape == (2, 80, 3000) and speech["decoder_input_ids"].tolist() == [[50258]] * 2


def test_random_weights_come_from_transformers_pass_alone_and_cover_every_parameter():
    import torch
    import transformers

    name = "Qwen/Qwen3-0.6B"
    model_class, config_class = build.classes(name, transformers)
    config = build.make_config(name, config_class, {"num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128,
                                                    "vocab_size": 256, "bos_token_id": 0, "eos_token_id": 1})
    model = build.random_model(model_class, config, torch.bfloat16)
    weights = dict(model.named_parameters())
    assert all(not torch.isnan(p).any() for p in weights.values()) and model.lm_head.weight.dtype == torch.bfloat16
    assert model.lm_head.weight is weights["model.embed_tokens.weight"]  # tied, as the hub model
    std = weights["model.layers.0.mlp.up_proj.weight"].float().std().item()
    assert abs(std - config.initializer_range) < 0.2 * config.initializer_range  # transformers' normal(0, 0.02)
    assert weights["model.norm.weight"].float().eq(1).all()


def test_what_a_generate_run_does_not_run_is_named():
    from benchmarks.config.experiment_config import ExperimentConfig

    eval_cpu = ExperimentConfig("cpu", None, None, "eval")
    assert build.unsupported(eval_cpu) is None and build.unsupported(eval_cpu.with_(dynamo="inductor")) is None
    assert build.unsupported(eval_cpu.with_(test="train")) == "training (eval only)"
    assert build.unsupported(eval_cpu.with_(xla="PJRT")) is None  # lazy tensors, or openxla's dynamo
    assert "exported program" in build.unsupported(eval_cpu.with_(dynamo="export"))
    assert "--speedup=paired" in build.unsupported(eval_cpu.with_(dynamo="inductor", speedup="paired"))
    assert "--deterministic" in build.unsupported(eval_cpu.with_(deterministic=True))


@pytest.mark.requires_xla
def test_tied_embeddings_stay_tied_on_pytorch_xla():
    """A move to XLA makes new parameters (untying lm_head from the embeddings); the build's after_move ties them
    again, as the suite's forward models do."""
    import torch_xla

    from benchmarks.child import backends
    from benchmarks.config.experiment_config import ExperimentConfig

    small = {"num_hidden_layers": 1, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
             "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 64}
    bm = build.build("Qwen/Qwen3-0.6B", ExperimentConfig("cpu", "PJRT", None, "eval").with_(
        prompt_tokens=4, new_tokens=2), "cpu", small)
    module = backends.module_on(bm, torch_xla.device())
    assert module.lm_head.weight is module.model.embed_tokens.weight
    assert module.lm_head.weight.device.type == "xla"
