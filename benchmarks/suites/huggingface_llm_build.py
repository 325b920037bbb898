"""Building the huggingface suite's LLM rows (huggingface_llm.py) in the child: the configuration from its facts and
--model-params, the memory it needs (weights and static KV cache at the run's precision, from the model counted on
the meta device) against what the device has, then the model with random weights and the harness's inputs.
Child only: imports torch and transformers where a function needs them.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

from benchmarks.config import axes, backend_registry, tolerances
from benchmarks.features import precision
from benchmarks.suites import BenchmarkModel, Generation, ModelSkipped
from benchmarks.suites.huggingface_llm import ARCHITECTURES, AUDIO_SCALE, AUDIO_SECONDS, LAYER_FIELDS, SAMPLING_RATE, \
    SPEECH_TO_TEXT, length_problem, lengths

GB = 1e9
# The suite's own knob that LLM rows refuse: their prompt length is --prompt-tokens.
NOT_FOR_LLMS = {"seq_len": "the LLM rows' prompt length is --prompt-tokens, not --model-params seq_len"}


def classes(name: str, transformers) -> tuple:
    """(model class, configuration class) of an LLM row from `transformers`; a skip naming the class it lacks."""
    arch = ARCHITECTURES[name]
    for cls_name in (arch.model_class, arch.config_class):
        if getattr(transformers, cls_name, None) is None:
            raise ModelSkipped(f"{name} needs transformers' {cls_name}, which transformers "
                               f"{getattr(transformers, '__version__', '?')} does not have")
    return getattr(transformers, arch.model_class), getattr(transformers, arch.config_class)


def _fields(config) -> set:
    return set(config.to_dict()) | set(getattr(config, "attribute_map", {}) or {})


def make_config(name: str, config_class, params: dict):
    """The published configuration with --model-params on top. `num_hidden_layers` sets the depth of every stack
    (whisper's encoder and decoder, gemma-3's text and vision towers); a nested configuration's (gemma-3's) other
    fields go to its text configuration when the outer one lacks them. An unknown field is a ValueError."""
    for key, why in NOT_FOR_LLMS.items():
        if key in params:
            raise ValueError(f"--model-params {key}: {why}")
    fields = {key: (dict(value) if isinstance(value, dict) else value) for key, value in ARCHITECTURES[name].config.items()}
    defaults = config_class()
    outer, inner = _fields(defaults), _fields(defaults.text_config) if "text_config" in fields else set()
    unknown = []
    for key, value in params.items():
        if key == "dropout":  # the suite's knob: LLM rows run eval only, where dropout does nothing
            continue
        if key == "num_hidden_layers" and name in LAYER_FIELDS:
            fields.update(dict.fromkeys(LAYER_FIELDS[name], value))
        elif key == "num_hidden_layers" and inner:
            fields["text_config"][key] = fields["vision_config"][key] = value
        elif key in outer:
            fields[key] = value
        elif key in inner:
            fields["text_config"][key] = value
        else:
            unknown.append(key)
    if unknown:
        raise ValueError(f"--model-params: {config_class.__name__} has no field {', '.join(map(repr, sorted(unknown)))}")
    return config_class(**fields)


def max_positions(config) -> int:
    text = config.get_text_config(decoder=True)
    return int(getattr(text, "max_target_positions", None) or text.max_position_embeddings)


def kv_cache_bytes(config, batch: int, positions: int, element_bytes: int) -> int:
    """The static KV cache generate allocates: keys and values of every decoder layer for `positions` (a sliding
    layer holds its window at most), and an encoder-decoder's cross-attention cache over the encoder's positions."""
    text = config.get_text_config(decoder=True)
    if getattr(config, "is_encoder_decoder", False):  # whisper
        layers, heads = config.decoder_layers, config.decoder_attention_heads
        head_dim, kinds = config.d_model // heads, ["full_attention"] * layers
        cross = layers * config.max_source_positions
    else:
        layers, heads = text.num_hidden_layers, text.num_key_value_heads or text.num_attention_heads
        head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
        kinds, cross = getattr(text, "layer_types", None) or ["full_attention"] * layers, 0
    window = getattr(text, "sliding_window", None) or positions
    held = sum(min(window, positions) if kind == "sliding_attention" else positions for kind in kinds) + cross
    return 2 * batch * heads * head_dim * held * element_bytes


def available_bytes(device: str, limit: Optional[int] = None) -> tuple:
    """(bytes the device can still give, what that figure is)."""
    if device.startswith("cuda"):
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(device))
        return free, "free on the GPU"
    found = None
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                found = int(line.split()[1]) * 1024
    if found is None:
        found = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if limit and limit < found:
        return limit, "the child's --subprocess-memory-limit"
    return found, "available on this host"


def fit_problem(name: str, parameters: int, dtype_name: str, element_bytes: int, kv_bytes: int, batch: int,
                positions: int, available: int, what: str) -> Optional[str]:
    """One line when weights plus KV cache exceed `available` bytes, naming both figures; else None."""
    weights = parameters * element_bytes
    if weights + kv_bytes <= available:
        return None
    return (f"{name} does not fit: {weights / GB:.1f} GB of weights ({parameters:,} parameters in {dtype_name}) + "
            f"{kv_bytes / GB:.1f} GB of static KV cache (batch {batch}, {positions} positions) = "
            f"{(weights + kv_bytes) / GB:.1f} GB, more than the {available / GB:.1f} GB {what}; refused before building")


def count_on_meta(model_class, config) -> int:
    import torch

    with torch.device("meta"):
        return sum(p.numel() for p in model_class(config).parameters())


def random_model(model_class, config, dtype):
    """The model with random weights, initialised once: transformers' own pass (`init_weights`, what from_config
    ends with) without torch's pass before it, which it overwrites (twice the time on a 7B model). Every parameter
    is NaN before that pass; one it leaves NaN (a module its `_init_weights` misses) makes us build the usual way."""
    import torch
    from transformers import initialization

    with initialization.no_init_weights():
        model = model_class._from_config(config, dtype=dtype)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(float("nan"))
    model.init_weights()
    missed = [name for name, parameter in model.named_parameters() if torch.isnan(parameter).any()]
    if not missed:
        return model
    del model
    return model_class._from_config(config, dtype=dtype)


def make_inputs(name: str, config, batch: int, prompt_tokens: Optional[int]) -> dict:
    """The harness's inputs under our seed: random prompt ids over the vocabulary with an explicit attention mask;
    for whisper, 30 s of random audio (x 0.1) through its feature extractor and the decoder's start token."""
    import torch

    generator = torch.Generator().manual_seed(0)
    if ARCHITECTURES[name].task == SPEECH_TO_TEXT:
        from transformers import WhisperFeatureExtractor

        extractor = WhisperFeatureExtractor(feature_size=config.num_mel_bins, sampling_rate=SAMPLING_RATE)
        audio = torch.randn(batch, AUDIO_SECONDS * SAMPLING_RATE, generator=generator) * AUDIO_SCALE
        features = extractor(list(audio.numpy()), sampling_rate=SAMPLING_RATE, return_tensors="pt").input_features
        start = torch.full((batch, 1), config.decoder_start_token_id, dtype=torch.int64)
        return {"input_features": features, "decoder_input_ids": start}
    vocab = config.get_text_config(decoder=True).vocab_size
    ids = torch.randint(0, vocab, (batch, prompt_tokens), generator=generator, dtype=torch.int64)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def end_token(config) -> int:
    eos = getattr(config, "eos_token_id", None)
    if eos is None:
        eos = getattr(config.get_text_config(decoder=True), "eos_token_id", None)
    return eos[0] if isinstance(eos, (list, tuple)) else eos


def unsupported(experiment) -> Optional[str]:
    """What of the experiment a generate run does not do (a skip names it), or None."""
    if experiment.test != "eval":
        return "training (eval only)"
    if backend_registry.exports(experiment.dynamo):
        return f"an exported program ({experiment.dynamo})"
    if not axes.at_default("speedup", experiment.speedup):
        return (f"paired with eager (--speedup={experiment.speedup}): the speedups of two isolated runs are in "
                "aggregate.py")
    if not axes.at_default("dynamic", experiment.dynamic) and experiment.dynamic != "all":
        return f"--dynamic={experiment.dynamic} (its batch is fixed)"
    for mode in ("deterministic", "batch_invariant", "aot_precompile"):  # their checks run forwards, not generate
        if getattr(experiment, mode, False):
            return f"--{mode.replace('_', '-')} (its check runs the model's forward, not generate)"
    return None


def build(name: str, experiment, device: str, params: dict, memory_limit: Optional[int] = None) -> BenchmarkModel:
    """An LLM row for `experiment` on `device`: checked against the device's memory, then built in the run's
    precision (random weights), with its inputs and what generate is asked for."""
    import torch
    import transformers

    problem = unsupported(experiment)
    if problem:
        raise ModelSkipped(f"{name} is timed by generate, which does not run {problem}")
    model_class, config_class = classes(name, transformers)
    config = make_config(name, config_class, params)
    prompt, new = lengths(name, getattr(experiment, "prompt_tokens", None), getattr(experiment, "new_tokens", None))
    problem = length_problem(name, prompt, new, max_positions(config))
    if problem:
        raise ValueError(problem)
    batch = experiment.batch_size or 1  # the harness's: its list's 8 is never passed to these models
    dtype_name = precision.cast_dtype(experiment.precision) or "float32"
    dtype = getattr(torch, dtype_name)
    element = torch.empty((), dtype=dtype).element_size()
    positions = (prompt or 0) + new + (1 if ARCHITECTURES[name].task == SPEECH_TO_TEXT else 0)
    parameters = count_on_meta(model_class, config)
    kv = kv_cache_bytes(config, batch, positions, element)
    problem = fit_problem(name, parameters, dtype_name, element, kv, batch, positions,
                          *available_bytes(device, memory_limit))
    if problem:
        raise ModelSkipped(problem)
    arch = ARCHITECTURES[name]
    generation = Generation(new_tokens=new, pad_token_id=end_token(config), prompt_tokens=prompt)
    try:
        module = random_model(model_class, config, dtype).to(device).eval()
    except (MemoryError, torch.OutOfMemoryError) as exc:  # the estimate left too little for what it does not count
        raise generation.out_of_memory(exc, batch) from None
    inputs = make_inputs(name, config, batch, prompt)
    facts = {"task": arch.task, "prompt_tokens": prompt, "new_tokens": new, "positions": positions, "batch_size": batch,
             "kv_cache_bytes": kv, "weights_bytes": parameters * element, "harness_prefill": arch.harness_prefill}
    return BenchmarkModel(
        module=module, example_inputs=(), example_kwargs={k: v.to(device) for k, v in inputs.items()},
        batch_size=batch, generation=dataclasses.replace(generation, facts=facts),
        tolerance=tolerances.by_test("huggingface")["eval"],
        after_move=lambda moved: moved.tie_weights(),  # a move to XLA makes new parameters: tie them again
        info={"class": arch.model_class, "parameters": parameters, "batch_size": batch, "task": arch.task,
              **({"note": arch.note} if arch.note else {})})
