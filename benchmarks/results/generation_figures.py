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
}
# The generate figures a speedup is also read on (aggregate.py's --metric), beyond the whole generate time (`time`).
GENERATION_FIGURES = ("decode_tokens_per_second", "time_to_first_token", "decode_per_token_time",
                      "decode_per_token_p90_time")
# Their short names on a command line (aggregate.py's and history.py detect's --metric).
SHORT_NAMES = {"decode": "decode_tokens_per_second", "ttft": "time_to_first_token"}
# Metrics where more is better: rates.
# fraction_of_attainable, achieved_flops_per_second: the roofline's per-run figures (results/roofline_figures.py).
HIGHER_IS_BETTER = frozenset({"decode_tokens_per_second", "tflops", "fraction_of_attainable",
                              "achieved_flops_per_second"})


def higher_is_better(metric: str) -> bool:
    return metric in HIGHER_IS_BETTER
