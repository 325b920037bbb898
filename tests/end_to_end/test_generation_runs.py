"""The LLM rows run by generate, for real (child/generation.py, child/accuracy/generation_verify.py): every
architecture at full width with 2 layers generates a few tokens eagerly, and under Inductor with eager as --verify's
reference (all seven in the slow tier, `make test-slow`; whisper and gpt-oss in `make test`). Tiny lengths: the
builds and compiles are most of the time. Qwen3's own runs (full depth, the harness's whole generate, PyTorch/XLA, a
quantized row, a refusal) are in test_generation_qwen3.py, a file of its own so that `make test`'s two workers share
the minutes; the checks both make are tests/generation_checks.py. The full-width runs stay in one file: gpt-oss at
full width holds gigabytes, and two of them at once on the two workers would not fit every machine."""

import pytest

from generation_checks import GPT_OSS, assert_compiled_and_verified, assert_decode_roofline, generate

from benchmarks.suites import huggingface_llm

pytestmark = pytest.mark.integration


def test_every_architecture_at_full_width_with_2_layers_generates_eagerly(tmp_path):
    records = generate(tmp_path, huggingface_llm.NAMES, "--dynamo=None")
    # Qwen3's row gets its roofline per decoded token (the roofline's own real runs: test_roofline_runs.py)
    [qwen3] = [r for r in records if r["model"]["model_name"] == "Qwen/Qwen3-0.6B"]
    assert_decode_roofline(qwen3, 4, 3)


def test_an_encoder_decoder_and_a_mixture_of_experts_generate_under_inductor_checked_against_eager(tmp_path):
    # the two architectures least like the decoder-only rest (Qwen3's whole generate: test_generation_qwen3.py)
    records = generate(tmp_path, ["openai/whisper-tiny", GPT_OSS], "--dynamo=inductor", "--generation-compile=forward",
                       "--verify")
    assert_compiled_and_verified(records, "forward")


@pytest.mark.slow  # 7 Inductor compiles at full width: about 5 minutes here (make test-slow)
def test_every_architecture_at_full_width_with_2_layers_generates_under_inductor_and_eager(tmp_path):
    records = generate(tmp_path, huggingface_llm.NAMES, "--dynamo=inductor", "--generation-compile=forward",
                       "--verify")
    assert_compiled_and_verified(records, "forward")
