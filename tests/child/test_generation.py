"""Generation as a way to run a model (child/generation.py), its pure parts: what generate is asked for, what a config
compiles, one run's figures from its tokens' times, and an out-of-memory error that names the batch and the lengths.
The runs themselves: tests/end_to_end/test_generation_runs.py and test_generation_qwen3.py."""

import pytest

from benchmarks.child import generation
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.suites import Generation

ASKED = Generation(new_tokens=5, pad_token_id=7, prompt_tokens=12)


def test_generate_is_greedy_on_the_static_cache_with_exactly_the_asked_tokens_and_pad_the_end_token():
    assert generation.generate_options(ASKED) == {
        "do_sample": False, "use_cache": True, "cache_implementation": "static", "max_new_tokens": 5,
        "min_new_tokens": 5, "pad_token_id": 7}


def test_what_a_config_compiles():
    eager = ExperimentConfig("cpu", None, None, "eval")
    assert generation.compiled_part(eager) is None
    assert generation.compiled_part(eager.with_(dynamo="inductor")) == "generate"  # the harness's, where unset
    assert generation.compiled_part(eager.with_(dynamo="inductor", generation_compile="forward")) == "forward"
    assert set(generation.COMPILED) == {None, "generate", "forward"}


def test_a_runs_figures_from_each_new_tokens_time_since_the_call():
    figures = generation.token_figures([0.5, 0.6, 0.8, 0.9, 1.4])
    assert figures["time_to_first_token"] == 0.5
    assert figures["decode_per_token_time"] == pytest.approx(0.15)  # steps 0.1, 0.2, 0.1, 0.5
    assert figures["decode_per_token_p90_time"] == pytest.approx(0.41)
    assert figures["decode_tokens_per_second"] == pytest.approx(4 / 0.9)
    assert generation.token_figures([0.25]) == {"time_to_first_token": 0.25}  # one new token: no decode step


def test_the_per_token_figures_as_vllm_and_optimum_benchmark_report_them():
    """TPOT = (E2E - TTFT) / (n - 1); the inter-token latencies' mean, percentiles (linear, as numpy), population
    stdev and CV; worked by hand."""
    figures = generation.token_figures([0.5, 0.6, 0.8, 0.9, 1.4], total=1.5)  # steps 0.1, 0.2, 0.1, 0.5
    assert figures["time_per_output_token"] == pytest.approx((1.5 - 0.5) / 4)
    assert figures["inter_token_latency_mean"] == pytest.approx(0.9 / 4)
    # sorted steps 0.1, 0.1, 0.2, 0.5: the q-quantile sits at position 3q
    assert figures["inter_token_latency_p50"] == pytest.approx(0.15) == figures["decode_per_token_time"]
    assert figures["inter_token_latency_p90"] == pytest.approx(0.2 + 0.7 * 0.3) == figures["decode_per_token_p90_time"]
    assert figures["inter_token_latency_p95"] == pytest.approx(0.2 + 0.85 * 0.3)
    assert figures["inter_token_latency_p99"] == pytest.approx(0.2 + 0.97 * 0.3)
    # deviations from 0.225: -0.125, -0.025, -0.125, 0.275; squares sum to 0.1075, over 4
    assert figures["inter_token_latency_stdev"] == pytest.approx((0.1075 / 4) ** 0.5)
    assert figures["inter_token_latency_cv"] == pytest.approx((0.1075 / 4) ** 0.5 / 0.225)

    steady = generation.token_figures([0.5, 0.6, 0.9, 1.0, 1.3], total=1.7)  # steps 0.1, 0.3, 0.1, 0.3
    assert steady["inter_token_latency_stdev"] == pytest.approx(0.1)
    assert steady["inter_token_latency_cv"] == pytest.approx(0.5)
    assert steady["time_per_output_token"] == pytest.approx(0.3)  # 1.2 s after the first token, 4 tokens
    assert steady["decode_tokens_per_second"] == pytest.approx(4 / 0.8)  # the span from the first to the last token

    assert "time_per_output_token" not in generation.token_figures([0.5, 0.6])  # without the whole call, no TPOT
    assert generation.token_figures([0.25], total=0.3) == {"time_to_first_token": 0.25}


def test_the_time_to_first_tokens_percentiles_over_the_timed_calls():
    found = generation.across_runs([0.4, 0.1, 0.3, 0.2])  # sorted 0.1 .. 0.4: the q-quantile at position 3q
    assert found == {"time_to_first_token_p50": [pytest.approx(0.25)], "time_to_first_token_p90": [pytest.approx(0.37)],
                     "time_to_first_token_p95": [pytest.approx(0.385)],
                     "time_to_first_token_p99": [pytest.approx(0.397)]}
    assert generation.across_runs([0.7]) == {name: [0.7] for name in generation.TTFT_PERCENTILES}
    assert generation.across_runs([]) == {}


def test_vllms_inter_token_latencies_pool_every_gap_of_every_call():
    """Two calls: gaps 0.1, 0.1, 0.4 and 0.2, 0.2, 0.2. Pooled, sorted 0.1 0.1 0.2 0.2 0.2 0.4: the q-quantile at
    position 5q; per call, the p99s are 0.394 and 0.2 (their median 0.297), pooled 0.39."""
    calls = [[0.5, 0.6, 0.7, 1.1], [0.3, 0.5, 0.7, 0.9]]
    pooled = generation.pooled_itl(calls)
    assert pooled["median_itl"] == [pytest.approx(0.2)] and pooled["p90_itl"] == [pytest.approx(0.3)]
    assert pooled["p95_itl"] == [pytest.approx(0.35)] and pooled["p99_itl"] == [pytest.approx(0.39)]
    assert pooled["mean_itl"] == [pytest.approx(1.2 / 6)]
    assert pooled["std_itl"] == [pytest.approx((sum((g - 0.2) ** 2 for g in (0.1, 0.1, 0.4, 0.2, 0.2, 0.2)) / 6) ** 0.5)]
    per_call = [generation.token_figures(times)["inter_token_latency_p99"] for times in calls]
    assert per_call == [pytest.approx(0.394), pytest.approx(0.2)]  # each call's own: kept under its name
    assert generation.pooled_itl([[0.5], [0.4]]) == {}  # one new token a call: no gap


def test_percentile_interpolates_as_numpy_does():
    import numpy as np

    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0]
    for fraction in (0.0, 0.5, 0.9, 1.0):
        assert generation.percentile(values, fraction) == pytest.approx(np.quantile(values, fraction))


def test_an_out_of_memory_names_the_batch_and_the_lengths():
    import torch

    named = ASKED.out_of_memory(torch.OutOfMemoryError("CUDA out of memory"), 2)
    assert isinstance(named, torch.OutOfMemoryError)
    assert str(named) == "out of memory generating at batch 2, 12 prompt tokens + 5 new tokens: CUDA out of memory"
    audio = Generation(new_tokens=447, pad_token_id=0).out_of_memory(MemoryError(), 1)
    assert str(audio).startswith("out of memory generating at batch 1, its audio + 447 new tokens")


def test_leading_matches_and_the_logit_steps_judged():
    import torch

    from benchmarks.child.accuracy import generation_verify

    eager = torch.tensor([[5, 6, 7, 8], [1, 2, 3, 4]])
    assert generation_verify.leading_matches(eager, eager.clone()) == 4
    assert generation_verify.leading_matches(eager, torch.tensor([[5, 6, 0, 8], [1, 2, 3, 4]])) == 2
    assert generation_verify.judged_steps(eager, torch.tensor([[5, 0, 0, 0], [1, 0, 0, 0]])) == 2
    assert generation_verify.judged_steps(eager, torch.tensor([[5, 6, 7, 8], [9, 2, 3, 4]])) == 1  # a row parted at once


def test_an_out_of_memory_of_a_generate_run_is_an_oom_record():
    import torch

    from benchmarks.child import config_failures
    from benchmarks.results.records import RecordStatus

    assert config_failures.classify(ASKED.out_of_memory(torch.OutOfMemoryError("no room"), 1)) == RecordStatus.OOM


@pytest.mark.integration  # dynamo traces (its eager backend: no Inductor)
@pytest.mark.parametrize("make", [
    lambda experiment: generation.token_clock(experiment, 4),
    lambda experiment: __import__("benchmarks.child.accuracy.generation_verify", fromlist=["_"]).logits_recorder(),
], ids=["token clock", "logits recorder"])
def test_a_fresh_processor_each_generate_call_does_not_recompile_a_compiled_generate(make):
    """Dynamo guards on a logits processor's type: a class made per call recompiled the harness's whole generate at
    every timed call (1.95 s a call on a toy Qwen3 whose steady call takes 10 ms)."""
    import torch
    from transformers import LogitsProcessorList

    experiment = ExperimentConfig("cpu", None, None, "eval")
    compiles = []

    def counting(graph, example_inputs):
        compiles.append(graph)
        return graph.forward

    @torch.compile(backend=counting)
    def step(processors, scores):
        return processors(None, scores * 2) + 1

    torch._dynamo.reset()
    for _ in range(3):
        processor = make(experiment)
        if hasattr(processor, "start"):
            processor.start()
        step(LogitsProcessorList([processor]), torch.ones(1, 4))
    first = len(compiles)
    for _ in range(3):
        step(LogitsProcessorList([make(experiment)]), torch.ones(1, 4))
    assert first >= 1 and len(compiles) == first
    torch._dynamo.reset()
