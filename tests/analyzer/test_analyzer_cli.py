"""result_analyzer.py, run for real: the end-to-end report, the database across runs, bad input."""

import csv
import json
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT, call_tool, read_jsonl, run_runner

FIXTURES = ROOT / "tests" / "fixtures" / "analyzer"


def analyzer(*args, **kwargs):
    return call_tool("result_analyzer.py", *args, **kwargs)


def rows_of(path) -> list:
    with open(path, encoding="utf-8", newline="") as handle:
        return [{k: v for k, v in row.items() if v != ""} for row in csv.DictReader(handle)]


def assert_one_clear_line(result, *words):
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("result_analyzer.py: error: "), result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_output_dirname_reads_every_jsonl_and_writes_metric_report_csv_and_the_database(tmp_path):
    out = tmp_path / "output"
    out.mkdir()
    for name in ("ours", "upstream", "old_upstream", "messy"):
        shutil.copy(FIXTURES / f"{name}.jsonl", out / f"{name}.jsonl")
    database = tmp_path / "database.csv"
    result = analyzer(f"--output-dirname={out}", f"--database={database}", "--timestamp=1234.5", check_rc=0)
    # Each file's rows are its golden rows (the report's header is the union of the four).
    expected = []
    for name in ("messy", "old_upstream", "ours", "upstream"):  # sorted file names
        expected += rows_of(FIXTURES / f"{name}.csv")
    report = out / "metric_report.csv"
    assert rows_of(report) == expected
    assert report.read_bytes() == database.read_bytes()  # a new database holds the report
    # messy's `"metrics": "oops"` is refused by the shared validation (record_check.py)
    assert "21 record(s) from 4 file(s)" in result.stderr and f"wrote {report}" in result.stderr
    assert f"{out / 'messy.jsonl'}:12: torn last line" in result.stderr
    # A second run appends under the same header.
    analyzer(str(out / "ours.jsonl"), f"--output={tmp_path / 'again.jsonl'}", "--output-format=jsonl",
             f"--database={database}", "--timestamp=1234.5", check_rc=0)
    assert rows_of(database) == expected + rows_of(FIXTURES / "ours.csv")
    assert (tmp_path / "again.jsonl").read_text().count("\n") == 7


def test_positional_files_write_next_to_the_first_one_by_default(tmp_path):
    shutil.copy(FIXTURES / "ours.jsonl", tmp_path / "results.jsonl")
    analyzer(str(tmp_path / "results.jsonl"), "--log-level=warning", check_rc=0)
    assert rows_of(tmp_path / "metric_report.csv") == rows_of(FIXTURES / "ours.csv")


def test_bad_input_is_one_clear_line_and_exit_status_2(tmp_path):
    assert_one_clear_line(analyzer("--output-format=xml"), "--output-format", "xml")
    assert_one_clear_line(analyzer("--timestamp=yesterday"), "timestamp")
    assert_one_clear_line(analyzer(f"--output-dirname={tmp_path / 'missing'}"), "no such directory")
    assert_one_clear_line(analyzer(f"--output-dirname={tmp_path}"), "no *.jsonl results file")
    assert_one_clear_line(analyzer(str(tmp_path / "nope.jsonl")), "no such file")
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("{not json\n\n[]\n")
    result = analyzer(str(garbage))
    assert result.returncode == 2 and ": no usable record (first problem: line " in result.stderr.splitlines()[-1]
    assert ":1: invalid JSON" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "metric_report.csv").exists()
    assert_one_clear_line(analyzer(str(garbage), f"--output={garbage}"), "would overwrite one of its inputs")


@pytest.mark.process  # what a fresh interpreter imports
def test_help_answers_without_importing_numpy_or_pandas():
    result = analyzer("--help", check_rc=0)
    assert "--output-dirname" in result.stdout and "--database" in result.stdout
    probe = ("import sys, benchmarks.analyzer.cli as cli; cli.build_parser(); "
             "print(sorted(m for m in ('numpy', 'pandas', 'orjson') if m in sys.modules))")
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert imported.stdout.strip() == "[]"


@pytest.mark.integration
def test_a_real_verify_sweeps_accuracy_status_and_figures_have_columns_and_an_old_record_empty_cells(tmp_path):
    out = tmp_path / "out"
    run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
               "--dynamo=relu_accuracy_error_TESTING_ONLY", "--test=eval", "--repeat=1", "--warmup=1", "--verify",
               f"--output-dirname={out}", check_rc=1)  # 1: a verdict fails (fail_accuracy), every record written
    results = out / "results.jsonl"
    written = {r["experiment"]["dynamo"]: r for r in read_jsonl(results)}
    with open(results, "a", encoding="utf-8") as handle:  # a record written before the accuracy keys existed
        handle.write((FIXTURES / "ours.jsonl").read_text().splitlines()[0] + "\n")
    from benchmarks.results.measurement import Measurement

    derived = Measurement(json.loads((FIXTURES / "ours.jsonl").read_text().splitlines()[0])).accuracy
    keys = ("accuracy", "accuracy_reference", "accuracy_tolerance", "accuracy_rmse", "accuracy_eager_rmse",
            "accuracy_message")
    for reader in ("compiled", "python"):
        report = tmp_path / f"{reader}.csv"
        analyzer(results, f"--output={report}", f"--reader={reader}", check_rc=0)
        with open(report, encoding="utf-8", newline="") as handle:
            header, *rows = list(csv.reader(handle))
        at = header.index("verification_message") + 1
        assert tuple(header[at:at + len(keys)]) == keys  # after the older columns, which keep their order
        eager, perturbed, old = (dict(zip(header, row)) for row in rows)
        for row, record in ((eager, written[None]), (perturbed, written["relu_accuracy_error_TESTING_ONLY"])):
            for key in keys:
                value = record[key]
                if isinstance(value, float):
                    assert float(row[key]) == pytest.approx(value, rel=1e-12), (reader, key)
                else:
                    assert row[key] == ("" if value is None else " ".join(str(value).split())), (reader, key)
        assert eager["accuracy"] == "pass" and eager["accuracy_reference"] == "fp64"
        assert perturbed["accuracy"] == "fail_accuracy" and float(perturbed["accuracy_rmse"]) > 0
        assert perturbed["accuracy_message"]
        # The old record's status is derived, as Measurement.accuracy derives it; its figures stay empty.
        assert old["accuracy"] == derived and old["accuracy"] in ("not_checked", "pass"), reader
        assert all(old[key] == "" for key in keys[1:]) and old["model_name"], reader
