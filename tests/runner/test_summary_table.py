"""The end-of-sweep table (runner/progress.py, runner/summary_table.py) on a tiny real sweep's records
(tests/fixtures/reads: the faults suite under eager and aot_eager with --verify; a small Qwen3 generating under eager
and Inductor): a config whose outputs failed the check is marked where its speedup is, with a legend; ratios keep
their significant digits; every cell has its spread, graph breaks and roofline fraction beside the speedup; rounds are
pooled; the LLM rows get the figures vLLM and optimum-benchmark print."""

import copy
import json
import re

from helpers import ROOT

from benchmarks.results import number_text
from benchmarks.runner import progress

READS = ROOT / "tests" / "fixtures" / "reads"


def records(name: str) -> list:
    return [json.loads(line) for line in (READS / name).read_text().splitlines()]


def row_of(table: str, model: str) -> str:
    [row] = [line for line in table.splitlines() if line.startswith(model + " ")]
    return row


def test_a_config_that_failed_its_check_is_marked_beside_its_speedup_with_a_legend():
    table = progress.speedup_table(records("faults_verified.jsonl"))
    failed = row_of(table, "mask_differs_a_lot")  # aot_eager's boolean mask is a quarter off: fail_accuracy
    assert re.search(r"\(0\.0\d{3}x, 0 breaks, roofline [0-9.]+%\) ✗fail_accuracy$", failed), failed
    assert "✗" not in row_of(table, "graph_break")  # passed its check
    assert number_text.FAILED_LEGEND in table.splitlines()


def test_ratios_keep_three_significant_digits():
    assert [number_text.ratio(v) for v in (0.0046, 0.418, 18.18, 2.0, 1234.5)] == [
        "0.00460x", "0.418x", "18.2x", "2.00x", "1234x"]
    assert [number_text.percent(v) for v in (0.0016, 0.42)] == ["0.16%", "42%"]


def test_every_cell_has_its_spread_and_the_graph_breaks_beside_its_speedup():
    table = progress.speedup_table(records("faults_verified.jsonl"))
    row = row_of(table, "falls_back_to_eager")  # two graph breaks and a fallback to eager, by design
    assert re.search(r"\s0\.\d{3} ±[0-9.]+%!? \(0\.\d{3}x, 2 breaks, roofline [0-9.]+%\)", row), row
    assert number_text.SPREAD_LEGEND in table and "N breaks: dynamo's graph breaks" in table


def test_rounds_are_pooled_and_a_wide_spread_is_marked_unstable():
    eager, compiled = records("llm_generate.jsonl")
    rounds = []
    for index, seconds in enumerate((0.00148, 0.115)):  # a --rounds 2 cell from 1.48 to 115 ms
        record = copy.deepcopy(compiled)
        record["round"] = index
        record["metrics"]["per_iter_time"] = [seconds] * 3
        rounds.append(record)
    row = row_of(progress.speedup_table([eager] + rounds), "Qwen/Qwen3-0.6B")
    assert re.search(r"58\.240 ±97%! \(0\.935x", row), row  # the median of all six runs, the range of both rounds


def test_the_llm_rows_show_ttft_tpot_itl_tokens_per_second_and_bandwidth():
    table = progress.speedup_table(records("llm_generate.jsonl"))
    [line] = [line for line in table.splitlines() if line.startswith("  Qwen/Qwen3-0.6B inductor")]
    assert re.fullmatch(r"  Qwen/Qwen3-0\.6B inductor\[compile-forward\]: TTFT [0-9.]+ ms, TPOT [0-9.]+ ms, "
                        r"ITL p50 [0-9.]+ ms p99 [0-9.]+ ms, [0-9.]+ tokens/s, bandwidth [0-9.]+% of the measured, "
                        r"generate 36\.6 ms", line), line
