"""The LLM rows' generation keys (docs/generation.md): the prompt and new-token lengths and what a compiled config
compiles, three experiment axes (config/axes.py). Null in every other config, and the default for the LLM rows
(the harness's 1,000 prompt and 2,000 new tokens; whisper's decoder full; the whole generate compiled), so that
results files written before the keys existed keep their fingerprints. No torch: the parent plans with them.
"""

from __future__ import annotations

from typing import Optional
from benchmarks.config.axis import Axis, EAGER_LACKS, ONE_PER_SWEEP, flag_type

# generation_compile: what a dynamo config of an LLM row compiles (config/generation_modes.py, the generate step's).
from benchmarks.config.generation_modes import COMPILE_CHOICES, COMPILE_FORWARD


def parse_tokens(value) -> Optional[int]:
    """A record's or a flag's token count: a positive integer, or None (the model's default)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null", "default")):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or isinstance(value, float) or number < 1:
        raise ValueError(f"a token count must be a positive integer, not {value!r}")
    return number


def parse_compile(value) -> Optional[str]:
    if value is None:
        return None
    if value not in COMPILE_CHOICES:
        raise ValueError(f"generation_compile must be one of {', '.join(COMPILE_CHOICES)} or null, not {value!r}")
    return value


ORDER = 150  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "prompt_tokens",
        "the LLM rows' prompt length in tokens (huggingface; default: the harness's 1000; whisper's prompt is its "
        "audio); set in those configs only; experiment key `prompt_tokens`",
        parse=parse_tokens, kind=ONE_PER_SWEEP, type=flag_type(parse_tokens),
        metavar="N", label="prompt{}", slug="prompt{}", example=32,
        meaning="an LLM row's prompt length", record_type="count", only_some_models=True),
    Axis(
        "new_tokens",
        "the LLM rows' number of new tokens, exactly (huggingface; default: the harness's 2000; whisper: its decoder's "
        "448 positions after the start token, 447); set in those configs only; experiment key `new_tokens`",
        parse=parse_tokens, kind=ONE_PER_SWEEP, type=flag_type(parse_tokens),
        metavar="N", label="new{}", slug="new{}", example=16,
        meaning="an LLM row's generated tokens", record_type="count", only_some_models=True),
    Axis(
        "generation_compile",
        "what a compiled LLM row compiles (repeatable): generate (default: the whole generate call under dynamo, as the "
        "dynamo harness) or forward (the model's forward at each decode step, as transformers' static-cache path "
        "compiles it); experiment key `generation_compile`",
        parse=parse_compile, choices=COMPILE_CHOICES,
        for_config=lambda value, e: value if e.dynamo else None, label="compile-{}", slug="gen-compile-{}",
        example=COMPILE_FORWARD, on_eager=EAGER_LACKS,  # an LLM row's eager compiles nothing of generate
        meaning="what a compiled LLM row compiles", only_some_models=True),
)
