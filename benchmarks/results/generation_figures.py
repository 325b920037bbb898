"""A generate run's figures by name (child/generation.py; docs/generation.md), and which way each is better. No
imports: a tool's --help lists them (aggregate.py's --metric) without loading numpy; results/metric_words.py, where
every tool reads a record's metrics, re-exports them."""

# A generate run's figures (child/generation.py), by name: what each is. Its whole generate time is also the
# record's total_time and per_iter_time, so `time` (and every speedup) is the harness's number.
GENERATION = {
    "time_to_first_token": "the prefill: from the generate call to the first new token's logits (seconds)",
    "decode_per_token_time": "the median time of each new token after the first (seconds)",
    "decode_per_token_p90_time": "the 90th percentile of those (seconds)",
    "decode_tokens_per_second": "new tokens after the first per second of their decoding (more is better)",
    "generate_time": "the whole generate call, closed by the device's sync (seconds)",
    "compile_time": "the first generate call beyond a steady one (seconds)",
    # vLLM's and optimum-benchmark's per-token figures (docs/generation.md has each formula)
    "time_per_output_token": "TPOT: (the whole generate call - time to first token) / (new tokens - 1) (seconds)",
    "inter_token_latency_mean": "the mean time between consecutive new tokens (seconds)",
    "inter_token_latency_p50": "their median (seconds)",
    "inter_token_latency_p90": "their 90th percentile (seconds)",
    "inter_token_latency_p95": "their 95th percentile (seconds)",
    "inter_token_latency_p99": "their 99th percentile (seconds)",
    "inter_token_latency_stdev": "their population standard deviation (seconds)",
    "inter_token_latency_cv": "their coefficient of variation: stdev / mean (a fraction; less is steadier)",
    "time_to_first_token_p50": "the median time to first token over the record's timed calls (seconds)",
    "time_to_first_token_p90": "its 90th percentile over the timed calls (seconds)",
    "time_to_first_token_p95": "its 95th percentile over the timed calls (seconds)",
    "time_to_first_token_p99": "its 99th percentile over the timed calls (seconds)",
    "decode_bytes_per_second": "bytes per decoded token x decode tokens per second: gpt-fast's GB/s (more is better)",
    "decode_bandwidth_fraction": "decode bytes/s over the machine's measured memory bandwidth (more is better)",
}
# The generate figures a speedup is also read on (aggregate.py's --metric), beyond the whole generate time (`time`).
GENERATION_FIGURES = ("decode_tokens_per_second", "time_to_first_token", "decode_per_token_time",
                      "decode_per_token_p90_time", "time_per_output_token", "inter_token_latency_mean",
                      "inter_token_latency_p50", "inter_token_latency_p90", "inter_token_latency_p95",
                      "inter_token_latency_p99", "inter_token_latency_stdev", "inter_token_latency_cv",
                      "time_to_first_token_p50", "time_to_first_token_p90", "time_to_first_token_p95",
                      "time_to_first_token_p99", "decode_bytes_per_second", "decode_bandwidth_fraction")
# Their short names on a command line (aggregate.py's and history.py detect's --metric).
SHORT_NAMES = {"decode": "decode_tokens_per_second", "ttft": "time_to_first_token"}
# Metrics where more is better: rates.
# fraction_of_attainable, achieved_flops_per_second: the roofline's per-run figures (results/roofline_figures.py).
HIGHER_IS_BETTER = frozenset({"decode_tokens_per_second", "tflops", "fraction_of_attainable",
                              "achieved_flops_per_second"})


def higher_is_better(metric: str) -> bool:
    return metric in HIGHER_IS_BETTER


# vLLM's short names of its per-token figures.
SHORT_NAMES.update(tpot="time_per_output_token", itl="inter_token_latency_mean")
# The decode's achieved bandwidth and its share of the ceiling (results/decode_bandwidth.py): more is better.
HIGHER_IS_BETTER = HIGHER_IS_BETTER | {"decode_bytes_per_second", "decode_bandwidth_fraction"}
