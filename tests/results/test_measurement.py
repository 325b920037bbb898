"""results/measurement.py: one definition of what a record measured, and the rule that no tool computes it
elsewhere; results/selection.py: the selection flags and their matcher."""

import ast

import numpy as np
import pytest

from helpers import ROOT

from benchmarks.config.flags import tool_parser
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.results import measurement, selection
from benchmarks.results.measurement import Measurement

EXPERIMENT = {"accelerator": "cpu", "accelerator_model": "Xeon", "xla": None, "xla_flags": None, "dynamo": "inductor",
              "torch_xla2": None, "test": "eval", "batch_size": 8, "enable_functionalization": False}


def record(metrics=None, warmup=True, **experiment):
    out = {"model": {"suite_name": "dummy", "model_name": "mlp"}, "experiment": dict(EXPERIMENT, **experiment),
           "timestamp": 100.0, "iterations_per_run": 2, "metrics": metrics or {}}
    if warmup:
        out["warmup"] = 1
    return out


def test_our_records_keep_every_timed_sample_upstream_records_lose_their_warm_up():
    ours = Measurement(record({"warmup_time": [9.0], "total_time": [2.0, 4.0, 6.0, 8.0]}))
    upstream = Measurement(record({"total_time": [9.0, 2.0, 4.0, 6.0]}, warmup=False))
    assert ours.samples("total_time").tolist() == [2.0, 4.0, 6.0, 8.0]
    assert upstream.samples("total_time").tolist() == [2.0, 4.0, 6.0]  # FIRST_SAMPLE, as upstream's analyzer
    assert upstream.samples("total_time", measurement.FIRST_THREE).tolist() == [6.0]  # as upstream's aggregate
    assert upstream.samples("total_time", measurement.skip_exactly(4)) is None  # nothing left: no sample at all
    assert ours.samples("total_time", measurement.skip_exactly(1)).tolist() == [4.0, 6.0, 8.0]


def test_per_iteration_time_is_per_iter_time_else_total_over_iterations():
    assert Measurement(record({"total_time": [2.0, 4.0]})).per_iter_time().tolist() == [1.0, 2.0]
    both = Measurement(record({"total_time": [2.0, 4.0], "per_iter_time": [1.0, 2.5]}))
    assert both.per_iter_time().tolist() == [1.0, 2.5]
    assert Measurement(record({})).per_iter_time() is None


def test_compile_time_column_and_first_run_time():
    ours = Measurement(record({"warmup_time": [10.0, 3.0], "total_time": [4.0, 1.0, 2.0, 3.0]}))
    assert ours.compile_time() == 10.0 - 2.5
    upstream = Measurement(record({"total_time": [4.0, 1.0, 2.0, 3.0]}, warmup=False))
    assert upstream.compile_time() == 4.0 - 2.5
    assert ours.first_run_time() == 10.0 and upstream.first_run_time() == 4.0
    assert Measurement(record({})).compile_time() is None


def test_a_warm_starts_two_first_runs_and_none_for_other_records():
    pair = dict(record({"warmup_time": [3.0]}, compile_cache="warm-start"),
                warm_start={"cold_first_run_seconds": 9.0, "warm_first_run_seconds": 3.0, "saving_seconds": 6.0})
    assert Measurement(pair).warm_start() == (9.0, 3.0)
    failed = dict(pair, warm_start={"cold_first_run_seconds": 9.0, "warm_first_run_seconds": None,
                                    "failed_half": "warm"})
    for other in (record({"warmup_time": [3.0]}), failed, dict(pair, warm_start="?"),
                  dict(pair, warm_start={"cold_first_run_seconds": True, "warm_first_run_seconds": 1.0})):
        assert Measurement(other).warm_start() is None


def test_aot_precompiles_load_time_and_none_without_it():
    loaded = record({"warmup_time": [0.1], "aot_precompile_load_time": [0.004]}, aot_precompile=True)
    assert Measurement(loaded).aot_load_time() == pytest.approx(0.004)
    assert Measurement(record({"warmup_time": [0.1]})).aot_load_time() is None


def test_a_named_metrics_median_over_the_timed_runs_and_a_generate_runs_figures():
    from benchmarks.results import metric_words

    generated = Measurement(record({"warmup_time": [3.0], "total_time": [0.5, 0.4, 0.6],
                                    "time_to_first_token": [0.12, 0.10, float("nan"), 0.11],
                                    "decode_tokens_per_second": [40.0, 50.0, 45.0], "compile_time": [2.5]}))
    assert generated.median("time_to_first_token") == pytest.approx(0.11)  # finite samples only
    assert generated.median("decode_per_token_time") is None
    upstream = Measurement(record({"decode_tokens_per_second": [5.0, 40.0, 50.0]}, warmup=False))
    assert upstream.median("decode_tokens_per_second") == 45.0  # the policy's warm-up left out, as for time
    assert metric_words.generation_figures(generated) == {"time_to_first_token": pytest.approx(0.11),
                                                          "decode_tokens_per_second": 45.0, "compile_time": 2.5}
    assert metric_words.generation_figures(Measurement(record({"total_time": [0.5]}))) is None  # a forward model's


def test_peak_memory_round_timestamp_status():
    m = Measurement(dict(record({"peak_rss_bytes": [5.0, 7.0, float("nan")]}), round=2, status="ok"))
    assert m.peak_memory() == 7.0 and m.round == 2 and m.timestamp == 100.0 and m.ok
    failed = Measurement({"model": {"model_name": "x"}, "experiment": {}, "metrics": {"error": "SKIP"}})
    assert failed.status == "skip" and failed.timestamp is None and failed.peak_memory() is None


def test_every_axis_beyond_upstreams_becomes_a_label_and_part_of_the_backend():
    assert Measurement(record()).backend == "inductor"
    assert Measurement(record(quantization=None)).backend == "inductor"  # at its default: as before the key
    assert Measurement(record(quantization="int8wo")).backend == "inductor+int8wo"
    axes = Measurement(record(precision="bf16", compile_mode="max-autotune", dynamic=True, cache=False))
    assert axes.backend == "inductor[max-autotune,dynamic,bf16]"
    assert axes.labels["precision"] == "bf16" and "cache" not in axes.labels
    assert Measurement(record(xla="PJRT", dynamo=None)).backend == "openxla+lazytensor"
    # The config key is the real config: not the round, the accelerator model or the timestamp.
    a, b = record(), dict(record(accelerator_model="other"), round=1, timestamp=5.0)
    assert Measurement(a).config_key == Measurement(b).config_key
    assert Measurement(a).config_key != Measurement(record(precision="bf16")).config_key


def test_dynamo_stats_are_the_records_and_older_records_still_say_their_graph_breaks():
    current = record({"dynamo_graph_break_count": [0, 0]})
    current["dynamo_stats"] = {"graphs": 2, "graph_breaks": 1, "recompiles": 0}
    assert Measurement(current).dynamo_stat("graph_breaks") == 1  # dynamo_stats first, whatever else it has
    assert Measurement(current).dynamo_stat("recompiles") == 0 and Measurement(current).dynamo_stat("other") is None
    older = Measurement(record({"dynamo_graph_break_count": [1, 2, float("nan")]}))
    assert older.dynamo_stat("graph_breaks") == 2 and older.dynamo_stat("recompiles") is None
    upstream = Measurement(record({"dynamo_counters": {"graph_break": {"Tensor.item": 2, "print": 1, "x": "?"}}}))
    assert upstream.dynamo_stat("graph_breaks") == 3
    for metrics in ({}, {"dynamo_graph_break_count": []}, {"dynamo_counters": {"graph_break": 4}}):
        assert Measurement(record(metrics)).dynamo_stat("graph_breaks") is None, metrics


def test_selection_flags_are_declared_once_and_select_measurements():
    parser = tool_parser(selection.flags(test_default=None, backend=True), None, prog="t")
    options = parser.parse_args(["-k", "mlp|cnn", "-x", "cnn", "--accelerator", "cpu", "--test", "eval",
                                 "--backend", "inductor"])
    chosen = selection.Selection.of(options)
    items = [Measurement(record()), Measurement(dict(record(), model={"suite_name": "dummy", "model_name": "cnn"})),
             Measurement(record(dynamo=None)), Measurement(record(test="train")),
             Measurement(record(accelerator="cuda", accelerator_model="A100"))]
    assert chosen.select(items) == items[:1]
    assert selection.Selection(filter_by_tier=[2]).select(items) == [items[1]]  # dummy's tier 2: cnn
    assert selection.Selection(accelerator="a100").select(items) == [items[4]]
    with pytest.raises(UsageError, match="no suite in the selected records has tier 9"):
        selection.Selection(filter_by_tier=[9]).select(items)


def test_an_axis_flag_selects_by_the_measurements_label_and_records_without_the_axis_have_none():
    parser = tool_parser(selection.flags(test_default=None, axes=True), None, prog="t")
    items = [Measurement(record(precision="bf16")), Measurement(record(precision="fp16")), Measurement(record())]
    chosen = selection.Selection.of(parser.parse_args(["--precision", "bf16", "--precision", "fp16"]))
    assert chosen.axes == {"precision": ["bf16", "fp16"]} and chosen.select(items) == items[:2]
    assert selection.Selection.of(parser.parse_args([])).select(items) == items
    without = tool_parser(selection.flags(), None, prog="t")
    assert "--precision" not in without.format_help()  # a tool that does not apply the axes does not offer them


# ---------------------------------------------------------------- no tool measures outside the view

TIMING_METRICS = {"total_time", "per_iter_time", "warmup_time", "peak_rss_bytes", "trace_per_iter_time"}
WARMUP_HELPERS = {"compile_time", "has_warmup", "samples", "summary"}
# The view itself, the statistics it is built on, the writer of the samples (the child), and the analyzer's
# columnar fast path (kept vectorised for speed; test_analyzer_matches_the_view holds it to the view's numbers).
ALLOWED = {"results/measurement.py", "results/stats.py", "analyzer/rows.py", "analyzer/range_reader.py",
           "analyzer/columns.py"}


def violations(source: str, name: str = "<source>") -> list:
    """Direct reads of a timing metric (x["total_time"], x.get("per_iter_time")) and calls of stats'
    warm-up and sample helpers, as 'name:line: what'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr == "get" and isinstance(node.args[0], ast.Constant):
                key = node.args[0].value
        if key in TIMING_METRICS:
            found.append(f"{name}:{node.lineno}: reads metric {key!r}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WARMUP_HELPERS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "stats"):
            found.append(f"{name}:{node.lineno}: calls stats.{node.func.attr}")
    return found


def test_no_tool_computes_samples_per_iteration_or_compile_time_outside_the_view():
    found, read = [], set()
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        relative = path.relative_to(ROOT / "benchmarks").as_posix()
        if relative in ALLOWED or relative.startswith("child/") or relative.endswith("/child.py"):  # the child's
            continue
        read.add(relative.partition("/")[0])
        found += violations(path.read_text(encoding="utf-8"), relative)
    assert found == []
    assert {"aggregate", "compare", "history", "runner"} <= read  # every tool that reads records is covered


def test_the_tools_read_the_compile_word_through_metric_words():
    """`compile` is defined once (results/metric_words.py): aggregate, compare and history read it there, never the
    view's first run directly (against_eager's compile latency is the dashboard's own figure, over that run)."""
    callers = set()
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)) if "first_run_time" in text else ():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "first_run_time":
                callers.add(path.relative_to(ROOT / "benchmarks").as_posix())
    assert callers == {"results/metric_words.py", "results/against_eager.py"}


def test_the_rule_catches_a_planted_violation():
    planted = ('def per_iter(record):\n    values = record["metrics"].get("per_iter_time")\n'
               '    return stats.summary(values, values), record["metrics"]["warmup_time"][0]\n')
    assert violations(planted, "planted.py") == ["planted.py:2: reads metric 'per_iter_time'",
                                                 "planted.py:3: calls stats.summary",
                                                 "planted.py:3: reads metric 'warmup_time'"]
