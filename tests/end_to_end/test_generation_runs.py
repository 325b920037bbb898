"""The LLM rows run by generate, for real (child/generation.py, child/accuracy/generation_verify.py): every
architecture at
full width with 2 layers generates a few tokens eagerly, and under Inductor with eager as --verify's reference (all
seven in the slow tier, `make test-slow`; whisper and gpt-oss in `make test`); the full-depth
Qwen3-0.6B at 32 prompt and 16 new tokens; the harness's whole generate under dynamo; the figures, facts and verdicts
each record carries. Tiny lengths: the compiles are most of the time."""

import pytest

from helpers import read_jsonl, run_runner

from benchmarks.child import generation
from benchmarks.suites import huggingface_llm

pytestmark = pytest.mark.integration

FIGURES = ("time_to_first_token", "decode_per_token_time", "decode_per_token_p90_time", "decode_tokens_per_second",
           "generate_time", "total_time", "per_iter_time", "warmup_time", "compile_time", "peak_memory_bytes")
COMMON = ("--suite-name=huggingface", "--accelerator=cpu", "--xla=None", "--test=eval", "--repeat=1", "--warmup=1")


def sweep(out, *args) -> list:
    run_runner(*COMMON, f"--output-dirname={out}", *args, timeout=1200)
    return read_jsonl(out / "results.jsonl")


def assert_generated(record, prompt, new):
    assert record["status"] == "ok", record.get("error")
    metrics, facts = record["metrics"], record["generation"]
    compiled = record["experiment"]["dynamo"] is not None or record["experiment"]["xla"] is not None
    expected = FIGURES if compiled else tuple(name for name in FIGURES if name != "compile_time")
    assert all(len(metrics[name]) == 1 for name in expected), sorted(metrics)
    assert compiled or "compile_time" not in metrics  # eager compiles nothing: no compile time, never a negative one
    assert metrics["generate_time"] == metrics["total_time"] == metrics["per_iter_time"]
    assert 0 < metrics["time_to_first_token"][0] < metrics["generate_time"][0]
    assert (facts["prompt_tokens"], facts["new_tokens"], facts["generated_tokens"]) == (prompt, new, new)
    assert record["iterations_per_run"] == 1 and facts["batch_size"] == 1
    assert_token_times(record, new)


def assert_token_times(record, new):
    """The raw per-token times (generation.token_seconds, one list per timed call) are in the record, and the
    summaries in its metrics are theirs: TTFT, the decode rate, the inter-token latencies, TPOT, TTFT's percentiles."""
    metrics, calls = record["metrics"], record["generation"]["token_seconds"]
    assert len(calls) == len(metrics["generate_time"]) == record["repeat"]
    for index, times in enumerate(calls):
        assert len(times) == new and times == sorted(times) and 0 < times[0] and times[-1] < metrics["generate_time"][index]
        steps = [b - a for a, b in zip(times, times[1:])]
        assert metrics["time_to_first_token"][index] == pytest.approx(times[0], abs=1e-8)
        assert metrics["decode_tokens_per_second"][index] == pytest.approx((new - 1) / (times[-1] - times[0]), rel=1e-6)
        assert metrics["inter_token_latency_mean"][index] == pytest.approx(sum(steps) / len(steps), abs=1e-8)
        assert metrics["inter_token_latency_p99"][index] == pytest.approx(generation.percentile(steps, 0.99), abs=1e-8)
        assert min(steps) - 1e-8 <= metrics["inter_token_latency_p50"][index] <= max(steps) + 1e-8
        assert metrics["time_per_output_token"][index] == pytest.approx(
            (metrics["generate_time"][index] - times[0]) / (new - 1), abs=1e-8)
    assert metrics["time_to_first_token_p50"] == [pytest.approx(generation.percentile(metrics["time_to_first_token"],
                                                                                      0.5))]
    assert_pooled(record)


def assert_pooled(record):
    """vLLM's pooled inter-token latencies (metrics.itl_*) are numpy's statistics over every gap of every call the
    record keeps (generation.token_seconds)."""
    import numpy as np

    gaps = np.concatenate([np.diff(times) for times in record["generation"]["token_seconds"]])
    metrics = record["metrics"]
    # The record keeps each token time rounded to the nanosecond, and the figures come from the times unrounded: a
    # figure read again from the record agrees to within a few nanoseconds (a relative 1e-9 alone failed at 4.5e-12).
    ns = 2e-9
    if not len(gaps):
        assert "p99_itl" not in metrics
        return
    for name, q in (("median_itl", 50), ("p90_itl", 90), ("p95_itl", 95), ("p99_itl", 99)):
        assert metrics[name] == [pytest.approx(float(np.percentile(gaps, q)), rel=0, abs=ns)], name
    assert metrics["mean_itl"] == [pytest.approx(float(gaps.mean()), rel=0, abs=ns)]
    assert metrics["std_itl"] == [pytest.approx(float(gaps.std()), rel=0, abs=ns)]


GPT_OSS = "openai/gpt-oss-20b"
# gpt-oss at full width and 2 layers, 4 of its 32 experts (11 GB in float32 with all 32)
GPT_OSS_PARAMS = "--model-params={\"num_hidden_layers\": 2, \"num_local_experts\": 4}"
TWO_LAYERS = "--model-params={\"num_hidden_layers\": 2}"
SHORT = ("--prompt-tokens=4", "--new-tokens=3")


def generate(out, names, *args) -> list:
    """`names` at full width with 2 layers (gpt-oss with 4 experts), each generating 3 tokens after 4."""
    others = [name for name in names if name != GPT_OSS]
    records = sweep(out / "others", "-k", "|".join(others), TWO_LAYERS, *SHORT, *args) if others else []
    if GPT_OSS in names:
        records += sweep(out / "oss", "-k", "gpt-oss", GPT_OSS_PARAMS, *SHORT, *args)
    assert sorted(r["model"]["model_name"] for r in records) == sorted(names)
    for record in records:
        assert_generated(record, None if "whisper" in record["model"]["model_name"] else 4, 3)
    return records


def assert_compiled_and_verified(records, compiled):
    for record in records:
        name = record["model"]["model_name"]
        assert record["experiment"]["generation_compile"] == compiled and record["generation"]["compiled"] == compiled
        assert record["dynamo_stats"]["graphs"] >= 1
        # eager generated too: --verify's reference, judged by the logits, the tokens reported
        assert record["accuracy"] == "pass" and record["verification_code"] == "PASS", (name, record["accuracy_reason"])
        assert record["generation_verify"]["new_tokens"] == 3 and record["generation_verify"]["logit_steps_judged"] >= 1


def test_every_architecture_at_full_width_with_2_layers_generates_eagerly(tmp_path):
    generate(tmp_path, huggingface_llm.NAMES, "--dynamo=None")


def test_an_encoder_decoder_and_a_mixture_of_experts_generate_under_inductor_checked_against_eager(tmp_path):
    # the two architectures least like the decoder-only rest (Qwen3's whole generate is compiled below)
    records = generate(tmp_path, ["openai/whisper-tiny", GPT_OSS], "--dynamo=inductor", "--generation-compile=forward",
                       "--verify")
    assert_compiled_and_verified(records, "forward")


@pytest.mark.slow  # 7 Inductor compiles at full width: about 5 minutes here (make test-slow)
def test_every_architecture_at_full_width_with_2_layers_generates_under_inductor_and_eager(tmp_path):
    records = generate(tmp_path, huggingface_llm.NAMES, "--dynamo=inductor", "--generation-compile=forward",
                       "--verify")
    assert_compiled_and_verified(records, "forward")


def test_the_full_depth_qwen3_generates_32_prompt_and_16_new_tokens_at_batch_1(tmp_path):
    [record] = sweep(tmp_path, "-k", "Qwen3", "--dynamo=None", "--prompt-tokens=32", "--new-tokens=16")
    assert_generated(record, 32, 16)
    assert record["model_info"]["parameters"] == 596_049_920 and record["experiment"]["batch_size"] == 1
    assert record["experiment"]["generation_compile"] is None and record["generation"]["compiled"] is None
    assert record["metrics"]["decode_tokens_per_second"][0] > 0


SMALL = ('{"num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2, '
         '"num_key_value_heads": 1, "head_dim": 32, "vocab_size": 512, "bos_token_id": 0, "eos_token_id": 1}')


def test_a_tiny_llms_pooled_inter_token_latencies_are_numpys_over_every_gap(tmp_path):
    """Three timed calls of 6 new tokens: the pooled p99 is numpy's over the 15 gaps, each call's own p99 kept per
    call under its name (the tools read their median)."""
    [record] = sweep(tmp_path, "-k", "Qwen3", f"--model-params={SMALL}", "--dynamo=None", "--prompt-tokens=4",
                     "--new-tokens=6", "--repeat=3")
    assert record["status"] == "ok" and record["repeat"] == 3, record.get("error")
    assert_token_times(record, 6)  # each call's figures its own, and the pooled ones numpy's over every gap
    metrics = record["metrics"]
    assert len(metrics["inter_token_latency_p99"]) == 3 and len(metrics["p99_itl"]) == 1
    assert sum(len(times) - 1 for times in record["generation"]["token_seconds"]) == 15


def test_the_harness_whole_generate_under_dynamo_and_a_verdict_from_the_logits(tmp_path):
    # tolerance 0: Inductor's logits are not eager's to the bit, so the verdict fails while every token matches
    [record] = sweep(tmp_path, "-k", "Qwen3", f"--model-params={SMALL}", "--dynamo=inductor", "--prompt-tokens=4",
                     "--new-tokens=2", "--verify", "--verification-tolerance=0")
    assert_generated(record, 4, 2)
    assert record["experiment"]["generation_compile"] == "generate" and "whole generate" in record["generation"][
        "compiled_means"]
    assert record["dynamo_stats"]["graphs"] > 1  # generate itself breaks into graphs, as under the harness
    assert (record["verification_code"], record["accuracy"]) == ("FAIL", "fail_accuracy")
    assert record["generation_verify"] == {"leading_tokens_match": 2, "new_tokens": 2, "logit_steps_judged": 2}
    assert "2 of 2 leading new tokens match eager's" in record["accuracy_reason"]


@pytest.mark.requires_xla
def test_pytorch_xla_generates_with_lazy_tensors_and_a_compiled_forward_checked_against_eager(tmp_path):
    on_xla = [arg if arg != "--xla=None" else "--xla=PJRT" for arg in COMMON]
    run_runner(*on_xla, f"--output-dirname={tmp_path}", "-k", "Qwen3", f"--model-params={SMALL}", "--dynamo=None",
               "--dynamo=openxla", "--generation-compile=forward", "--prompt-tokens=4", "--new-tokens=3", "--verify",
               timeout=1200)
    records = read_jsonl(tmp_path / "results.jsonl")
    by_dynamo = {r["experiment"]["dynamo"]: r for r in records}
    assert sorted(by_dynamo, key=str) == [None, "openxla"] and all(r["experiment"]["xla"] == "PJRT" for r in records)
    lazy, forward = by_dynamo[None], by_dynamo["openxla"]
    for record in records:
        assert_generated(record, 4, 3)
        # the clock runs each step's graph before it reads the time, and says so
        assert "device sync at each token" in record["generation"]["token_clock"]
        assert any("PyTorch/XLA" in line for line in record["generation"]["known_differences"])
        # judged against eager on the CPU, by the logits
        assert record["accuracy"] == "pass" and record["generation_verify"]["logit_steps_judged"] >= 1
    assert lazy["generation"]["compiled"] is None and "lazy tensors" in lazy["generation"]["compiled_means"]
    assert forward["generation"]["compiled"] == "forward" and forward["dynamo_stats"]["graphs"] >= 1


def test_a_model_that_cant_fit_is_refused_before_it_is_built_naming_weights_and_kv_cache(tmp_path):
    [record] = sweep(tmp_path, "-k", "Qwen3", "--dynamo=None", "--prompt-tokens=32", "--new-tokens=16",
                     "--batch-size=10000")  # a static KV cache of 110 GB
    assert record["status"] == "skip" and record["error"]["phase"] == "load"
    assert record["error"]["message"].startswith("Qwen/Qwen3-0.6B does not fit: 2.4 GB of weights (596,049,920 "
                                                 "parameters in float32) + 110.1 GB of static KV cache (batch 10000, "
                                                 "48 positions) = 112.5 GB, more than the ")
    assert record["error"]["message"].endswith(" GB available on this host; refused before building")


@pytest.mark.requires_torchao
def test_a_weight_only_recipe_quantizes_an_llm_row_and_its_eager_reference_alike(tmp_path):
    [record] = sweep(tmp_path, "-k", "Qwen3", f"--model-params={SMALL}", "--dynamo=None", "--quantization=int8wo",
                     "--prompt-tokens=4", "--new-tokens=2", "--verify")
    assert_generated(record, 4, 2)
    quantized = record["model_info"]["quantization"]
    assert (quantized["recipe"], quantized["linear_layers"]) == ("int8wo", 8)  # 7 per layer, and lm_head
    assert record["experiment"]["quantization"] == "int8wo" and record["accuracy"] == "pass"
