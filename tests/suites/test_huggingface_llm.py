"""The LLM rows' facts (suites/huggingface_llm.py), read by the parent without torch: the lengths each runs (the
harness's 1,000 prompt and 2,000 new tokens; whisper's decoder full after its start token) and the one line for
lengths the model has no positions for."""

from benchmarks.suites import huggingface_llm
from benchmarks.suites.huggingface_llm import ARCHITECTURES


def test_the_seven_rows_and_their_positions():
    assert huggingface_llm.NAMES == ("meta-llama/Llama-3.2-1B", "google/gemma-2-2b", "google/gemma-3-4b-it",
                                     "Qwen/Qwen3-0.6B", "mistralai/Mistral-7B-Instruct-v0.3", "openai/gpt-oss-20b",
                                     "openai/whisper-tiny")
    assert {name: a.max_positions for name, a in ARCHITECTURES.items()} == {
        "meta-llama/Llama-3.2-1B": 131072, "google/gemma-2-2b": 8192, "google/gemma-3-4b-it": 131072,
        "Qwen/Qwen3-0.6B": 40960, "mistralai/Mistral-7B-Instruct-v0.3": 32768, "openai/gpt-oss-20b": 131072,
        "openai/whisper-tiny": 448}
    assert [n for n, a in ARCHITECTURES.items() if a.harness_prefill] == [
        "meta-llama/Llama-3.2-1B", "google/gemma-2-2b", "Qwen/Qwen3-0.6B"]  # the harness's PREFILL_MODELS


def test_lengths_default_to_the_harness_and_whisper_to_its_decoder():
    assert huggingface_llm.lengths("Qwen/Qwen3-0.6B", None, None) == (1000, 2000)
    assert huggingface_llm.lengths("Qwen/Qwen3-0.6B", 32, 16) == (32, 16)
    assert huggingface_llm.lengths("openai/whisper-tiny", None, None) == (None, 447)
    assert huggingface_llm.lengths("openai/whisper-tiny", 32, 16) == (None, 16)  # its prompt is audio


def test_lengths_beyond_the_models_positions_are_one_line():
    assert huggingface_llm.length_problem("google/gemma-2-2b", 6000, 2192) is None
    assert huggingface_llm.length_problem("google/gemma-2-2b", 6000, 2193) == (
        "google/gemma-2-2b: 6000 prompt + 2193 new tokens need 8193 positions; the model has 8192")
    assert huggingface_llm.length_problem("openai/whisper-tiny", None, 448) == (
        "openai/whisper-tiny: its start token + 448 new tokens need 449 positions; the model has 448")
