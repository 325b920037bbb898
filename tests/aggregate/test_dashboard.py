"""aggregate.py --report=dashboard: the four numbers and the pass rate against figures computed here by hand
from a small hand-written results file (the HUD's definitions, docs/architecture.md "The dashboard"), the
compression ratio, every output format, and the HTML page's dashboard at its top."""

import csv
import io
import json
import math
import statistics

import pytest

from helpers import RUN1, RUN2, call_tool, hand_record

MODELS = ("alpha", "beta", "gamma", "delta")


# What each config measured: (per-iteration seconds, first run seconds, peak bytes, accuracy or failed status).
EAGER = {"alpha": (0.010, 0.020, 4e6, "pass"), "beta": (0.020, 0.030, 8e6, "pass"),
         "gamma": (0.040, 0.050, 6e6, "pass"), "delta": (0.030, 0.040, 5e6, "pass")}
INDUCTOR_RUN1 = {"alpha": (0.005, 2.0, 2e6, "pass"), "beta": (0.008, 3.5, 5e6, "pass"),
                 "gamma": (0.050, 1.5, 3e6, "fail_accuracy"), "delta": (None, None, None, "crash")}
# Run 2: alpha's accuracy breaks: the pass rate drops from 2/4 to 1/4.
INDUCTOR_RUN2 = dict(INDUCTOR_RUN1, alpha=(0.005, 2.0, 2e6, "fail_accuracy"))
EAGER_BF16 = {"alpha": (0.008, 0.015, 2e6, "pass"), "beta": (0.015, 0.020, 4e6, "pass")}
INDUCTOR_BF16 = {"alpha": (0.002, 4.0, 1e6, "pass"), "beta": (0.005, 5.0, 3e6, "pass")}


def write_results(path):
    lines = []
    for timestamp, inductor in ((RUN1, INDUCTOR_RUN1), (RUN2, INDUCTOR_RUN2)):
        for table, dynamo, precision in ((EAGER, None, None), (inductor, "inductor", None),
                                         (EAGER_BF16, None, "bf16"), (INDUCTOR_BF16, "inductor", "bf16")):
            for model, (per_iter, first, peak, outcome) in table.items():
                if outcome == "crash":
                    lines.append(hand_record(model, dynamo, timestamp, 0, 0, 0, "fail_to_run", precision, "crash"))
                else:
                    lines.append(hand_record(model, dynamo, timestamp, per_iter, first, peak, outcome, precision))
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def hand_figures(eager: dict, backend: dict) -> dict:
    """The HUD's numbers, written out again: pass rate over every config; the rest over the passing ones."""
    passing = [m for m, v in backend.items() if v[3] == "pass"]
    speedups = [eager[m][0] / backend[m][0] for m in passing]
    return {"passed": len(passing), "total": len(backend), "rate": 100 * len(passing) / len(backend),
            "speedup": math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None,
            "latency": statistics.fmean(backend[m][1] - eager[m][1] for m in passing) if passing else None,
            "compression": statistics.fmean(eager[m][2] / backend[m][2] for m in passing) if passing else None,
            "memory_mib": statistics.fmean(backend[m][2] for m in passing) / 2 ** 20 if passing else None}


def run_aggregate(*args):
    return call_tool("aggregate.py", *args)


def dashboard_rows(path) -> list:
    result = run_aggregate(path, "--report=dashboard", "--format=csv")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("# Datetime(UTC),")
    return list(csv.DictReader(io.StringIO(text[2:])))


def _close(cell: str, expected) -> None:
    if expected is None:
        assert cell == ""
    else:
        assert float(cell) == pytest.approx(expected, rel=1e-6)


def test_the_four_numbers_equal_the_hand_computed_ones(tmp_path):
    rows = dashboard_rows(write_results(tmp_path / "results.jsonl"))
    by_key = {(r["Datetime(UTC)"], r["Backend"], r["precision"]): r for r in rows}
    assert len(rows) == 8  # 2 runs x (eager, inductor) x (fp32, bf16)
    run1, run2 = "2023-11-14 22:13:20", "2023-11-15 22:13:20"
    for stamp, inductor in ((run1, INDUCTOR_RUN1), (run2, INDUCTOR_RUN2)):
        for precision, eager, backend in (("fp32", EAGER, inductor), ("bf16", EAGER_BF16, INDUCTOR_BF16)):
            row, want = by_key[(stamp, "Inductor", precision)], hand_figures(eager, backend)
            assert (int(row["Passed"]), int(row["Total"])) == (want["passed"], want["total"])
            _close(row["PassRate(%)"], want["rate"])
            _close(row["GeomeanSpeedup"], want["speedup"])
            _close(row["CompileLatency(s)"], want["latency"])
            _close(row["CompressionRatio"], want["compression"])
            _close(row["PeakMemory(MiB)"], want["memory_mib"])
            # The eager line: its pass rate and peak memory; the relative figures are its own reference.
            base = by_key[(stamp, "Eager", precision)]
            assert (int(base["Passed"]), int(base["Total"])) == (len(eager), len(eager))
            _close(base["PeakMemory(MiB)"], statistics.fmean(v[2] for v in eager.values()) / 2 ** 20)
            assert base["GeomeanSpeedup"] == base["CompressionRatio"] == ""
    # Failures and skips are counted in the denominator and listed by status.
    assert by_key[(run1, "Inductor", "fp32")]["NotPassed"] == "fail_accuracy: gamma; fail_to_run: delta"
    assert by_key[(run2, "Inductor", "fp32")]["NotPassed"] == "fail_accuracy: alpha, gamma; fail_to_run: delta"
    # The device peak is used, not the host's resident set (10x larger in these records).
    assert float(by_key[(run1, "Inductor", "bf16")]["CompressionRatio"]) == pytest.approx(
        statistics.fmean([2e6 / 1e6, 4e6 / 3e6]))


def test_a_pass_rate_drop_shows_over_time(tmp_path):
    rows = [r for r in dashboard_rows(write_results(tmp_path / "r.jsonl"))
            if r["Backend"] == "Inductor" and r["precision"] == "fp32"]
    assert [float(r["PassRate(%)"]) for r in rows] == [50.0, 25.0]  # oldest run first


def test_a_dynamic_shapes_config_is_compared_with_eager_which_runs_static(tmp_path):
    path = write_results(tmp_path / "r.jsonl")
    dynamic = {"alpha": (0.004, 3.0, 1e6, "pass"), "beta": (0.010, 4.0, 4e6, "pass")}
    with open(path, "a") as handle:
        for model, (per_iter, first, peak, outcome) in dynamic.items():
            handle.write(json.dumps(hand_record(model, "inductor", RUN1, per_iter, first, peak, outcome,
                                           dynamic="batch")) + "\n")
    rows = [r for r in dashboard_rows(path) if r["Backend"] == "Inductor" and r["dynamic"] == "batch"]
    assert len(rows) == 1
    want = hand_figures(EAGER, dynamic)
    for column, key in (("GeomeanSpeedup", "speedup"), ("CompileLatency(s)", "latency"),
                        ("CompressionRatio", "compression")):
        _close(rows[0][column], want[key])


def test_a_warm_start_line_shows_its_cold_and_warm_compile_and_the_saving(tmp_path):
    path = write_results(tmp_path / "r.jsonl")
    # --compile-cache=warm-start: the record is the warm child's (its first run), the cold child's in warm_start.
    pairs = {"alpha": (0.005, 9.0, 3.0, "pass"), "beta": (0.008, 12.0, 5.0, "pass"),
             "gamma": (0.050, 20.0, 1.0, "fail_accuracy")}  # not passing: left out of the figures
    with open(path, "a") as handle:
        for model, (per_iter, cold, warm, outcome) in pairs.items():
            record = hand_record(model, "inductor", RUN1, per_iter, warm, 1e6, outcome)
            record["experiment"]["compile_cache"] = "warm-start"
            record["warm_start"] = {"cold_first_run_seconds": cold, "warm_first_run_seconds": warm,
                                    "saving_seconds": cold - warm}
            handle.write(json.dumps(record) + "\n")
    rows = [r for r in dashboard_rows(path) if r["Backend"] == "Inductor" and r["precision"] == "fp32"]
    line = next(r for r in rows if r["compile_cache"] == "warm-start")
    _close(line["ColdCompile(s)"], statistics.fmean([9.0, 12.0]))
    _close(line["WarmCompile(s)"], statistics.fmean([3.0, 5.0]))
    _close(line["CompileSaving(s)"], statistics.fmean([6.0, 7.0]))
    _close(line["CompileLatency(s)"], statistics.fmean([3.0 - EAGER["alpha"][1], 5.0 - EAGER["beta"][1]]))
    assert all(r["ColdCompile(s)"] == "" for r in rows if r["compile_cache"] != "warm-start")
    table = run_aggregate(path, "--report=dashboard", "--format=tab")
    assert "Note: Warm start (--compile-cache=warm-start): cold and warm compile" in table.stdout


def test_a_dashboard_without_a_warm_start_has_no_warm_start_columns(tmp_path):
    result = run_aggregate(write_results(tmp_path / "r.jsonl"), "--report=dashboard", "--format=csv")
    assert "ColdCompile" not in result.stdout and "Warm start" not in result.stdout + result.stderr


def test_an_aot_precompile_line_shows_its_load_time_over_the_configs_that_passed(tmp_path):
    path = write_results(tmp_path / "r.jsonl")
    loads = {"alpha": (0.004, "pass"), "beta": (0.006, "pass"), "gamma": (0.5, "fail_accuracy")}
    with open(path, "a") as handle:
        for model, (load, outcome) in loads.items():
            record = hand_record(model, "inductor", RUN1, 0.005, 0.1, 1e6, outcome)
            record["experiment"]["aot_precompile"] = True
            record["metrics"]["aot_precompile_load_time"] = [load]
            handle.write(json.dumps(record) + "\n")
    rows = [r for r in dashboard_rows(path) if r["Backend"] == "Inductor" and r["precision"] == "fp32"]
    line = next(r for r in rows if r["aot_precompile"] == "aot_precompile")
    assert (line["Passed"], line["Total"]) == ("2", "3")
    _close(line["AOTLoad(ms)"], 1e3 * statistics.fmean([0.004, 0.006]))
    assert all(r["AOTLoad(ms)"] == "" and r["aot_precompile"] == "" for r in rows if r is not line)


def test_every_text_format_and_the_image_formats(tmp_path):
    path = write_results(tmp_path / "r.jsonl")
    table = run_aggregate(path, "--report=dashboard", "--format=tab")
    assert table.returncode == 0, table.stderr
    assert "Compression" in table.stdout and "fail_accuracy: alpha, gamma" in table.stdout
    assert "Note: Pass rate = configs whose accuracy is pass" in table.stdout
    for fmt, magic in (("png", b"\x89PNG"), ("svg", b"<?xml")):
        out = tmp_path / f"dash.{fmt}"
        result = run_aggregate(path, "--report=dashboard", "-o", out)
        assert result.returncode == 0, result.stderr
        assert out.read_bytes().startswith(magic)
    assert "Pass rate (%)" in (tmp_path / "dash.svg").read_text()


def test_the_html_page_starts_with_the_dashboard(tmp_path):
    path, page = write_results(tmp_path / "r.jsonl"), tmp_path / "report.html"
    result = run_aggregate(path, "-o", page)
    assert result.returncode == 0, result.stderr
    text = page.read_text()
    dashboard, facts = text.index('id="dashboard"'), text.index("What was run")
    assert dashboard < facts
    want = hand_figures(EAGER, INDUCTOR_RUN2)
    assert f"{want['rate']:.0f}%, {want['passed']}/{want['total']}" in text[dashboard:facts]


# A sweep without --verify: nothing judged its accuracy (beta's inductor config crashed, which is a failure
# whether or not it was checked).
UNCHECKED_EAGER = {"alpha": (0.010, 0.020, 4e6, "not_checked"), "beta": (0.020, 0.030, 8e6, "not_checked"),
                   "gamma": (0.040, 0.050, 6e6, "not_checked")}
UNCHECKED_INDUCTOR = {"alpha": (0.005, 2.0, 2e6, "not_checked"), "beta": (None, None, None, "crash"),
                      "gamma": (0.010, 1.0, 3e6, "not_checked")}


def write_unchecked(path):
    found = []
    for dynamo, table in ((None, UNCHECKED_EAGER), ("inductor", UNCHECKED_INDUCTOR)):
        for model, (per_iter, first, peak, outcome) in table.items():
            found.append(hand_record(model, dynamo, RUN1, 0, 0, 0, "fail_to_run", status="crash") if outcome == "crash"
                         else dict(hand_record(model, dynamo, RUN1, per_iter, first, peak, outcome), verify=False))
    path.write_text("".join(json.dumps(r) + "\n" for r in found))
    return path


def test_a_run_without_accuracy_data_says_not_checked_instead_of_a_zero_pass_rate(tmp_path):
    path = write_unchecked(tmp_path / "r.jsonl")
    result = run_aggregate(path, "--report=dashboard", "--format=csv")
    assert result.returncode == 0, result.stderr
    rows = {r["Backend"]: r for r in csv.DictReader(io.StringIO(result.stdout[2:]))}
    assert (rows["Eager"]["Passed"], rows["Eager"]["Total"], rows["Eager"]["PassRate(%)"]) == ("", "3", "")
    assert rows["Eager"]["NotPassed"] == "not checked: run with --verify"
    inductor = rows["Inductor"]
    assert (inductor["Passed"], inductor["Total"], inductor["PassRate(%)"]) == ("", "3", "")
    assert inductor["NotPassed"] == "not checked: run with --verify; fail_to_run: beta"  # a crash is still named
    # The figures are over the configs that measured a time (no config passed a check that never ran).
    timed = [m for m, v in UNCHECKED_INDUCTOR.items() if v[0] is not None]
    _close(inductor["GeomeanSpeedup"], math.exp(statistics.fmean(
        math.log(UNCHECKED_EAGER[m][0] / UNCHECKED_INDUCTOR[m][0]) for m in timed)))
    _close(inductor["CompileLatency(s)"], statistics.fmean(
        UNCHECKED_INDUCTOR[m][1] - UNCHECKED_EAGER[m][1] for m in timed))
    assert "Not checked for accuracy (run with --verify for a pass rate): Eager (dummy), Inductor (dummy)" \
        in result.stderr
    table = run_aggregate(path, "--report=dashboard", "--format=table")
    assert table.returncode == 0, table.stderr
    inductor_line = next(line for line in table.stdout.splitlines() if "| Inductor " in line)
    assert "not checked: run with --verify; fail_to_run: beta" in inductor_line
    assert "not_checked" not in table.stdout
    assert [cell.strip() for cell in inductor_line.split("|")[4:7]] == ["", "3", ""]  # no 0 passed, no 0% pass rate
    page = tmp_path / "report.html"
    assert run_aggregate(path, "-o", page).returncode == 0
    text = page.read_text()
    dashboard = text[text.index('id="dashboard"'):text.index("What was run")]
    assert dashboard.count("not checked: run with --verify") == 2  # in each line's pass rate cell
    assert "0%" not in dashboard and "0/3" not in dashboard and "not_checked" not in dashboard
    assert '<td class="msg">fail_to_run: beta</td>' in dashboard


def test_unverified_configs_beside_verified_ones_count_in_the_denominator_and_say_why(tmp_path):
    path = tmp_path / "r.jsonl"
    found = [hand_record("alpha", None, RUN1, 0.01, 0.02, 1e6, "pass"),
             hand_record("alpha", "inductor", RUN1, 0.005, 1.0, 1e6, "pass"),
             hand_record("beta", None, RUN1, 0.01, 0.02, 1e6, "not_checked"),
             hand_record("beta", "inductor", RUN1, 0.005, 1.0, 1e6, "not_checked")]
    path.write_text("".join(json.dumps(r) + "\n" for r in found))
    result = run_aggregate(path, "--report=dashboard", "--format=csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout[2:])))
    assert [(r["Passed"], r["Total"], r["NotPassed"]) for r in rows] == [("1", "2", "not_checked: beta")] * 2
    assert "2 config(s) of the newest run were not checked for accuracy: run with --verify" in result.stderr


def test_a_fallback_rule_and_pass_due_to_skip_are_named_and_pass_due_to_skip_counts_as_passed(tmp_path):
    path = tmp_path / "r.jsonl"
    found = []
    for model, accuracy, reference in (("alpha", "pass", "fp64"), ("beta", "pass", "mean_rel_error"),
                                       ("gamma", "fail_accuracy", "mean_rel_error"), ("delta", "pass", "cosine"),
                                       ("epsilon", "pass_due_to_skip", None)):
        for dynamo, per_iter in ((None, 0.01), ("inductor", 0.005)):
            found.append(dict(hand_record(model, dynamo, RUN1, per_iter, 2 * per_iter, 1e6, accuracy),
                              accuracy_reference=reference))
    path.write_text("".join(json.dumps(r) + "\n" for r in found))
    result = run_aggregate(path, "--report=dashboard", "--format=csv")
    assert result.returncode == 0, result.stderr
    rows = {r["Backend"]: r for r in csv.DictReader(io.StringIO(result.stdout[2:]))}
    assert (rows["Inductor"]["Passed"], rows["Inductor"]["Total"]) == ("4", "5")  # pass_due_to_skip passes
    assert rows["Inductor"]["NotPassed"] == "fail_accuracy: gamma"
    notes = result.stderr
    assert ("Inductor (dummy): accuracy of 2 config(s) judged by the mean-relative-error fallback (upstream's "
            "verification, not the harness's rule: the suite declares their output random): beta, gamma") in notes
    assert "Inductor (dummy): accuracy of 1 config(s) judged by cosine similarity" in notes
    assert "Inductor (dummy): 1 config(s) pass_due_to_skip" in notes and "epsilon" in notes


@pytest.mark.parametrize("key, status, label, check", [
    ("deterministic", "fail_nondeterministic", "deterministic",
     "--deterministic's check (two runs of each config's step, compared bit by bit)"),
    ("batch_invariant", "fail_batch_invariance", "batch-invariant",
     "--batch-invariant's check (each sample's output at N/2, ..., 1 against its own at the config's batch N, bit by "
     "bit)"),
])
def test_a_mode_row_has_a_pass_rate_over_its_own_check(tmp_path, key, status, label, check):
    """The dashboard's deterministic_perf and batch_invariant_accuracy rows: a line of their own (a column for the
    axis), whose pass rate counts the mode's check without --verify, its failures listed, and a note saying so."""
    lines = []
    for dynamo, accuracies in ((None, {"alpha": "pass", "beta": "pass"}),
                               ("inductor", {"alpha": "pass", "beta": status})):
        for model, accuracy in accuracies.items():
            record = hand_record(model, dynamo, RUN1, 0.005 if dynamo else 0.010, 2.0 if dynamo else 0.02, 2e6,
                                 accuracy)
            record["experiment"][key], record["verify"] = True, False
            lines.append(record)
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    [eager, inductor] = dashboard_rows(path)
    assert (eager["Backend"], eager[key], eager["Passed"], eager["Total"]) == ("Eager", key, "2", "2")
    assert (inductor["Backend"], inductor["Passed"], inductor["Total"]) == ("Inductor", "1", "2")
    _close(inductor["PassRate(%)"], 50.0)
    _close(inductor["GeomeanSpeedup"], 2.0)  # over eager in the same mode, the passing config only
    assert inductor["NotPassed"] == f"{status}: beta"
    table = run_aggregate(path, "--report=dashboard", "--format=tab").stdout
    assert (f"Inductor [{label}] (dummy): the pass rate counts {check}, beside --verify's where it ran: 1 of 2 "
            f"config(s) {status}: beta") in " ".join(table.split())
