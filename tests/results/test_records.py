"""The results file: whole-line appends, a torn last line survived, a tolerant reader."""

import json

from benchmarks.results import records


def test_writer_appends_whole_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    with records.ResultsWriter(str(path)) as writer:
        writer.append({"a": 1, "text": "é"})
        writer.append({"a": 2})
    assert path.read_text(encoding="utf-8") == '{"a": 1, "text": "é"}\n{"a": 2}\n'


def test_a_torn_last_line_is_kept_skipped_and_does_not_swallow_the_next_record(tmp_path, caplog):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"a": 2, "metr')  # a writer killed mid-line
    with records.ResultsWriter(str(path)) as writer:
        writer.append({"a": 3})
    text = path.read_text()
    assert text == '{"a": 1}\n{"a": 2, "metr\n{"a": 3}\n'  # nothing already written is lost
    problems = []
    got = [r for _, r in records.iter_records(str(path), problems)]
    assert got == [{"a": 1}, {"a": 3}]
    assert len(problems) == 1 and problems[0].line == 2 and "invalid JSON" in problems[0].message


def test_reader_reports_torn_blank_and_non_object_lines_with_line_numbers(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n\n[1, 2]\n{"a": 2}\n{"a": ')
    problems = []
    got = [(n, r) for n, r in records.iter_records(str(path), problems)]
    assert got == [(1, {"a": 1}), (4, {"a": 2})]
    assert [(p.line, p.message.split(" (")[0]) for p in problems] == [(3, "not a JSON object"), (5, "torn last line")]


def test_failure_records_keep_upstream_error_text_and_measured_metrics():
    record = records.new_record({"suite_name": "dummy", "model_name": "mlp"}, {"accelerator": "cpu"}, repeat=2,
                                iterations_per_run=1, warmup=1, timestamp=1.0, verify=False,
                                requested_batch_size=None, environment={})
    record["metrics"]["warmup_time"] = [0.5]
    records.mark_failed(record, records.RecordStatus.ERROR, "RuntimeError", "boom\n  at line 3\nmore", "run")
    assert record["metrics"] == {"warmup_time": [0.5], "error": "RuntimeError: boom"}
    assert record["error"] == {"type": "RuntimeError", "message": "boom", "phase": "run", "log": None}
    assert record["verification_code"] == records.VerificationCode.VERIFIER_DIDNT_RUN
    assert list(record)[:7] == ["model", "experiment", "repeat", "iterations_per_run", "metrics", "timestamp",
                                "verification_code"]
    json.dumps(record)
