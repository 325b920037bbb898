"""history.py (fast tier): ingestion (idempotent, upstream records, torn lines), series, change points at
the right run with the right commits, a platform-wide change grouped, pass/fail events, the detector
against the paper's statistic and worked example, and bad flags (one line, exit 2)."""

import csv
import io
import json
import sqlite3

import numpy as np
import pytest

from helpers import ROOT, call_tool

DB_ARGS = ()


def record(model, run, median, *, status="ok", verification="VERIFIER_SKIPPED", samples=10, seed=0, backend=None,
           graph_breaks=None):
    """One of our records of `model` in run `run` (timestamp 1e9 + run * 1 day, commit c<run>)."""
    rng = np.random.default_rng(seed)
    values = (median * np.exp(rng.normal(0, 0.01, samples))).tolist()
    metrics = {"warmup_time": [1.0], "per_iter_time": values, "total_time": values}
    out = {"model": {"suite_name": "dummy", "model_name": model},
           "experiment": {"accelerator": "cpu", "accelerator_model": "Test CPU", "xla": None, "xla_flags": None,
                          "dynamo": backend, "torch_xla2": None, "test": "eval", "batch_size": 8,
                          "enable_functionalization": False},
           "repeat": samples, "iterations_per_run": 1, "metrics": metrics, "timestamp": 1e9 + run * 86400.0,
           "verification_code": verification, "schema_version": 1, "status": status, "warmup": 1,
           "environment": {"hostname": "ci-host", "git_commit": f"c{run:02d}"}}
    if graph_breaks is not None:  # as the child writes them (Measurement.dynamo_stat reads them)
        out["dynamo_stats"] = {"graphs": 1 + graph_breaks, "graph_breaks": graph_breaks, "recompiles": 0}
    if status != "ok":
        out["metrics"] = {"error": "RuntimeError: boom"}
        out["error"] = {"type": "RuntimeError", "message": "boom", "phase": "run", "log": None}
    return out


def write(path, records, torn=""):
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + torn)
    return path


def history(*args, check_rc=None):
    return call_tool("history.py", *map(str, args), check_rc=check_rc)


def ingest(tmp_path, *files):
    db = tmp_path / "h.sqlite"
    history("ingest", *files, "--db", db, check_rc=0)
    return db


def stepped(models=("mlp",), runs=30, step_at=17, factor=1.10, flat=()):
    """Records of `runs` runs; `models` step by `factor` from run `step_at` on, `flat` ones don't."""
    out = []
    for run in range(runs):
        noise = np.exp(np.random.default_rng(run).normal(0, 0.01))
        for index, model in enumerate(models + tuple(flat)):
            level = 0.010 * (1 + index) * noise * (factor if model in models and run >= step_at else 1.0)
            out.append(record(model, run, level, seed=run * 100 + index))
    return out


# ---------------------------------------------------------------- ingest


def test_ingesting_a_file_twice_stores_its_records_once(tmp_path):
    results = write(tmp_path / "results.jsonl", stepped(runs=4))
    db = ingest(tmp_path, results)
    again = history("ingest", results, tmp_path, "--db", db, check_rc=0)
    assert "0 record(s) added, 4 already in the database" in again.stdout
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 4
        runs = connection.execute("SELECT timestamp, host, commit_sha FROM runs ORDER BY timestamp").fetchall()
    assert runs == [(1e9 + r * 86400.0, "ci-host", f"c{r:02d}") for r in range(4)]


def test_upstream_records_are_ingested_with_their_warm_up_rule(tmp_path):
    db = ingest(tmp_path, ROOT / "tests/fixtures/analyzer/upstream.jsonl")
    shown = history("show", "--db", db, "--format", "csv", "-k", "^BERT_pytorch$", "--backend", "inductor",
                    check_rc=0)
    rows = [line.split(",") for line in shown.stdout.splitlines()]
    header, first = rows[0], dict(zip(rows[0], rows[1]))
    assert "median_ms" in header and first["model"] == "BERT_pytorch" and first["commit"] == ""
    # total_time [4, 1, 2, 3]: the first sample holds compilation (upstream's rule), the median of 1, 2, 3 is 2 s.
    assert float(first["median_ms"]) == 2000.0 and float(first["compile_s"]) == 4.0


def test_bad_and_torn_lines_are_reported_and_skipped(tmp_path):
    good = stepped(runs=3)
    results = write(tmp_path / "results.jsonl", good[:2] + [{"not": "a record"}], torn='{"model": {"suite_na')
    (tmp_path / "results.jsonl").write_text((tmp_path / "results.jsonl").read_text().replace(
        '{"not"', 'not json\n{"not"', 1))
    done = history("ingest", results, "--db", tmp_path / "h.sqlite", check_rc=0)
    assert "2 record(s) added" in done.stdout
    assert "torn last line" in done.stderr and "invalid JSON" in done.stderr and "no model" in done.stderr
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------- detect


def test_a_planted_step_is_found_at_its_run_with_its_commits(tmp_path):
    db = ingest(tmp_path, write(tmp_path / "r.jsonl", stepped(runs=30, step_at=17, factor=1.10)))
    done = history("detect", "--db", db, "--format", "json")
    assert done.returncode == 1, done.stderr  # a slower change: --fail-on's default
    found = json.loads(done.stdout)
    assert len(found["changes"]) == 1
    change = found["changes"][0]
    assert change["direction"] == "slower" and change["before"]["commit"] == "c16" and change["after"]["commit"] == "c17"
    assert change["ci"][0] < 1.10 < change["ci"][1] and change["ci"][0] > 1.05
    assert history("detect", "--db", db, "--fail-on", "none").returncode == 0
    assert history("detect", "--db", db, "--fail-on", "faster").returncode == 0


def test_a_series_without_a_change_has_none(tmp_path):
    db = ingest(tmp_path, write(tmp_path / "r.jsonl", stepped(runs=30, factor=1.0)))
    done = history("detect", "--db", db, check_rc=0)
    assert done.stdout.startswith("0 change(s) in 1 config(s) tested, 0 event(s)")


def test_a_platform_wide_step_is_one_group(tmp_path):
    records = stepped(models=("a", "b", "c", "d"), runs=30, step_at=12, factor=1.12, flat=("e",))
    db = ingest(tmp_path, write(tmp_path / "r.jsonl", records))
    found = json.loads(history("detect", "--db", db, "--format", "json").stdout)
    assert len(found["changes"]) == 4 and {c["after"]["commit"] for c in found["changes"]} == {"c12"}
    assert found["groups"] == [{"group": 1, "platform": True, "configs": 4, "models": ["a", "b", "c", "d"]}]
    text = history("detect", "--db", db).stdout
    assert "platform-wide: 4 models moved together" in text


def test_pass_to_fail_and_graph_break_events(tmp_path):
    records = [record("mlp", run, 0.01, status="ok" if run < 5 else "error", seed=run) for run in range(8)]
    records += [record("conv", run, 0.01, backend="inductor", graph_breaks=0 if run < 3 else 2, seed=run)
                for run in range(6)]
    records += [record("net", run, 0.01, verification="PASS" if run < 4 else "FAIL", seed=run) for run in range(6)]
    db = ingest(tmp_path, write(tmp_path / "r.jsonl", records))
    done = history("detect", "--db", db, "--format", "json")
    assert done.returncode == 1
    events = {e["kind"]: e for e in json.loads(done.stdout)["events"]}
    assert set(events) == {"new-failure", "graph-breaks", "accuracy-failure"}
    assert (events["new-failure"]["before"]["commit"], events["new-failure"]["after"]["commit"]) == ("c04", "c05")
    assert events["graph-breaks"]["after"]["commit"] == "c03" and events["graph-breaks"]["detail"].endswith("0 -> 2")
    assert events["accuracy-failure"]["after"]["commit"] == "c04"
    assert history("detect", "--db", db, "--fail-on", "graph-breaks", "-k", "mlp").returncode == 0


def test_graph_breaks_are_the_records_dynamo_stats_and_older_records_keep_theirs(tmp_path):
    def older(run, breaks):  # written before dynamo_stats: the per-run count in metrics, or upstream's counters
        out = record("conv", run, 0.01, backend="inductor", seed=run)
        if run % 2:
            out["metrics"]["dynamo_graph_break_count"] = [breaks] * 10
        else:
            out["metrics"]["dynamo_counters"] = {"graph_break": {"Tensor.item": breaks}}
        return out

    now = [record("conv", run, 0.01, backend="inductor", graph_breaks=3, seed=run) for run in range(4, 6)]
    for r in now:  # the per-run metric the child also writes: the record's dynamo_stats is what counts
        r["metrics"]["dynamo_graph_break_count"] = [0] * 10
    db = ingest(tmp_path, write(tmp_path / "r.jsonl", [older(0, 1), older(1, 1), older(2, 2), older(3, 2)] + now))
    rows = list(csv.DictReader(io.StringIO(history("show", "--db", db, "--format", "csv", check_rc=0).stdout)))
    assert [row["graph_breaks"] for row in rows] == ["1", "1", "2", "2", "3", "3"]


# ---------------------------------------------------------------- show


def test_show_table_csv_plots_and_html_mark_the_change(tmp_path):
    db = ingest(tmp_path, write(tmp_path / "r.jsonl", stepped(runs=20, step_at=10, factor=1.2)))
    table = history("show", "--db", db, check_rc=0).stdout
    assert table.splitlines()[0].startswith("dummy/mlp eager eval bs=8")
    marked = [line for line in table.splitlines() if "<- slower x1." in line]
    assert len(marked) == 1 and " c10 " in marked[0]
    for fmt, magic in (("png", b"\x89PNG"), ("svg", b"<?xml"), ("html", b"<!DOCTYPE html>")):
        history("show", "--db", db, "-o", tmp_path / f"h.{fmt}", check_rc=0)
        data = (tmp_path / f"h.{fmt}").read_bytes()
        assert data.startswith(magic), fmt
    assert b'<section class="history">' in (tmp_path / "h.html").read_bytes()
    assert history("show", "--db", db, "-k", "nothing-matches").returncode == 1


# ---------------------------------------------------------------- the detector itself


def test_the_statistic_is_the_papers_on_a_hand_worked_example():
    from benchmarks.history import detection

    values = np.array([0, 0, 0, 1, 1, 1.0])
    # tau 3: E = 2 * mean|x - y| (1) - 0 - 0 = 2, Q = 3 * 3 / 6 * 2 = 3; tau 2 and 4: E = 2*4/8 - 0 - 1/3 * 2/... :
    # X = [0, 0], Y = [0, 1, 1, 1]: between 6/8, within Y 3 pairs of 1 over C(4,2) = 1/2: E = 1.5 - 0 - 0.5 = 1,
    # Q = 2 * 4 / 6 * 1 = 4/3.
    q = detection.q_values(np.abs(values[:, None] - values[None, :]), 2)
    assert np.allclose(q, [4 / 3, 3, 4 / 3])


def test_the_worked_example_of_the_e_divisive_paper_is_found():
    """Matteson & James's example (ecp's e.divisive): 4 periods of 100 values, N(0,1), N(0,3), N(2,1), N(2,4):
    changes of variance as well as of mean, found where they are."""
    from benchmarks.history import detection

    rng = np.random.default_rng(250)
    values = np.concatenate([rng.normal(0, 1, 100), rng.normal(0, 3, 100), rng.normal(2, 1, 100),
                             rng.normal(2, 4, 100)])
    found = detection.change_points(values, alpha=0.05, permutations=99, min_size=30)
    assert [c.index for c in found] == [100, 200, 300]


def test_clean_series_raise_about_alpha_false_alarms():
    from benchmarks.history import detection

    alarms = sum(bool(detection.change_points(np.random.default_rng(seed).normal(0, 0.01, 60), seed=seed))
                 for seed in range(100))
    assert alarms <= 3  # alpha 0.01: one expected per 100; seeded, so the same every time


# ---------------------------------------------------------------- bad usage


@pytest.mark.parametrize("args, message", [
    (("detect", "--alpha", "2"), "--alpha: must be between 0 and 1"),
    (("detect", "--fail-on", "sloower"), "unknown value sloower"),
    (("show", "--db", "/nonexistent/h.sqlite"), "no history database at /nonexistent/h.sqlite"),
    (("ingest", "/nonexistent/results.jsonl"), "no such file"),
    (("show", "--format", "pdf"), "invalid choice"),
    (("bisect", "--repo", ".", "--good", "HEAD", "--bad", "HEAD"), "give the runner's flags after `--`"),
    (("bisect", "--repo", "/nonexistent", "--good", "a", "--bad", "b", "--", "--suite-name=dummy"), "no such directory"),
    (("bisect", "--repo", ".", "--good", "a", "--bad", "b", "--", "--rounds=3"), "bisect sets --rounds itself"),
    (("show", "--", "--suite-name=dummy"), "show takes no runner flags"),
    ((), "the following arguments are required"),
])
def test_bad_usage_is_one_line_and_exit_2(tmp_path, args, message):
    done = history(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


def test_a_file_that_is_not_a_database_is_bad_input(tmp_path):
    (tmp_path / "h.sqlite").write_text("not a database\n" * 100)
    done = history("detect", "--db", tmp_path / "h.sqlite")
    assert done.returncode == 2 and "is not a history database" in done.stderr and done.stderr.count("\n") == 1


def test_help_states_the_exit_statuses():
    for command in ((), ("ingest",), ("show",), ("detect",), ("bisect",)):
        text = history(*command, "--help", check_rc=0).stdout
        assert "\nexit status:\n  0    " in text and "\n  1    bad news: " in text, command


def test_selection_by_precision_and_the_backend_label_of_the_shared_view(tmp_path):
    """--precision is the shared selection's axis flag; the backend label is the Measurement's (the
    precision in brackets), and a record without a precision has none."""
    found = []
    for run in range(3):
        for precision in ("bf16", "fp16", None):
            one = record("mlp", run, 0.01, seed=run, backend="inductor")
            if precision:
                one["experiment"]["precision"] = precision
            found.append(one)
    db = ingest(tmp_path, write(tmp_path / "results.jsonl", found))
    rows = history("show", "--db", db, "--format=csv", "--precision", "bf16", "--test", "inference",
                   check_rc=0).stdout.splitlines()
    header = rows[0].split(",")
    picked = [dict(zip(header, line.split(","))) for line in rows[1:]]
    assert [(r["backend"], r["precision"]) for r in picked] == [("inductor[bf16]", "bf16")] * 3
    both = history("show", "--db", db, "--format=csv", "--precision", "bf16", "--precision", "fp16",
                   check_rc=0).stdout
    assert both.count("inductor[fp16]") == 3 and both.count("inductor[bf16]") == 3 and ",inductor," not in both
    unlabelled = history("show", "--db", db, "--backend", "inductor", check_rc=0).stdout
    assert unlabelled.startswith("dummy/mlp inductor eval bs=8") and "[bf16]" not in unlabelled
    nothing = history("show", "--db", db, "--precision", "amp")
    assert nothing.returncode == 1 and nothing.stderr.strip().startswith(
        "history.py: no config in the database matches the selection (")
    unknown = history("show", "--db", db, "--precision", "fp8")  # parsed as the runner parses it: no such precision
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and "fp8" in unknown.stderr
