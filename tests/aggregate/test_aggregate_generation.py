"""aggregate.py's speedup on a generate figure (--metric=decode_tokens_per_second, time_to_first_token, ...) beside
the harness's whole-generate one: a rate's speedup is backend rate / base rate. Fast: synthetic records shaped as
child/generation.py writes them."""

import csv
import json
import statistics

import pytest

from helpers import call_tool

QWEN = "Qwen/Qwen3-0.6B"


def generation_record(dynamo, generate_s, tokens_per_s, ttft_s, model=QWEN, timestamp=100.0):
    """A generate run's record: the whole call is also total_time and per_iter_time (the harness's number)."""
    metrics = {"warmup_time": [generate_s[0] * 5], "generate_time": generate_s, "total_time": generate_s,
               "per_iter_time": generate_s, "decode_tokens_per_second": tokens_per_s, "time_to_first_token": ttft_s,
               "decode_per_token_time": [1 / rate for rate in tokens_per_s],
               # the per-token figures (TPOT, inter-token latency, decode bandwidth) follow the decode rate
               "time_per_output_token": [1 / rate for rate in tokens_per_s],
               "inter_token_latency_p99": [1.5 / rate for rate in tokens_per_s],
               "p99_itl": [1.6 / statistics.median(tokens_per_s)],  # vLLM's, pooled over the calls: one value
               "inter_token_latency_cv": [0.02 * rate for rate in tokens_per_s],
               "decode_bytes_per_second": [2.4e9 * rate for rate in tokens_per_s]}
    experiment = {"accelerator": "cpu", "accelerator_model": "CPU", "xla": None, "xla_flags": None, "dynamo": dynamo,
                  "torch_xla2": None, "test": "eval", "batch_size": 1, "enable_functionalization": False,
                  "prompt_tokens": 32, "new_tokens": 16, "generation_compile": "generate" if dynamo else None}
    return {"model": {"suite_name": "huggingface", "model_name": model}, "experiment": experiment,
            "repeat": len(generate_s), "iterations_per_run": 1, "metrics": metrics, "timestamp": timestamp,
            "verification_code": "VERIFIER_SKIPPED", "status": "ok", "warmup": 1, "round": 0}


def forward_record(dynamo, seconds):
    """A forward model's record of the same run: no generate figures."""
    record = generation_record(dynamo, seconds, [1.0], [1.0], model="BertForMaskedLM")
    for key in ("decode_tokens_per_second", "time_to_first_token", "decode_per_token_time", "generate_time",
                "time_per_output_token", "inter_token_latency_p99", "p99_itl", "inter_token_latency_cv",
                "decode_bytes_per_second"):
        del record["metrics"][key]
    for key in ("prompt_tokens", "new_tokens", "generation_compile"):
        record["experiment"][key] = None
    return record


INDUCTOR = "Inductor[compile-generate,new16,prompt32]"  # the lengths and what was compiled are in the label


def speedups(tmp_path, records, *args) -> tuple:
    """{(backend title, model): speedup} of the latest report's CSV (every backend of the data), and its notes."""
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = call_tool("aggregate.py", path, "--accelerator=cpu", "--report=latest", "--format=csv", *args, check_rc=0)
    rows = list(csv.reader(line.lstrip("# ") for line in result.stdout.splitlines() if line.strip()))
    header, found = rows[0], {}
    for row in rows[1:]:
        for index, name in enumerate(header):
            if name.startswith("ModelName(") and row[index]:
                found[(name[len("ModelName("):-1], row[index])] = float(row[index - 2])
    return found, result.stderr


RECORDS = [
    generation_record(None, [2.0, 2.0, 2.0], [5.0, 5.0, 5.0], [0.40, 0.40, 0.40]),
    # Inductor: the whole generate 1.6x faster, decode 2x the rate, the prefill 0.8x (slower: 0.5 s).
    generation_record("inductor", [1.25, 1.25, 1.25], [10.0, 10.0, 10.0], [0.50, 0.50, 0.50]),
    forward_record(None, [0.010] * 3), forward_record("inductor", [0.005] * 3),
]


@pytest.mark.parametrize("metric, expected", [
    ("time", 1.6),  # the harness's: the whole generate call
    ("decode_tokens_per_second", 2.0),  # a rate: inductor's tokens/s over eager's
    ("decode", 2.0),  # its short name
    ("ttft", 0.8),  # a time: eager's over inductor's
    ("time_per_output_token", 2.0),  # vLLM's TPOT, a time
    ("tpot", 2.0),  # its short name
    ("inter_token_latency_p99", 2.0),
    ("p99_itl", 2.0),  # vLLM's pooled p99, one value a record
    ("inter_token_latency_cv", 0.5),  # less is steadier: eager's 0.1 over inductor's 0.2
    ("decode_bytes_per_second", 2.0),  # a rate: gpt-fast's GB/s, inductor's over eager's
])
def test_the_speedup_is_read_on_the_figure_asked(tmp_path, metric, expected):
    found, _ = speedups(tmp_path, RECORDS, f"--metric={metric}")
    assert found[(INDUCTOR, QWEN)] == pytest.approx(expected)


def test_forward_models_are_left_out_of_a_generate_figure_saying_why(tmp_path):
    found, notes = speedups(tmp_path, RECORDS, "--metric=decode_tokens_per_second")
    assert ("Inductor", "BertForMaskedLM") not in found and found[(INDUCTOR, QWEN)] == pytest.approx(2.0)
    assert "BertForMaskedLM: no decode_tokens_per_second" in notes
    assert "backend rate / base rate" in notes
    # Under the harness's time both models are in.
    found, _ = speedups(tmp_path, RECORDS)
    assert found[("Inductor", "BertForMaskedLM")] == pytest.approx(2.0)


def test_an_unknown_metric_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n")
    result = call_tool("aggregate.py", path, "--metric=tokens", check_rc=2)
    assert "--metric" in result.stderr and "Traceback" not in result.stderr
