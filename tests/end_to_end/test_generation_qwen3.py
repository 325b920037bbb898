"""Qwen3's LLM rows run by generate, for real (child/generation.py, child/accuracy/generation_verify.py): the
full-depth Qwen3-0.6B at 32 prompt and 16 new tokens; at a toy width, its pooled inter-token latencies, the harness's
whole generate under dynamo, PyTorch/XLA's lazy tensors and openxla, a weight-only quantized row; a model that can't
fit refused before it is built. Every architecture at full width: test_generation_runs.py; the checks both make:
tests/generation_checks.py."""

import pytest

from generation_checks import COMMON, SMALL, assert_generated, assert_token_times, sweep
from helpers import read_jsonl, run_runner

pytestmark = pytest.mark.integration


def test_the_full_depth_qwen3_generates_32_prompt_and_16_new_tokens_at_batch_1(tmp_path):
    [record] = sweep(tmp_path, "-k", "Qwen3", "--dynamo=None", "--prompt-tokens=32", "--new-tokens=16")
    assert_generated(record, 32, 16)
    assert record["model_info"]["parameters"] == 596_049_920 and record["experiment"]["batch_size"] == 1
    assert record["experiment"]["generation_compile"] is None and record["generation"]["compiled"] is None
    assert record["metrics"]["decode_tokens_per_second"][0] > 0


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
