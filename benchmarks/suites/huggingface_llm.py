"""The dynamo harness's LLM rows of the huggingface suite (its huggingface_llm_models.py): seven hub models written
out here as facts from their published configurations, so that they build offline with random weights (no hub,
no tokenizer). Each is run by `generate`, not by a forward (child/generation.py; docs/generation.md).

The configurations are in transformers 5's words (`rope_parameters` holds what the hub's files call `rope_theta`
and `rope_scaling`). What a configuration class derives by itself is left to it and checked by the tests:
gemma-2's alternating and gemma-3's five-to-one sliding layers, gpt-oss's alternating sliding/full layers.
Parameter counts are those of the models built from these configurations (on the meta device); the tests hold them.
No torch, no transformers: the parent lists and checks these models with this module alone.

How an LLM row runs:

The harness's LLM rows (`huggingface_llm.py`, docs/generation.md) are run by `generate`: their BenchmarkModel
carries a `Generation` (new tokens, pad token, prompt length, facts), and the child's run takes two hooks where it
is set: `ConfigRun.new_step` makes `generation.GenerateStep` (one generate call; dynamo over the whole call, or
transformers' CompileConfig for its decode step) and `timed_phase.measure_generation` times it (`generation.measure`:
a logits processor notes each token; CUDA events, no host sync; the raw token times go to the record's
`generation.token_seconds`, a list per timed call, since a metric's values are one flat list of numbers) instead of
`measured_loop.measure`; `load` puts `generation_verify.GenerationVerify` in --verify's place. The lengths and the
compile target are experiment keys (`prompt_tokens`, `new_tokens`, `generation_compile`, the last entries of `AXES`,
null by default), which `Suite.experiment_for` resolves per model beside `precision_for`: the harness's lengths for
an LLM row (a length beyond its positions is a UsageError, exit 2), null for every other model, so its fingerprint
is what it was. Before it builds, the suite counts the model on the meta device and refuses (a skip) weights plus
static KV cache beyond the device's memory; it builds with transformers' init pass alone, checked to have set every
parameter.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

TEXT_GENERATION, SPEECH_TO_TEXT = "text-generation", "speech-to-text"
# The harness's lengths for text generation: a random prompt of 1,000 tokens, 2,000 new tokens.
DEFAULT_PROMPT_TOKENS, DEFAULT_NEW_TOKENS = 1000, 2000
# Whisper: 30 s of random audio at 16 kHz (its feature extractor's 3,000 frames of 80 mel bins), scaled by 0.1 as
# the harness scales it; the decoder starts from its start token and takes at most max_target_positions (448).
AUDIO_SECONDS, SAMPLING_RATE, AUDIO_SCALE = 30, 16000, 0.1


@dataclasses.dataclass(frozen=True)
class Architecture:
    """One LLM row: the transformers classes, the published configuration, and what the tests check of it."""

    model_class: str  # what AutoModelForCausalLM (or the harness's own class) builds from the configuration
    config_class: str
    config: dict
    parameters: int  # exact, of the model built from `config` (the tests build it on the meta device)
    task: str = TEXT_GENERATION
    # The harness times a prefill of its own for these (PREFILL_MODELS, --hf-inference-mode=prefill): our time to
    # first token is the same work inside generate (docs/generation.md).
    harness_prefill: bool = False
    note: str = ""

    @property
    def max_positions(self) -> int:
        """The most positions the model's decoder takes: prompt plus new tokens (text), or start plus new (whisper)."""
        config = self.config.get("text_config", self.config)
        return int(config.get("max_target_positions") or config["max_position_embeddings"])


LLAMA_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "high_freq_factor": 4.0,
              "low_freq_factor": 1.0, "original_max_position_embeddings": 8192}

ARCHITECTURES = {
    "meta-llama/Llama-3.2-1B": Architecture(
        "LlamaForCausalLM", "LlamaConfig", dict(
            vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
            num_key_value_heads=8, head_dim=64, hidden_act="silu", max_position_embeddings=131072, rms_norm_eps=1e-5,
            bos_token_id=128000, eos_token_id=128001, tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
            rope_parameters=LLAMA_ROPE),
        parameters=1_235_814_400, harness_prefill=True),
    "google/gemma-2-2b": Architecture(
        "Gemma2ForCausalLM", "Gemma2Config", dict(
            vocab_size=256000, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8,
            num_key_value_heads=4, head_dim=256, hidden_activation="gelu_pytorch_tanh", max_position_embeddings=8192,
            rms_norm_eps=1e-6, pad_token_id=0, bos_token_id=2, eos_token_id=1, query_pre_attn_scalar=256,
            sliding_window=4096, attn_logit_softcapping=50.0, final_logit_softcapping=30.0, tie_word_embeddings=True,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        parameters=2_614_341_888, harness_prefill=True),
    "google/gemma-3-4b-it": Architecture(
        "Gemma3ForConditionalGeneration", "Gemma3Config", dict(
            text_config=dict(
                vocab_size=262208, hidden_size=2560, intermediate_size=10240, num_hidden_layers=34,
                num_attention_heads=8, num_key_value_heads=4, head_dim=256, query_pre_attn_scalar=256,
                sliding_window=1024, max_position_embeddings=131072, rms_norm_eps=1e-6,
                rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                                 "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
            vision_config=dict(hidden_size=1152, image_size=896, intermediate_size=4304, num_attention_heads=16,
                               num_hidden_layers=27, patch_size=14, vision_use_head=False),
            mm_tokens_per_image=256, boi_token_index=255999, eoi_token_index=256000, image_token_index=262144,
            eos_token_id=[1, 106]),
        parameters=4_300_079_472,
        note="AutoModelForCausalLM builds Gemma3ForConditionalGeneration, with its 0.42B vision tower (unused by text "
             "generation); the text-only Gemma3ForCausalLM is 3.88B"),
    "Qwen/Qwen3-0.6B": Architecture(
        "Qwen3ForCausalLM", "Qwen3Config", dict(
            vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
            num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rms_norm_eps=1e-6,
            bos_token_id=151643, eos_token_id=151645, tie_word_embeddings=True,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
        parameters=596_049_920, harness_prefill=True, note="tied embeddings"),
    "mistralai/Mistral-7B-Instruct-v0.3": Architecture(
        "MistralForCausalLM", "MistralConfig", dict(
            vocab_size=32768, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
            num_key_value_heads=8, head_dim=128, max_position_embeddings=32768, rms_norm_eps=1e-5, bos_token_id=1,
            eos_token_id=2, sliding_window=None, tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
        parameters=7_248_023_552),
    "openai/gpt-oss-20b": Architecture(
        "GptOssForCausalLM", "GptOssConfig", dict(
            vocab_size=201088, hidden_size=2880, intermediate_size=2880, num_hidden_layers=24, num_attention_heads=64,
            num_key_value_heads=8, head_dim=64, num_local_experts=32, num_experts_per_tok=4, sliding_window=128,
            max_position_embeddings=131072, rms_norm_eps=1e-5, attention_bias=True, eos_token_id=200002,
            pad_token_id=199999, tie_word_embeddings=False,
            rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                             "beta_slow": 1.0, "original_max_position_embeddings": 4096, "truncate": False}),
        parameters=20_914_757_184,
        note="random weights in the run's precision (bf16: 41.8 GB); the hub's weights are MXFP4"),
    "openai/whisper-tiny": Architecture(
        "WhisperForConditionalGeneration", "WhisperConfig", dict(
            vocab_size=51865, num_mel_bins=80, d_model=384, encoder_layers=4, decoder_layers=4,
            encoder_attention_heads=6, decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536,
            max_source_positions=1500, max_target_positions=448, bos_token_id=50257, eos_token_id=50257,
            pad_token_id=50257, decoder_start_token_id=50258),
        parameters=37_760_640, task=SPEECH_TO_TEXT),
}
NAMES = tuple(ARCHITECTURES)
# --model-params' num_hidden_layers sets every stack of these (whisper's encoder and decoder, gemma-3's towers).
LAYER_FIELDS = {"openai/whisper-tiny": ("encoder_layers", "decoder_layers")}


def is_llm(name: str) -> bool:
    return name in ARCHITECTURES


def decoder_start_tokens(name: str) -> int:
    """The tokens a generation starts from besides the prompt: whisper's decoder start token, none for text."""
    return 1 if ARCHITECTURES[name].task == SPEECH_TO_TEXT else 0


def lengths(name: str, prompt_tokens: Optional[int], new_tokens: Optional[int]) -> tuple:
    """(prompt tokens, new tokens) a model runs for the lengths asked (None: the harness's). Whisper's prompt is its
    audio (None here) and its new tokens default to what its decoder holds after the start token (447)."""
    arch = ARCHITECTURES[name]
    if arch.task == SPEECH_TO_TEXT:
        return None, new_tokens or arch.max_positions - decoder_start_tokens(name)
    return prompt_tokens or DEFAULT_PROMPT_TOKENS, new_tokens or DEFAULT_NEW_TOKENS


def length_problem(name: str, prompt_tokens: Optional[int], new_tokens: int, max_positions: Optional[int] = None) \
        -> Optional[str]:
    """One line when the lengths need more positions than the model has (`max_positions`: its own, else the
    configuration's), else None."""
    limit = max_positions or ARCHITECTURES[name].max_positions
    used = (prompt_tokens or 0) + new_tokens + decoder_start_tokens(name)
    if used <= limit:
        return None
    what = (f"{prompt_tokens} prompt + {new_tokens} new tokens" if prompt_tokens is not None else
            f"its start token + {new_tokens} new tokens")
    return f"{name}: {what} need {used} positions; the model has {limit}"
