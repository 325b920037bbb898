"""One verdict per record (results/accuracy_status.py): --verify's status and the golden check's failures in
`accuracy`, decided at one point, and every tool asking the same helper. Fast: the precedence and the helpers;
history's older databases. Then one real sweep with a failing golden, an accuracy failure and a crash, after a
passing one: the progress line, the summary, the exit status, the analyzer's CSV, aggregate's dashboard, compare's
accuracy gate and history's events name the same configs as not passing."""

import csv
import glob
import json
import os
import re
import sqlite3

import pytest

from helpers import ROOT, RUN1, RUN2, call_tool, hand_record, read_jsonl, run_runner, run_tool

from benchmarks.results import accuracy_status

# ---------------------------------------------------------------- the verdict's rules


def test_the_golden_check_fails_a_passing_or_unchecked_config_but_never_hides_an_earlier_failure():
    def settled(judged, golden, status="ok"):
        record = {"status": status, "accuracy": None, "golden": {"status": golden} if golden else None}
        return accuracy_status.settle(record, judged)

    assert settled("pass", "fail_golden") == "fail_golden"
    assert settled("pass_due_to_skip", "no_golden") == "no_golden"
    assert settled(None, "bad_golden") == "bad_golden"  # no --verify: not_checked, then the golden's failure
    assert settled(None, "pass") == "pass"  # the golden check alone passed it
    assert settled("pass", "saved") == "pass" and settled(None, "saved") == "not_checked"
    # --verify's own failure, eager's and the config's come first; the record's `golden` keeps the golden's status
    assert settled("fail_accuracy", "fail_golden") == "fail_accuracy"
    assert settled("eager_two_runs_differ", "fail_golden") == "eager_two_runs_differ"
    assert settled(None, "not_checked", status="error") == "fail_to_run"
    for status in accuracy_status.GOLDEN_FAILURES:
        assert accuracy_status.failed(status) and not accuracy_status.passed(status) and status in \
            accuracy_status.STATUSES


def test_one_helper_answers_passed_failed_and_the_first_status_that_is_not_a_pass():
    first = accuracy_status.first_not_passing
    assert first(["pass", "pass_due_to_skip", "fail_golden", "fail_accuracy"]) == "fail_golden"
    assert first(["pass_due_to_skip", "pass"]) == "pass_due_to_skip" and first([]) is None
    assert not accuracy_status.failed("not_checked") and not accuracy_status.failed("skipped")
    became = accuracy_status.became_failing
    assert became("pass", "fail_golden") and became("pass", "fail_to_run") and not became("not_checked", "fail_golden")
    assert not became("pass", None) and not became("fail_accuracy", "fail_golden")


def test_a_checking_modes_failures_are_failures_and_its_configs_are_checked_without_verify():
    """--deterministic and --batch-invariant judge every config of theirs: their failures count against a sweep, and
    their records show a verdict (the HTML page's accuracy column, the summary's counts) without --verify."""
    for status in ("fail_nondeterministic", "fail_batch_invariance"):
        assert accuracy_status.failed(status) and status in accuracy_status.STATUSES
        assert accuracy_status.settle({"status": "ok"}, status) == status
    assert set(accuracy_status.MODE_CHECKS) == {"deterministic", "batch_invariant"}
    for key in accuracy_status.MODE_CHECKS:
        assert accuracy_status.checked({"verify": False, "experiment": {key: True}})
        assert not accuracy_status.checked({"verify": False, "experiment": {key: False}})
    assert not accuracy_status.checked({"verify": False}) and not accuracy_status.checked({"experiment": None})


def test_the_summary_names_the_configs_not_passing_and_counts_the_rest():
    import types

    from benchmarks.runner import progress

    def record(model, status="ok", golden=None):
        return {"model": {"suite_name": "dummy", "model_name": model}, "status": status, "verify": False,
                "experiment": {"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval", "batch_size": 4},
                "requested_batch_size": None, "golden": {"status": golden} if golden else None, "warmup": 1,
                "repeat": 2, "iterations_per_run": 1,
                "metrics": {"warmup_time": [0.01], "total_time": [1e-3] * 2, "per_iter_time": [1e-3] * 2}}

    latest = {i: record(f"m{i}", golden="fail_golden") for i in range(progress.MAX_NAMED + 2)}
    latest["ok"], latest["crash"] = record("fine", golden="pass"), record("dead", status="crash")
    text = progress.end_of_sweep("r.jsonl", latest, types.SimpleNamespace(output_dirname="out"),
                                 {"ok": 23, "failed": 1, "skipped": 0}, 0, 1.0, "again")
    line = next(line for line in text.splitlines() if line.startswith("not passing"))
    assert line.startswith(f"not passing ({progress.MAX_NAMED + 3}): m0 cpu-eager-eval: fail_golden; ")
    assert line.endswith("; and 3 more (their records' `accuracy`)") and "fine" not in line
    assert f"accuracy: {progress.MAX_NAMED + 2} fail_golden, 1 fail_to_run, 1 pass" in text


def test_a_history_database_made_before_the_accuracy_column_is_upgraded_and_its_rows_keep_a_verdict(tmp_path):
    from benchmarks.history import database, series

    path = str(tmp_path / "old.sqlite")
    old = sqlite3.connect(path)  # schema 1, as main's history.py wrote it (tests/history/test_database.py reads it too)
    old.executescript((ROOT / "tests" / "fixtures" / "history" / "schema1.sql").read_text())
    old.close()
    connection = database.connect(path)
    assert "accuracy" in {row[1] for row in connection.execute("PRAGMA table_info(measurements)")}
    row = {"status": "ok", "verification": "FAIL", "accuracy": None}  # a row ingested before: derived
    assert series.verdict(row) == "fail_accuracy"
    assert series.verdict(dict(row, accuracy="fail_golden")) == "fail_golden"


def pages_of(tmp_path):
    """aggregate's page and history's page of two runs of eager and inductor on models `fine` and `off`: upstream's
    verification_code says PASS for all, but run 2's inductor `off` failed its golden check."""
    found = []
    for timestamp in (RUN1, RUN2):
        for dynamo in (None, "inductor"):
            for model in ("fine", "off"):
                failing = timestamp == RUN2 and dynamo and model == "off"
                one = hand_record(model, dynamo, timestamp, 0.01, 0.02, 4e6,
                                  accuracy="fail_golden" if failing else "pass")
                one["verification_code"] = "PASS"  # upstream's comparison with eager passed all of them
                one["golden"] = {"status": "fail_golden" if failing else "pass"}
                found.append(one)
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(one) + "\n" for one in found))
    page = tmp_path / "report.html"
    call_tool("aggregate.py", results, "--accelerator=cpu", f"--output={page}", check_rc=0)
    db = tmp_path / "history.sqlite"
    call_tool("history.py", "ingest", results, "--db", db, check_rc=0)
    shown = call_tool("history.py", "show", "--db", db, "--format=html", "-k", "^off$", "--backend", "inductor",
                      check_rc=0).stdout
    return page.read_text(encoding="utf-8"), shown


def test_the_pages_show_the_records_verdict_not_upstreams_code(tmp_path):
    aggregate_page, history_page = pages_of(tmp_path)
    models = aggregate_page[aggregate_page.index('<table id="models"'):]
    assert "<th>Inductor accuracy</th>" in models and "verify</th>" not in models
    assert '<td class="failed">fail_golden</td>' in models and "PASS" not in models
    assert "<th>Accuracy</th>" in history_page and "Verification" not in history_page
    assert history_page.count('<td class="failed">fail_golden</td>') == 1 and "PASS" not in history_page
    assert history_page.count("<td class=\"\">pass</td>") == 1  # run 1, before the golden failed


# ---------------------------------------------------------------- one real sweep, every tool

MODELS = ("elementwise_chain", "drifts_when_armed", "crashes_when_armed")
NOT_PASSING = {("elementwise_chain", "eager"), ("elementwise_chain", "aot_eager"),  # the golden perturbed by 1 %
               ("drifts_when_armed", "aot_eager"),  # 1 % off when compiled: fail_accuracy
               ("crashes_when_armed", "eager"), ("crashes_when_armed", "aot_eager")}  # SIGSEGV
PROGRESS = re.compile(r"\[\d+/\d+\] (\S+) cpu-(\S+?)-eval\S*: (\S+?)[,: ]")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A golden saved; a sweep that passes (eager, aot_eager; --verify and --golden); the golden perturbed by 1 %
    and the faults armed (the same configs: the environment arms them); the same sweep again; then every tool."""
    from benchmarks.child.accuracy import tensor_tree_file

    root = tmp_path_factory.mktemp("verdict")
    store, base, mine = root / "store", root / "base", root / "mine"
    common = ["--suite-name=faults", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=2",
              "--warmup=1", "--batch-size=4", "-k", "^(" + "|".join(MODELS) + ")$"]
    run_runner(*common, f"--save-golden={store}", f"--output-dirname={root / 'save'}", check_rc=0)
    sweep = [*common, "--dynamo=aot_eager", "--verify", f"--golden={store}"]
    passing = run_runner(*sweep, f"--output-dirname={base}", check_rc=0)
    expected = glob.glob(str(store / "faults" / "elementwise_chain" / "*" / "expected.safetensors"))[0]
    tensor_tree_file.save(tensor_tree_file.load(expected) * 1.01, expected)
    armed = dict(os.environ, BENCHMARKS_FAULTS_ARMED="drift,crash")
    failing = run_runner(*sweep, f"--output-dirname={mine}", env=armed, check_rc=1)
    report = root / "rows.csv"
    run_tool("result_analyzer.py", mine / "results.jsonl", f"--output={report}", check_rc=0)
    dashboard = run_tool("aggregate.py", mine, "--accelerator=cpu", "--report=dashboard", "--format=csv",
                         check_rc=0).stdout
    compared = run_tool("compare.py", base, mine, "--fail-on", "accuracy", "--format=json")
    db = root / "history.sqlite"
    run_tool("history.py", "ingest", base / "results.jsonl", mine / "results.jsonl", "--db", db, check_rc=0)
    detected = run_tool("history.py", "detect", "--db", db, "--format=json")
    with open(report, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return dict(passing=passing, failing=failing, records=read_jsonl(mine / "results.jsonl"), rows=rows,
                dashboard=dashboard, compared=compared, detected=detected)


def backend(dynamo) -> str:
    return dynamo or "eager"


@pytest.mark.integration
def test_a_passing_sweep_says_so_everywhere(runs):
    passing = runs["passing"]
    assert "not passing" not in passing.stdout and "accuracy: 6 pass" in passing.stdout
    assert {m.group(3) for m in PROGRESS.finditer(passing.stderr)} == {"ok"}


@pytest.mark.integration
def test_the_records_verdict_covers_the_golden_and_keeps_upstreams_code(runs):
    got = {(r["model"]["model_name"], backend(r["experiment"]["dynamo"])): r for r in runs["records"]}
    golden = got[("elementwise_chain", "aot_eager")]
    assert golden["accuracy"] == "fail_golden" and golden["golden"]["status"] == "fail_golden"
    assert golden["verification_code"] == "PASS"  # upstream's comparison with eager: its own field, unchanged
    drift = got[("drifts_when_armed", "aot_eager")]  # 1 % off: inside upstream's 2 %, outside the harness's rule
    assert drift["accuracy"] == "fail_accuracy" and drift["verification_code"] == "PASS"
    assert drift["golden"]["status"] == "fail_golden"  # both failed: --verify's status comes first
    assert got[("drifts_when_armed", "eager")]["accuracy"] == "pass"


@pytest.mark.integration
def test_every_tool_names_the_same_configs_not_passing(runs):
    failing = runs["failing"]
    progress = {(m.group(1), m.group(2)) for m in PROGRESS.finditer(failing.stderr) if m.group(3) != "ok"}
    assert progress == NOT_PASSING, failing.stderr
    assert "fail_golden, median" in failing.stderr and "(golden: " in failing.stderr  # never `ok`

    summary = next(line for line in failing.stdout.splitlines() if line.startswith("not passing"))
    named = {(m.group(1), m.group(2)) for m in re.finditer(r"(\w+) cpu-(\w+)-eval-bs4: \w+", summary)}
    assert summary.startswith(f"not passing ({len(NOT_PASSING)}): ") and named == NOT_PASSING

    in_csv = {(row["model_name"], backend(row["dynamo"])) for row in runs["rows"]
              if accuracy_status.failed(row["accuracy"])}
    assert in_csv == NOT_PASSING
    assert {row["accuracy"] for row in runs["rows"]} == {"pass", "fail_golden", "fail_accuracy", "fail_to_run"}

    lines = list(csv.DictReader(line for line in runs["dashboard"].splitlines() if not line.startswith("note:")))
    on_dashboard = set()
    for line in lines:
        for part in filter(None, line["NotPassed"].split("; ")):
            _, names = part.split(": ")
            on_dashboard |= {(name, line["Backend"].lower()) for name in names.split(", ")}
    assert on_dashboard == NOT_PASSING, runs["dashboard"]

    compared = runs["compared"]
    assert compared.returncode == 1, compared.stderr
    gated = {(row["model_name"], backend(row["experiment"]["dynamo"])) for row in json.loads(compared.stdout)["rows"]
             if "accuracy" in row["gates"]}
    assert gated == NOT_PASSING

    detected = runs["detected"]
    assert detected.returncode == 1, detected.stderr
    events = json.loads(detected.stdout)["events"]
    in_history = {(e["labels"]["model"], e["labels"]["backend"]) for e in events
                  if e["kind"] in ("accuracy-failure", "new-failure")}
    assert in_history == NOT_PASSING
    assert {e["detail"] for e in events if e["labels"]["model"] == "elementwise_chain"} == {
        "accuracy pass -> fail_golden"}
