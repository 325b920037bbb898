"""result_analyzer.py's library: golden reports of small fixtures (ours and upstream-shaped records,
failures, skips, XLA and non-XLA configs), robustness to bad input, and the same report whatever the
chunking and the number of worker processes.

The golden CSVs (tests/fixtures/analyzer/*.csv) were checked by hand; the arithmetic behind their
numbers is spelled out in the tests below."""

import csv
import json
import logging
import math
import shutil

import pytest

from helpers import ROOT

from benchmarks.analyzer import columns, pipeline, report_files

pytestmark = pytest.mark.usefixtures("analyzer_reader")  # each test with each reader

FIXTURES = ROOT / "tests" / "fixtures" / "analyzer"
FALLBACK_TIMESTAMP = 1234.5


def read_csv(path) -> tuple:
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], [dict(zip(rows[0], row)) for row in rows[1:]]


def same_cell(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0)
    except ValueError:
        return False


def assert_same_report(actual, golden) -> None:
    """Same columns in the same order, same rows; numbers equal (to 1e-12, formatting aside), text exactly."""
    header_a, rows_a = read_csv(actual)
    header_g, rows_g = read_csv(golden)
    assert header_a == header_g
    assert len(rows_a) == len(rows_g)
    for number, (row_a, row_g) in enumerate(zip(rows_a, rows_g), start=1):
        different = {name: (row_a[name], row_g[name]) for name in header_g if not same_cell(row_a[name], row_g[name])}
        assert not different, f"row {number}: {different}"


def run(tmp_path, *inputs, **options) -> pipeline.Summary:
    options.setdefault("output", str(tmp_path / "report.csv"))
    options.setdefault("fallback_timestamp", FALLBACK_TIMESTAMP)
    return pipeline.analyze(pipeline.Options(inputs=[str(path) for path in inputs], **options))


def cells(row: dict) -> dict:
    return {name: value for name, value in row.items() if value != ""}


# ---------------------------------------------------------------- goldens


@pytest.mark.parametrize("name", ["ours", "upstream", "old_upstream", "messy", "dynamo"])
def test_report_matches_its_golden_file(tmp_path, name):
    run(tmp_path, FIXTURES / f"{name}.jsonl")
    assert_same_report(tmp_path / "report.csv", FIXTURES / f"{name}.csv")


def test_columns_start_with_upstreams_twenty_then_ours_then_verification_then_metrics_then_environment(tmp_path):
    run(tmp_path, FIXTURES / "ours.jsonl")
    header, _ = read_csv(tmp_path / "report.csv")
    assert header[:20] == [
        "timestamp", "suite_name", "model_name", "accelerator", "accelerator_model", "xla", "xla_flags", "dynamo",
        "torch_xla2", "test", "batch_size", "repeat", "iterations_per_run", "error_message", "median_total_time",
        "median_per_iter_time", "xla_median_trace_per_iter_time", "xla_compile_time", "dynamo_compile_time",
        "outputs_file"]
    # ours, in their order, each where some row has a value (these records ran without --verify: none of its figures)
    assert header[20:28] == ["status", "error_type", "error_phase", "verification_code", "warmup", "accuracy",
                             "backend", "experiment_enable_functionalization"]  # then the config's keys beyond
    # Metrics in METRIC_ORDER; the medians already among the first columns are not repeated.
    assert header[28:36] == ["min_total_time", "max_total_time", "mean_total_time", "std_total_time",
                             "min_per_iter_time", "max_per_iter_time", "mean_per_iter_time", "std_per_iter_time"]
    assert header[36:41] == ["min_trace_total_time", "median_trace_total_time", "max_trace_total_time",
                             "mean_trace_total_time", "std_trace_total_time"]
    assert header.index("min_warmup_time") < header.index("min_peak_rss_bytes") < header.index("python_version")
    assert header[-7:] == ["python_version", "torch_version", "torch_xla_version", "torchvision_version",
                           "numpy_version", "git_commit", "hostname"]


def test_our_records_every_timed_sample_counts_and_compile_time_comes_from_warmup(tmp_path):
    run(tmp_path, FIXTURES / "ours.jsonl")
    _, rows = read_csv(tmp_path / "report.csv")
    eager, lazy, dynamo, error, crash, skip, timeout = rows
    # eager: total_time [4, 1, 2, 3] -> median 2.5; ours carry warm-up, so mean/std use all four samples:
    # mean 2.5, std sqrt((1.5^2 + 1.5^2 + 0.5^2 + 0.5^2) / 4) = sqrt(1.25).
    assert float(eager["median_total_time"]) == 2.5 and float(eager["mean_total_time"]) == 2.5
    assert float(eager["std_total_time"]) == pytest.approx(math.sqrt(1.25), rel=1e-15)
    assert float(eager["median_per_iter_time"]) == 1.25  # [2, 0.5, 1, 1.5] (2 iterations per run)
    # Neither XLA nor dynamo: no compile-time column applies.
    assert eager["xla_compile_time"] == eager["dynamo_compile_time"] == eager["xla_median_trace_per_iter_time"] == ""
    assert float(eager["std_peak_rss_bytes"]) == pytest.approx(math.sqrt(12500), rel=1e-15)  # 100..400
    # XLA lazy tensors: compile = first warm-up run 8 - median timed run 0.625; the trace median is filled.
    assert float(lazy["xla_compile_time"]) == 7.375 and lazy["dynamo_compile_time"] == ""
    assert float(lazy["xla_median_trace_per_iter_time"]) == 0.125
    # XLA + openxla: 12 - median [1, 2, 3] = 10, in both compile columns, as upstream fills them.
    assert float(dynamo["xla_compile_time"]) == float(dynamo["dynamo_compile_time"]) == 10.0
    # Failures: one-line message (with its comma and quotes intact), type, phase; no statistics.
    assert error["error_message"] == 'shape mismatch: [2, 3] vs "[3, 2]"'
    assert (error["status"], error["error_type"], error["error_phase"]) == ("error", "BackendCompilerFailed", "compile")
    assert error["median_total_time"] == ""
    # A crash keeps what it measured before dying (one warm-up run), and has no environment.
    assert crash["status"] == "crash" and float(crash["mean_warmup_time"]) == 5.0 and crash["python_version"] == ""
    assert (skip["status"], skip["error_type"], skip["batch_size"]) == ("skip", "Unsupported", "")
    assert timeout["error_message"] == "timed out after 60 s"  # the first line of a two-line message


def test_upstream_records_drop_the_first_sample_from_mean_and_std_and_use_max_minus_median(tmp_path):
    run(tmp_path, FIXTURES / "upstream.jsonl")
    _, rows = read_csv(tmp_path / "report.csv")
    inductor, openxla, error, timeout, skip, single = rows
    # [4, 1, 2, 3]: min/median/max over all (1, 2.5, 4); mean/std over [1, 2, 3]: 2, sqrt(2/3) (ddof 0).
    assert [float(inductor[c]) for c in ("min_total_time", "median_total_time", "max_total_time")] == [1, 2.5, 4]
    assert float(inductor["mean_total_time"]) == 2.0
    assert float(inductor["std_total_time"]) == pytest.approx(math.sqrt(2 / 3), rel=1e-15)
    assert float(inductor["dynamo_compile_time"]) == 1.5 and inductor["xla_compile_time"] == ""  # 4 - 2.5
    # Dynamo counters (a dict-valued metric) become name.key columns, never a crash.
    assert float(inductor["dynamo_counters.stats.calls_captured"]) == 2.0
    # [9, 1, 3, 2]: compile 9 - 2.5 = 6.5 in both columns; trace median of [0.5, 0.25, 0.25, 0.25] is 0.25.
    assert float(openxla["xla_compile_time"]) == float(openxla["dynamo_compile_time"]) == 6.5
    assert float(openxla["xla_median_trace_per_iter_time"]) == 0.25
    # xla_CompileTime_number [17, 1, 0, 0]: median 0.5; mean of [1, 0, 0] 1/3, std sqrt(2/9).
    assert float(openxla["median_xla_CompileTime_number"]) == 0.5
    assert float(openxla["std_xla_CompileTime_number"]) == pytest.approx(math.sqrt(2 / 9), rel=1e-15)
    # Upstream kept a child's whole stderr: the report shows the exception line, not the traceback.
    assert error["error_message"] == "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert (error["status"], error["error_type"]) == ("error", "RuntimeError")
    assert (timeout["status"], timeout["error_type"]) == ("timeout", "Timeout")
    assert (skip["status"], skip["error_message"]) == ("skip", "SKIP")
    # One sample: nothing to drop, so it is its own mean (and std 0), as the analyzer's statistics keep the last sample.
    assert [float(single[c]) for c in ("median_total_time", "mean_total_time", "std_total_time")] == [5, 5, 0]


def test_old_upstream_records_are_read(tmp_path):
    """Upstream's own v100 fixture shape: experiment_name, no torch_xla2 or enable_functionalization,
    top-level outputs_file and verification_mean_rel_error, no verification_code, no timestamp."""
    run(tmp_path, FIXTURES / "old_upstream.jsonl")
    _, (bert, alexnet) = read_csv(tmp_path / "report.csv")
    assert bert["accelerator_model"] == "One of Tesla V100-SXM2-16GB, Tesla V100-SXM2-16GB"
    assert bert["torch_xla2"] == "" and bert["verification_code"] == "" and bert["status"] == "ok"
    # [15, 1, 2, 1, 2]: median 2, compile 15 - 2 = 13; mean/std of [1, 2, 1, 2] 1.5 and 0.5.
    assert float(bert["dynamo_compile_time"]) == 13.0
    assert (float(bert["mean_total_time"]), float(bert["std_total_time"])) == (1.5, 0.5)
    assert alexnet["outputs_file"] == "outputs/alexnet.pt" and alexnet["verification_code"] == "PASS"
    assert float(alexnet["verification_mean_rel_error"]) == 0.001
    assert float(alexnet["timestamp"]) == FALLBACK_TIMESTAMP


def test_dynamo_stats_give_the_graph_break_reasons_compile_phases_and_counts_after_the_config_columns(tmp_path):
    run(tmp_path, FIXTURES / "dynamo.jsonl")
    header, rows = read_csv(tmp_path / "report.csv")
    start = header.index("graph_break_reasons")
    assert header[start - 1] == "experiment_enable_functionalization"  # after the config's own keys
    assert header[start:start + 10] == ["graph_break_reasons", "compile_s_total", "compile_s_frame",
                                        "compile_s_backend", "compile_s_inductor", "compile_s_code_gen",
                                        "compile_s_backward", "calls_captured", "graph_breaks", "fallbacks_to_eager"]
    assert header[start + 10] == "min_total_time"  # then the statistics
    eager, inductor, train, many, older, odd_stats, odd_entries, failed = rows
    dynamo_cells = lambda row: {name: row[name] for name in header[start:start + 7] if row[name]}
    counts = lambda row: tuple(row[name] for name in header[start + 7:start + 10])
    assert dynamo_cells(eager) == dynamo_cells(older) == dynamo_cells(odd_stats) == dynamo_cells(failed) == {}
    # Each phase its own column, torch's names mapped (total_wall_time, entire_frame_compile, ...); no break listed.
    assert dynamo_cells(inductor) == {"compile_s_total": "9.5", "compile_s_frame": "9.5", "compile_s_backend": "8.25",
                                      "compile_s_inductor": "7.75", "compile_s_code_gen": "2.5"}
    # The harness's counts: fallbacks_to_eager empty for a record written before the key, and without dynamo_stats.
    assert counts(inductor) == counts(older) == ("12", "0", "")
    assert counts(train) == ("12", "4", "1")
    assert counts(eager) == counts(odd_stats) == counts(failed) == ("", "", "")
    # Reasons in the record's order (most frequent first), the file's base name, the count; the cell is quoted.
    assert train["graph_break_reasons"] == ('Failed to trace builtin operator @ cnn.py:31 (3); Unsupported '
                                            'Tensor.item() call with capture_scalar_outputs=False, "quoted" (1)')
    assert float(train["compile_s_backward"]) == 0.25 and float(train["compile_s_total"]) == 1.75
    # 20 reasons listed and 3 omitted by the child: the cell keeps what fits in about 500 characters.
    kept = many["graph_break_reasons"].split("; ")
    assert kept[-1] == "... 18 more" and len(kept) == 6 and len(many["graph_break_reasons"]) <= 520
    assert kept[0] == "Graph break type number 0 with a long enough name to fill the cell @ model.py:100 (20)"
    # Whatever a hand-edited record holds: non-entries skipped, text made one line, only numbers are seconds.
    assert dynamo_cells(odd_entries) == {"graph_break_reasons": "multi line reason", "compile_s_backend": "2.0"}


def test_dynamo_columns_only_where_some_record_has_dynamo_stats(tmp_path):
    run(tmp_path, FIXTURES / "ours.jsonl")  # has a dynamo config, but records written before dynamo_stats
    header, _ = read_csv(tmp_path / "report.csv")
    assert "graph_break_reasons" not in header and not any(name.startswith("compile_s_") for name in header)


# ---------------------------------------------------------------- robustness


def test_every_problem_is_reported_once_with_its_line_and_the_rest_is_read(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="benchmarks.analyzer.pipeline")
    summary = run(tmp_path, FIXTURES / "messy.jsonl")
    path = str(FIXTURES / "messy.jsonl")
    reported = [r.getMessage() for r in caplog.records if r.getMessage().startswith(path)]
    expected = [
        (3, "invalid JSON"),
        (4, "metric 'total_time' is null; left empty (also line 11)"),
        (5, "metric 'dynamo_counters' is an object: its numbers are reported as dynamo_counters.<key> columns"),
        (6, "metric 'total_time' is not a list of numbers (a list with non-numbers)"),
        (6, "metric 'per_iter_time' is not a list of numbers (str)"),
        (6, "metric 'peak_rss_bytes' is not a list of numbers (a list with non-numbers)"),
        (7, "not a JSON object"),
        (8, "unusable record: no model or experiment"),
        (9, "unusable record: metrics is text, not an object; skipped"),  # the shared validation (record_check)
        (10, "metric 'total_time' has null or NaN samples"),
        (12, "torn last line"),
    ]
    assert len(reported) == len(expected), reported
    for message, (line, text) in zip(reported, expected):
        assert message.startswith(f"{path}:{line}: ") and text in message, message
    # The blank line 2 is not a problem; the 6 usable records are all reported on.
    assert summary.records == 6 and summary.problems == 11  # warnings; the dict note is information
    _, rows = read_csv(tmp_path / "report.csv")
    assert [r["model_name"] for r in rows] == ["good", "null_list", "counters", "text", "nan", "null_again"]
    good, null_list, counters, text, nan, null_again = rows
    assert float(good["median_total_time"]) == 3.0  # the rest of the file around the bad lines was read
    assert null_list["median_total_time"] == "" and float(null_list["median_per_iter_time"]) == 1.5
    assert float(counters["dynamo_counters.stats.calls_captured"]) == 4.0
    assert float(counters["dynamo_counters.graph_break.Tensor.item"]) == 1.0
    assert not any(name.startswith("dynamo_counters.inductor") for name in counters)  # text leaves are left out
    assert text["median_total_time"] == "" and "min_peak_rss_bytes" not in text  # no record had one
    assert float(text["mean_xla_CompileTime_number"]) == 7.0  # a bare number is one sample
    assert float(nan["timestamp"]) == FALLBACK_TIMESTAMP and nan["min_total_time"] == ""


def test_a_file_without_any_valid_record_is_an_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('not json\n[1]\n{"a": 1}\n\n{"model": {"model_na')
    with pytest.raises(report_files.AnalyzeError, match=r"bad.jsonl: no usable record \(first problem: line 1: invalid JSON"):
        run(tmp_path, path)
    assert not (tmp_path / "report.csv").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.jsonl"]  # no spool or temporary file left behind


def test_a_last_line_missing_only_its_newline_is_a_record(tmp_path):
    line = (FIXTURES / "ours.jsonl").read_text().splitlines()[0]
    path = tmp_path / "r.jsonl"
    path.write_text(line + "\n" + line)
    assert run(tmp_path, path).records == 2


def test_hide_errors_leaves_the_message_out_but_not_the_failure(tmp_path):
    run(tmp_path, FIXTURES / "ours.jsonl", hide_errors=True)
    _, rows = read_csv(tmp_path / "report.csv")
    assert all(row["error_message"] == "" for row in rows)
    assert [row["status"] for row in rows] == ["ok", "ok", "ok", "error", "crash", "skip", "timeout"]


# ---------------------------------------------------------------- the same report however it is computed


def test_chunks_and_worker_processes_change_nothing(tmp_path, caplog):
    """Every line its own chunk, in two worker processes: chunks then differ in their metrics (so their
    rows are re-aligned under the union of columns) and line numbers must still be the file's."""
    combined = tmp_path / "in" / "all.jsonl"
    combined.parent.mkdir()
    combined.write_text("".join((FIXTURES / f"{name}.jsonl").read_text()
                                for name in ("ours", "upstream", "old_upstream", "dynamo", "messy")))
    caplog.set_level(logging.WARNING, logger="benchmarks.analyzer.pipeline")
    one = run(tmp_path, combined, output=str(tmp_path / "one.csv"), jobs=1)
    serial_problems = [r.getMessage() for r in caplog.records]
    caplog.clear()
    many = run(tmp_path, combined, output=str(tmp_path / "many.csv"), jobs=2, chunk_bytes=256)
    assert [r.getMessage() for r in caplog.records] == serial_problems
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "many.csv").read_bytes()
    assert one.records == many.records == 7 + 6 + 2 + 8 + 6  # messy: one record refused (metrics is text)
    assert any(":35: torn last line" in message for message in serial_problems)  # 7 + 6 + 2 + 8 lines before messy


def test_jsonl_report_holds_the_same_rows_as_the_csv(tmp_path):
    inputs = [FIXTURES / "ours.jsonl", FIXTURES / "upstream.jsonl", FIXTURES / "dynamo.jsonl"]
    run(tmp_path, *inputs, output=str(tmp_path / "r.csv"))
    run(tmp_path, *inputs, output=str(tmp_path / "r.jsonl"), output_format="jsonl")
    header, csv_rows = read_csv(tmp_path / "r.csv")
    json_rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(json_rows) == len(csv_rows) == 13 + 8
    for row_c, row_j in zip(csv_rows, json_rows):
        assert list(row_j)[:37] == list(columns.FIXED_COLUMNS)  # every fixed column, null when unknown
        # the CSV leaves out the columns of ours empty in every row; the JSON lines name them (null)
        assert {k for k, v in row_j.items() if v is not None} <= set(header)
        assert {k: v for k, v in row_j.items() if v is not None}.keys() == cells(row_c).keys()
        for name, value in cells(row_c).items():
            assert same_cell(value, str(row_j[name]) if not isinstance(row_j[name], bool) else value), name
    assert json_rows[0]["batch_size"] == 16 and json_rows[0]["xla"] is None  # JSON types, not text


def test_inputs_directory_globs_and_the_jsonl_report_itself(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("ours", "upstream"):
        shutil.copy(FIXTURES / f"{name}.jsonl", data / f"{name}.jsonl")
    (data / "metric_report.jsonl").write_text('{"not": "a record"}\n')  # a previous JSONL report
    (data / "notes.txt").write_text("ignored")
    assert pipeline.find_inputs([], str(data)) == [str(data / "ours.jsonl"), str(data / "upstream.jsonl")]
    assert pipeline.find_inputs([str(data / "u*.jsonl")], None) == [str(data / "upstream.jsonl")]
    assert pipeline.find_inputs([str(data), str(data / "ours.jsonl")], None) == [str(data / "ours.jsonl"),
                                                                               str(data / "upstream.jsonl")]
    for bad, message in (([str(tmp_path / "nope")], "no such file"), ([str(data / "*.csv")], "matches no file"),
                         ([str(tmp_path)], "no \\*.jsonl results file")):
        with pytest.raises(report_files.AnalyzeError, match=message):
            pipeline.find_inputs(bad, None)


def test_column_order_is_the_documented_one_for_any_set_of_names():
    shuffled = ["hostname", "max_zeta", "a.b", "min_zeta", "std_total_time", "status", "min_peak_rss_bytes",
                "timestamp", "my_note", "min_alpha"]
    assert columns.order_columns(shuffled) == [
        "timestamp", "status", "std_total_time", "min_peak_rss_bytes", "min_alpha", "min_zeta", "max_zeta",
        "a.b", "my_note", "hostname"]


def test_lists_and_objects_where_text_belongs_are_refused_with_the_reason(tmp_path, caplog):
    """The shared validation (benchmarks/results/record_check.py): a model name or an XLA_FLAGS that is no text
    makes the record unusable, in the analyzer as in every tool; the record beside it is reported."""
    good = json.loads((FIXTURES / "ours.jsonl").read_text().splitlines()[0])
    good["environment"]["torch"] = None
    flags = json.loads(json.dumps(good))
    flags["experiment"]["xla_flags"] = ["--xla_a=1", "--xla_b=2"]
    name = json.loads(json.dumps(good))
    name["model"]["model_name"] = {"name": "mlp"}
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in (flags, name, good)))
    caplog.set_level(logging.WARNING, logger="benchmarks.analyzer.pipeline")
    run(tmp_path, path)
    _, (row,) = read_csv(tmp_path / "report.csv")
    assert "torch_version" not in row and float(row["median_total_time"]) == 2.5  # empty in every row: left out
    reported = [r.getMessage() for r in caplog.records]
    assert f"{path}:1: unusable record: experiment.xla_flags is a list, not text; skipped" in reported
    assert f"{path}:2: unusable record: model.model_name is an object, not text; skipped" in reported


def test_per_iteration_times_equal_to_totals_in_some_records_only(tmp_path):
    """per_iter_time equals total_time in one-iteration runs; a two-iteration run in another chunk (or
    another group of records) must still get its own statistics."""
    lines = (FIXTURES / "upstream.jsonl").read_text().splitlines()[:2] + \
        (FIXTURES / "ours.jsonl").read_text().splitlines()[:1]  # the last: 2 iterations per run
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for chunk_bytes in (1 << 20, 64):
        run(tmp_path, path, chunk_bytes=chunk_bytes)
        _, rows = read_csv(tmp_path / "report.csv")
        assert [float(r["median_per_iter_time"]) for r in rows] == [2.5, 2.5, 1.25]
        assert [float(r["max_per_iter_time"]) for r in rows] == [4.0, 9.0, 2.0]
        assert float(rows[1]["max_trace_per_iter_time"]) == 0.5


def test_pandas_reads_the_report_with_numbers_as_numbers(tmp_path):
    run(tmp_path, FIXTURES / "ours.jsonl", FIXTURES / "upstream.jsonl")
    frame = report_files.load_report(str(tmp_path / "report.csv"))
    assert len(frame) == 13 and list(frame.columns[:20]) == list(columns.UPSTREAM_COLUMNS)
    assert frame["median_total_time"].dtype == "float64" and frame["batch_size"].max() == 16
    assert frame["status"].tolist().count("ok") == 6 and frame["xla"].isna().sum() == 8  # 3 + 3 ok; 4 + 4 eager
    assert frame.loc[1, "xla_compile_time"] == 7.375


def test_verification_figures_and_a_configs_own_keys_have_columns(tmp_path):
    """--verify's figures beside verification_code and its mean relative error; a suite's own matrix axis
    (microbench's dtype) as an experiment_<key> column, empty for configs without it."""
    run(tmp_path, FIXTURES / "verified.jsonl")
    header, rows = read_csv(tmp_path / "report.csv")
    # the columns of ours that no row has a value in are left out (no accuracy_reference ...: written before them)
    assert header[20:33] == ["status", "verification_code", "verification_mean_rel_error", "warmup",
                             "verification_max_abs_error", "verification_cosine_similarity", "verification_tolerance",
                             "verification_message", "accuracy", "backend", "experiment_dtype",
                             "experiment_enable_functionalization", "min_total_time"]
    passed, failed, microbench = rows
    assert (passed["verification_code"], passed["verification_mean_rel_error"], passed["verification_max_abs_error"],
            passed["verification_cosine_similarity"], passed["verification_tolerance"],
            passed["verification_message"]) == ("PASS", "0.0", "0.0", "1.0", "0.02", "")
    assert (failed["verification_code"], failed["verification_mean_rel_error"], failed["verification_max_abs_error"],
            failed["verification_cosine_similarity"]) == ("FAIL", "4.8125", "12.5", "0.125")
    # one line, as error_message: the first line of the verifier's text is the verdict
    assert failed["verification_message"] == "mean relative error 4.8125 > tolerance 0.02 worst at output[0][3, 1]"
    assert [row["experiment_dtype"] for row in rows] == ["", "", "bfloat16"]
    assert microbench["verification_max_abs_error"] == "" and microbench["median_total_time"] == "0.5"
