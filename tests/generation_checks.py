"""What the LLM generation tests check of the records their sweeps write (tests/end_to_end/test_generation_runs.py,
every architecture at full width, and test_generation_qwen3.py, Qwen3's own rows): the figures, the facts, the raw
per-token times and the summaries made of them. Two files so that `make test`'s two workers share their minutes."""

import pytest

from helpers import read_jsonl, run_runner

from benchmarks.child import generation

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


def assert_decode_roofline(record, prompt, new):
    """An eager generate run's roofline: per decoded token (docs/roofline.md), memory-bound, its bytes the weights' and
    the KV cache's, its achieved rate the slowest decode rate's."""
    roofline = record["roofline"]
    assert record["status"] == "ok" and "why_not" not in roofline, roofline
    assert roofline["decode_position"] == prompt + new / 2
    detail = roofline["bytes_detail"]
    assert roofline["bytes_per_token"] == detail["weights"] + detail["kv_cache"] and detail["kv_cache"] > 0
    assert roofline["bound"] == "memory" and 0 < roofline["fraction_of_attainable"] <= 1
    assert roofline["achieved_bytes_per_second"] == pytest.approx(
        roofline["bytes_per_token"] * sorted(record["metrics"]["decode_tokens_per_second"])[0])


def assert_compiled_and_verified(records, compiled):
    for record in records:
        name = record["model"]["model_name"]
        assert record["experiment"]["generation_compile"] == compiled and record["generation"]["compiled"] == compiled
        assert record["dynamo_stats"]["graphs"] >= 1
        # eager generated too: --verify's reference, judged by the logits, the tokens reported
        assert record["accuracy"] == "pass" and record["verification_code"] == "PASS", (name, record["accuracy_reason"])
        assert record["generation_verify"]["new_tokens"] == 3 and record["generation_verify"]["logit_steps_judged"] >= 1


# Qwen3 at a toy width: the machinery, not the model
SMALL = ('{"num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2, '
         '"num_key_value_heads": 1, "head_dim": 32, "vocab_size": 512, "bos_token_id": 0, "eos_token_id": 1}')
