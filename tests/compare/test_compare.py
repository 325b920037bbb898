"""compare.py on synthetic result files of known truth: slowdowns found, unchanged configs not flagged,
intervals that cover the true ratio at about the stated rate, every verdict and exit status, the matching
rules, upstream records, bad input. Fast: no child process but a few runs of the CLI itself."""

import json
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

from helpers import GOLDEN, ROOT, call_tool

from benchmarks.compare import bootstrap, cli, matching
from benchmarks.results import records

BASE = 0.010  # 10 ms per iteration


def record(model="m0", dynamo=None, samples=(BASE,) * 10, round_=0, status="ok", verification="VERIFIER_SKIPPED",
           timestamp=1000.0, accelerator_model="Some CPU", peak=None, warmup=(0.5,), **experiment):
    """One of our records (warm-up kept apart)."""
    exp = {"accelerator": "cpu", "accelerator_model": accelerator_model, "xla": None, "xla_flags": None,
           "dynamo": dynamo, "torch_xla2": None, "test": "eval", "batch_size": 8, "enable_functionalization": False}
    exp.update(experiment)
    metrics = {"warmup_time": list(warmup), "total_time": list(samples), "per_iter_time": list(samples)}
    if peak is not None:
        metrics["peak_rss_bytes"] = [peak] * len(samples)
    out = {"model": {"suite_name": "dummy", "model_name": model}, "experiment": exp, "repeat": len(samples),
           "iterations_per_run": 1, "metrics": metrics, "timestamp": timestamp, "verification_code": verification,
           "schema_version": 1, "status": status, "error": None, "warmup": len(warmup), "round": round_,
           "environment": {"hostname": f"host-{accelerator_model}"}}
    if status != "ok":
        out["error"] = {"type": "RuntimeError", "message": "boom", "phase": "run", "log": None}
        out["metrics"] = {"error": "RuntimeError: boom"}
    return out


def noisy_side(rng, factors: dict, processes=5, samples=20, within=0.02, between=0.01, **kwargs) -> list:
    """Records of each model (its true factor over BASE): `processes` rounds of `samples` samples, lognormal
    noise between processes and within each."""
    out = []
    for round_ in range(processes):
        for model, factor in factors.items():
            level = BASE * factor * np.exp(rng.normal(0, between))
            out.append(record(model, samples=(level * np.exp(rng.normal(0, within, samples))).tolist(),
                              round_=round_, **kwargs))
    return out


def write(path, found: list) -> str:
    with open(path, "w") as handle:
        for item in found:
            handle.write((item if isinstance(item, str) else json.dumps(item)) + "\n")
    return str(path)


def compare(capsys, *argv) -> tuple:
    """(exit status, stdout, stderr) of compare.py's main in this process."""
    try:
        status = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def compare_json(capsys, *argv) -> tuple:
    status, out, err = compare(capsys, *argv, "--format=json")
    return status, json.loads(out) if out else None, err


def verdicts_by_model(report: dict) -> dict:
    return {row["model_name"]: row["verdict"] for row in report["rows"]}


# ---------------------------------------------------------------- known truth


def test_slowdowns_are_found_and_unchanged_configs_are_not_flagged(tmp_path, capsys):
    rng = np.random.default_rng(7)
    truth = {f"m{i}": (1.10 if i < 4 else 1.0) for i in range(12)}
    control = write(tmp_path / "a.jsonl", noisy_side(rng, {m: 1.0 for m in truth}))
    treatment = write(tmp_path / "b.jsonl", noisy_side(rng, truth))
    status, report, _ = compare_json(capsys, control, treatment)
    found = verdicts_by_model(report)
    assert {m for m, v in found.items() if v == "slower"} == {"m0", "m1", "m2", "m3"}
    assert not any(found[m] in ("slower", "faster") for m, f in truth.items() if f == 1.0)
    assert status == 1  # something is slower
    for row in report["rows"]:
        assert row["control"]["n_processes"] == 5 and row["control"]["n_samples"] == 100
        assert row["ci"][0] <= row["time_ratio"] <= row["ci"][1]
        if row["model_name"] in ("m0", "m1", "m2", "m3"):
            assert row["ci"][0] > 1.02 and abs(row["time_ratio"] - 1.10) < 0.03
    assert report["counts"]["slower"] == 4
    # Rows sorted by effect: the slowdowns first.
    assert {row["model_name"] for row in report["rows"][:4]} == {"m0", "m1", "m2", "m3"}
    geomean = report["geomean"]
    assert geomean["ci"][0] < geomean["time_ratio"] < geomean["ci"][1]
    assert abs(geomean["time_ratio"] - 1.10 ** (4 / 12)) < 0.01


def test_intervals_cover_the_true_ratio_at_about_the_stated_rate():
    """Over 300 configs of known truth (3 to 8 processes, noise within and between): the share of 95% and
    80% intervals that hold the true ratio. scripts/bench/compare.py measures it over many more."""
    rng = np.random.default_rng(11)
    for confidence in (0.95, 0.80):
        covered, total = 0, 0
        for processes in (3, 5, 8):
            n = 100
            factors = np.exp(rng.normal(0, 0.05, n))
            sides = []
            for factor in factors:
                for f in (1.0, factor):
                    sides.append([f * np.exp(rng.normal(0, 0.01)) * np.exp(rng.normal(0, 0.02, 10))
                                  for _ in range(processes)])
            draws = bootstrap.side_draws(sides, 400, np.random.default_rng(0))
            for i, factor in enumerate(factors):
                result = bootstrap.ratio(draws[2 * i], draws[2 * i + 1], confidence)
                covered += result.ci[0] <= factor <= result.ci[1]
                total += 1
        rate = covered / total
        assert abs(rate - confidence) < 0.05, (confidence, rate)


def test_the_same_inputs_give_the_same_output(tmp_path, capsys):
    rng = np.random.default_rng(3)
    control = write(tmp_path / "a.jsonl", noisy_side(rng, {"m0": 1, "m1": 1}, processes=3))
    treatment = write(tmp_path / "b.jsonl", noisy_side(rng, {"m0": 1.03, "m1": 1}, processes=3))
    first = compare(capsys, control, treatment, "--format=json")
    second = compare(capsys, control, treatment, "--format=json")
    assert first == second
    other_seed = compare(capsys, control, treatment, "--format=json", "--seed=5")
    assert json.loads(other_seed[1])["rows"][0]["ci"] != json.loads(first[1])["rows"][0]["ci"]


# ---------------------------------------------------------------- every verdict


def steady(model, level, processes=4, spread=0.001, seed=0, **kwargs) -> list:
    """Quiet records: `processes` rounds, tiny noise (`spread` within a process and between processes)."""
    rng = np.random.default_rng(zlib.crc32(model.encode()) + seed)
    return [record(model, samples=(level * (1 + rng.normal(0, spread)) * (1 + rng.normal(0, spread, 10))).tolist(),
                   round_=r, **kwargs) for r in range(processes)]


def test_every_verdict(tmp_path, capsys):
    control = (steady("slow", BASE) + steady("fast", BASE) + steady("same", BASE) + steady("noisy", BASE, 2, 0.05)
               + steady("broken", BASE) + steady("wrong", BASE) + steady("repaired", BASE, status="error")
               + steady("dead", BASE, status="crash") + steady("gone", BASE) + steady("lone", BASE, 1))
    treatment = (steady("slow", BASE * 1.2) + steady("fast", BASE * 0.8) + steady("same", BASE)
                 + steady("noisy", BASE * 1.03, 2, 0.05, seed=1) + steady("broken", BASE, status="timeout")
                 + steady("wrong", BASE, verification="FAIL") + steady("repaired", BASE)
                 + steady("dead", BASE, status="oom") + steady("new", BASE) + steady("lone", BASE * 1.04, 1))
    status, report, _ = compare_json(capsys, write(tmp_path / "a.jsonl", control), write(tmp_path / "b.jsonl", treatment))
    found = verdicts_by_model(report)
    assert found == {"slow": "slower", "fast": "faster", "same": "same", "noisy": "unsure", "broken": "new-failure",
                     "wrong": "new-failure", "repaired": "fixed", "dead": "failing", "gone": "only-control",
                     "new": "only-treatment", "lone": "unsure"}
    notes = {row["model_name"]: row["note"] for row in report["rows"]}
    assert "--rounds" in notes["noisy"] and "--rounds" in notes["lone"] and "1 process" in notes["lone"]
    assert "accuracy fail_accuracy" in notes["wrong"] and "timeout" in notes["broken"]
    assert report["counts"] == {"slower": 1, "new-failure": 2, "unsure": 2, "faster": 1, "fixed": 1, "same": 1,
                                "failing": 1, "only-control": 1, "only-treatment": 1}
    assert status == 1
    # Failures lead the table; configs without a ratio close it.
    assert [row["verdict"] for row in report["rows"][:3]] == ["new-failure", "new-failure", "fixed"]
    assert report["rows"][3]["model_name"] == "slow" and report["rows"][-1]["time_ratio"] is None


def test_one_process_a_side_gives_no_verdict_however_large_the_change(tmp_path, capsys):
    """Issue 60: the quickstart, eager against itself on a busy machine, came out `2 slower, 1 faster` from one
    process a side. Without a second process the variation between processes is unknown: no verdict, and the note
    says what gives one."""
    control = steady("small", BASE, 1) + steady("huge", BASE, 1) + steady("tiny", BASE, 1)
    treatment = steady("small", BASE * 1.05, 1) + steady("huge", BASE * 1.5, 1) + steady("tiny", BASE, 1)
    status, report, _ = compare_json(capsys, write(tmp_path / "a.jsonl", control),
                                     write(tmp_path / "b.jsonl", treatment))
    assert verdicts_by_model(report) == {"small": "unsure", "huge": "unsure", "tiny": "unsure"}
    assert all("--rounds 3" in row["note"] and "no verdict" in row["note"] for row in report["rows"])
    assert report["geomean"]["verdict"] == "unsure" and status == 0
    # one side with several processes is not enough either
    _, report, _ = compare_json(capsys, write(tmp_path / "c.jsonl", steady("huge", BASE, 4)),
                                write(tmp_path / "d.jsonl", steady("huge", BASE * 1.5, 1)))
    assert verdicts_by_model(report) == {"huge": "unsure"} and "the treatment side" in report["rows"][0]["note"]


def test_exit_status_follows_fail_on(tmp_path, capsys):
    control = write(tmp_path / "a.jsonl", steady("a", BASE) + steady("b", BASE) + steady("c", BASE))
    slower = write(tmp_path / "b.jsonl", steady("a", BASE * 1.3) + steady("b", BASE * 1.3) + steady("c", BASE))
    failing = write(tmp_path / "c.jsonl", steady("a", BASE) + steady("b", BASE) + steady("c", BASE, status="error"))
    same = write(tmp_path / "d.jsonl", steady("a", BASE) + steady("b", BASE) + steady("c", BASE))
    assert compare(capsys, control, same)[0] == 0
    assert compare(capsys, control, slower)[0] == 1
    assert compare(capsys, control, failing)[0] == 1
    assert compare(capsys, control, slower, "--fail-on=new-failure")[0] == 0
    assert compare(capsys, control, failing, "--fail-on=slower")[0] == 0
    assert compare(capsys, control, slower, "--fail-on=geomean")[0] == 1  # geomean +19%
    assert compare(capsys, control, failing, "--fail-on=geomean")[0] == 0
    assert compare(capsys, control, slower, "--fail-on=none")[0] == 0
    assert compare(capsys, control, same, "--fail-on=same")[0] == 1
    assert compare(capsys, control, slower, "--fail-on=geomean,new-failure")[0] == 1
    status, out, err = compare(capsys, control, slower, "--fail-on=slowest")
    assert status == 2 and "slowest" in err and len(err.strip().splitlines()) == 1


def test_threshold_decides_what_counts(tmp_path, capsys):
    control = write(tmp_path / "a.jsonl", steady("a", BASE, 6))
    treatment = write(tmp_path / "b.jsonl", steady("a", BASE * 1.04, 6))
    assert verdicts_by_model(compare_json(capsys, control, treatment)[1]) == {"a": "slower"}
    assert verdicts_by_model(compare_json(capsys, control, treatment, "--threshold=5%")[1]) == {"a": "same"}
    assert verdicts_by_model(compare_json(capsys, control, treatment, "--threshold=0.05")[1]) == {"a": "same"}


# ---------------------------------------------------------------- matching


def test_configs_match_by_model_and_experiment_config_only(tmp_path, capsys):
    control = [record("m", accelerator_model="CPU A", timestamp=1.0, round_=r) for r in range(3)]
    control += [record("m", dynamo="inductor", round_=r) for r in range(3)]
    control += [{**record("m", batch_size=4), "experiment_name": "run_all"}]
    treatment = [dict(record("m", accelerator_model="CPU B", timestamp=2.0, round_=r), environment={"other": 1})
                 for r in range(3)]
    treatment += [record("m", dynamo="aot_eager", round_=r) for r in range(3)]
    treatment += [record("m", batch_size=4)]
    _, report, _ = compare_json(capsys, write(tmp_path / "a.jsonl", control), write(tmp_path / "b.jsonl", treatment))
    by_config = {(row["experiment"]["dynamo"], row["experiment"]["batch_size"]): row for row in report["rows"]}
    assert by_config[(None, 8)]["verdict"] == "same"  # another accelerator model, environment, timestamp: same config
    assert by_config[(None, 8)]["control"]["n_processes"] == 3
    assert "accelerator_model" not in by_config[(None, 8)]["experiment"]
    assert by_config[("inductor", 8)]["verdict"] == "only-control"
    assert by_config[("aot_eager", 8)]["verdict"] == "only-treatment"
    assert by_config[(None, 4)]["control"]["n_processes"] == 1  # batch size 4 is its own config


def test_the_round_does_not_change_the_config_key():
    assert matching.config_key(record(round_=0)) == matching.config_key(record(round_=3))
    assert matching.config_key(record()) != matching.config_key(record(test="train"))


def test_timestamps_pick_runs(tmp_path, capsys):
    both = write(tmp_path / "runs.jsonl", steady("a", BASE, timestamp=10.0) + steady("a", BASE * 1.3, timestamp=20.0))
    status, report, _ = compare_json(capsys, both, both, "--control-timestamp=10", "--treatment-timestamp=20")
    assert verdicts_by_model(report) == {"a": "slower"} and status == 1
    _, report, _ = compare_json(capsys, both, both, "--control-timestamp=20", "--treatment-timestamp=10")
    assert verdicts_by_model(report) == {"a": "faster"}
    _, report, _ = compare_json(capsys, both, both, "--control-timestamp=10", "--latest")
    assert verdicts_by_model(report) == {"a": "slower"}  # --latest: the treatment's newest run
    _, report, _ = compare_json(capsys, both, both)
    assert report["rows"][0]["control"]["n_processes"] == 8  # no choice: both runs pooled, as processes
    status, _, err = compare(capsys, both, both, "--control-timestamp=15")
    assert status == 2 and "no such run" in err


# ---------------------------------------------------------------- metrics and upstream records


def test_compile_time_and_peak_memory(tmp_path, capsys):
    control = [record("m", warmup=(2.0 + 0.01 * r, 0.01), peak=1e8, round_=r) for r in range(4)]
    treatment = [record("m", warmup=(3.0 + 0.01 * r, 0.01), peak=2e8, round_=r) for r in range(4)]
    a, b = write(tmp_path / "a.jsonl", control), write(tmp_path / "b.jsonl", treatment)
    _, report, _ = compare_json(capsys, a, b, "--metric=compile")
    assert report["rows"][0]["verdict"] == "slower" and abs(report["rows"][0]["time_ratio"] - 1.5) < 0.01
    _, report, _ = compare_json(capsys, a, b, "--metric=memory")
    assert report["rows"][0]["verdict"] == "slower" and abs(report["rows"][0]["time_ratio"] - 2.0) < 1e-9
    _, report, _ = compare_json(capsys, a, write(tmp_path / "c.jsonl", steady("m", BASE)), "--metric=memory")
    assert report["rows"][0]["verdict"] == "no-data" and "peak_rss_bytes" in report["rows"][0]["note"]


def test_a_rate_where_more_is_better_is_judged_by_its_inverse(tmp_path, capsys):
    def generated(rate, round_):
        out = record("m", round_=round_)
        out["metrics"]["decode_tokens_per_second"] = [rate * (1 + 0.001 * i) for i in range(10)]
        out["metrics"]["time_to_first_token"] = [0.2] * 10
        return out

    a = write(tmp_path / "a.jsonl", [generated(50.0, r) for r in range(4)])
    b = write(tmp_path / "b.jsonl", [generated(40.0, r) for r in range(4)])
    _, report, _ = compare_json(capsys, a, b, "--metric=decode_tokens_per_second")
    assert report["rows"][0]["verdict"] == "slower" and report["rows"][0]["time_ratio"] == pytest.approx(1.25, rel=1e-3)
    _, report, _ = compare_json(capsys, b, a, "--metric=decode_tokens_per_second")
    assert report["rows"][0]["verdict"] == "faster"
    _, report, _ = compare_json(capsys, a, b, "--metric=time_to_first_token")  # a time: as it is
    assert report["rows"][0]["verdict"] == "same"
    status, text, _ = compare(capsys, a, b, "--metric=decode_tokens_per_second")
    assert "ms per token" in text


def test_peak_memory_of_different_kinds_is_not_compared(tmp_path, capsys):
    def device(kind, peak, round_):
        out = record("m", peak=4e8, round_=round_)  # older-style host figure too: the device's is taken
        out["metrics"]["peak_memory_bytes"] = [peak] * 10
        out["memory_kind"] = kind
        return out

    cpu = [device("cpu_rss_above_baseline", 1e8, r) for r in range(4)]
    cuda = [device("cuda_allocated", 2e8, r) for r in range(4)]
    old = [record("m", peak=3e8, round_=r) for r in range(4)]  # no memory_kind: the host's resident set
    a, b, c = (write(tmp_path / f"{n}.jsonl", found) for n, found in (("a", cpu), ("b", cuda), ("c", old)))
    _, report, _ = compare_json(capsys, a, b, "--metric=memory")
    assert report["rows"][0]["verdict"] == "no-data" and report["rows"][0]["time_ratio"] is None
    assert report["rows"][0]["note"] == ("memory kinds differ (not comparable): control cpu_rss_above_baseline, "
                                         "treatment cuda_allocated")
    _, report, _ = compare_json(capsys, c, a, "--metric=memory")
    assert report["rows"][0]["note"] == ("memory kinds differ (not comparable): control peak_rss_bytes, "
                                         "treatment cpu_rss_above_baseline")
    _, report, _ = compare_json(capsys, a, a, "--metric=memory")  # the same kind: compared
    assert report["rows"][0]["verdict"] == "same" and report["rows"][0]["time_ratio"] == pytest.approx(1.0)


def upstream(model, samples, timestamp=1.0) -> dict:
    """An upstream PyTorch/XLA record: no status, no warm-up; the first sample holds compilation."""
    return {"model": {"suite_name": "torchbench", "model_name": model},
            "experiment": {"experiment_name": "run_all", "accelerator": "cuda", "accelerator_model": "Tesla V100",
                           "xla": "PJRT", "xla_flags": None, "dynamo": "openxla", "test": "eval", "batch_size": 8},
            "repeat": len(samples), "iterations_per_run": 1, "metrics": {"total_time": samples, "per_iter_time": samples},
            "outputs_file": None, "timestamp": timestamp}


def test_upstream_records(tmp_path, capsys):
    rng = np.random.default_rng(5)
    control = [upstream("alexnet", [9.0] + (0.1 * (1 + rng.normal(0, 0.002, 9))).tolist()) for _ in range(4)]
    treatment = [upstream("alexnet", [1.0] + (0.1 * (1 + rng.normal(0, 0.002, 9))).tolist()) for _ in range(4)]
    failed = dict(upstream("resnet", [1.0, 1.0]), metrics={"error": "Traceback (most recent call last):\n  ...\n"
                                                           "RuntimeError: lowering failed"})
    status, report, _ = compare_json(capsys, write(tmp_path / "a.jsonl", control + [upstream("resnet", [1.0, 1.0])]),
                                     write(tmp_path / "b.jsonl", treatment + [failed]))
    rows = {row["model_name"]: row for row in report["rows"]}
    # The first sample (compilation: 9 s against 1 s) is left out, so the steady state is the same.
    assert rows["alexnet"]["verdict"] == "same" and rows["alexnet"]["control"]["n_samples"] == 36
    assert rows["resnet"]["verdict"] == "new-failure" and "RuntimeError: lowering failed" in rows["resnet"]["note"]
    assert status == 1
    # And upstream's own files, as the other tools read them.
    v100 = os.path.join(GOLDEN, "upstream_v100.jsonl")
    status, report, _ = compare_json(capsys, v100, v100)
    assert status == 0 and report["rows"] and report["counts"].get("slower", 0) == 0


def test_an_unknown_metric_is_bad_usage(tmp_path):
    a = write(tmp_path / "a.jsonl", steady("a", BASE))
    assert "no_such_metric" in one_line_error(call_tool("compare.py", a, a, "--metric=no_such_metric"))


def test_resampled_medians_of_processes_of_different_lengths():
    """The padded, vectorised resample gives each resample the median of its chosen processes' samples."""
    rng = np.random.default_rng(2)
    processes = [rng.random(n) for n in (3, 7, 4)]
    padded, counts = bootstrap.pad(processes)
    chosen_rng = np.random.default_rng(9)
    draws = bootstrap.bootstrap_medians(padded[None], counts[None], 50, np.random.default_rng(9))[0]
    chosen = chosen_rng.integers(0, 3, size=(1, 50, 3))[0]
    expected = [np.median(np.concatenate([processes[i] for i in row])) for row in chosen]
    assert np.allclose(draws, expected)
    # One process: its samples are drawn again (there is nothing else to resample); the median stays inside.
    single = bootstrap.bootstrap_medians(padded[None, :1], counts[None, :1], 200, rng, within=True)[0]
    assert single.min() >= processes[0].min() and single.max() <= processes[0].max() and len(set(single)) > 1


# ---------------------------------------------------------------- output


def test_formats_and_plot(tmp_path, capsys):
    a = write(tmp_path / "a.jsonl", steady("a", BASE) + steady("b", BASE))
    b = write(tmp_path / "b.jsonl", steady("a", BASE * 1.2) + steady("b", BASE))
    _, table, _ = compare(capsys, a, b)
    assert "\x1b[" not in table  # not a terminal: no colour
    lines = table.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("verdict"))
    assert lines[0].startswith("every row: cpu eager eval bs8") and "no noise check recorded" in lines[head - 2]
    assert lines[head].split()[:2] == ["verdict", "config"] and lines[head + 2].startswith("slower")
    assert any(line.startswith("geomean ratio") for line in lines) and lines[-1] == "1 slower, 1 same"
    _, coloured, _ = compare(capsys, a, b, "--color=always")
    assert "\x1b[31m" in coloured
    _, text, _ = compare(capsys, a, b, "--format=csv")
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["verdict"] == "slower" and float(rows[0]["time_ratio"]) == pytest.approx(1.2, rel=0.01)
    assert rows[-1]["model_name"] == "geomean"
    _, md, _ = compare(capsys, a, b, "--format=md")
    assert "\n| verdict |" in md and "| **slower** |" in md
    for name in ("forest.png", "forest.svg"):
        status, _, _ = compare(capsys, a, b, f"--plot={tmp_path / name}", f"--output={tmp_path / 'report.txt'}")
        assert status == 1 and (tmp_path / name).stat().st_size > 1000
    assert "\nverdict" in (tmp_path / "report.txt").read_text()
    with open(tmp_path / "forest.png", "rb") as handle:
        assert handle.read(4) == b"\x89PNG"
    status, _, err = compare(capsys, a, b, f"--plot={tmp_path / 'forest.gif'}")
    assert status == 2 and ".png or .svg" in err


# ---------------------------------------------------------------- bad input


def one_line_error(result) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    good = write(tmp_path / "a.jsonl", steady("a", BASE))
    not_jsonl = tmp_path / "notes.txt"
    not_jsonl.write_text("hello\n")
    assert "no such file" in one_line_error(call_tool("compare.py", good, tmp_path / "missing.jsonl"))
    assert "matches no" in one_line_error(call_tool("compare.py", good, str(tmp_path / "nothing*.jsonl")))
    assert ": no usable record (first problem: line 1: invalid JSON" in one_line_error(call_tool("compare.py", good, not_jsonl))
    assert "--confidence" in one_line_error(call_tool("compare.py", good, good, "--confidence=2"))
    unreadable = tmp_path / "locked.jsonl"
    unreadable.write_text(json.dumps(record()) + "\n")
    unreadable.chmod(0)
    if not os.access(unreadable, os.R_OK):  # root reads anything
        assert "cannot read" in one_line_error(call_tool("compare.py", good, unreadable))


def test_torn_and_bad_lines_are_reported_and_skipped(tmp_path, capsys):
    good = steady("a", BASE)
    path = tmp_path / "b.jsonl"
    write(path, good[:2] + ["{not json", "[1, 2]"] + good[2:])
    with open(path, "a") as handle:
        handle.write('{"model": {"model_name": "a"')  # torn last line
    status, report, err = compare_json(capsys, write(tmp_path / "a.jsonl", good), path)
    assert status == 0 and report["rows"][0]["treatment"]["n_processes"] == 4
    assert "invalid JSON" in err and "not a JSON object" in err and "torn last line" in err


@pytest.mark.process  # what a fresh interpreter imports
def test_help_is_fast_and_imports_no_numpy():
    probe = ("import sys, benchmarks.compare.cli as cli; cli.build_parser(); "
             "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"
    result = call_tool("compare.py", "--help", check_rc=0)
    assert "--fail-on" in result.stdout and "--confidence" in call_tool("compare.py", "--help-all", check_rc=0).stdout


def test_round_zero_keeps_the_fingerprint_records_had_before_rounds():
    old = record()
    del old["round"]
    assert records.record_fingerprint(old) == records.record_fingerprint(record(round_=0))
    assert records.record_fingerprint(record(round_=1)) != records.record_fingerprint(record(round_=0))
    assert records.record_fingerprint(record(round_=1)) != records.record_fingerprint(record(round_=2))


def test_selection_flags_choose_the_records_of_both_sides(tmp_path, capsys):
    # The same flags as aggregate.py's (benchmarks/results/selection.py), applied to each side.
    side = [record(model, dynamo=dynamo, round_=r) for model in ("mlp", "cnn") for dynamo in (None, "inductor")
            for r in range(2)]
    side += [record("mlp", round_=r, test="train") for r in range(2)]
    control, treatment = write(tmp_path / "a.jsonl", side), write(tmp_path / "b.jsonl", side)
    _, report, _ = compare_json(capsys, control, treatment)
    assert len(report["rows"]) == 5
    _, report, _ = compare_json(capsys, control, treatment, "-k", "mlp", "--backend", "inductor", "--test", "inference")
    assert [(r["model_name"], r["experiment"]["dynamo"], r["experiment"]["test"]) for r in report["rows"]] == [
        ("mlp", "inductor", "eval")]
    _, report, _ = compare_json(capsys, control, treatment, "--filter-by-tier", "1", "-x", "cnn", "--test", "training")
    assert [(r["model_name"], r["experiment"]["test"]) for r in report["rows"]] == [("mlp", "train")]  # dummy tier 1
    status, _, err = compare(capsys, control, treatment, "--accelerator", "a100")
    assert status == 1 and "match the selection (--accelerator=a100)" in err and "Traceback" not in err


# ---------------------------------------------------------------- --pair: two axis values of one sweep

def test_pair_compares_two_axis_values_of_one_sweep(tmp_path, capsys):
    # One sweep: m0 is 20% faster under max-autotune, m1 unchanged; eager (no compile mode) is in neither side.
    sweep = (steady("m0", BASE, dynamo="inductor", compile_mode="default")
             + steady("m0", BASE * 0.8, dynamo="inductor", compile_mode="max-autotune")
             + steady("m1", BASE, dynamo="inductor")  # no key: the default mode (an older record)
             + steady("m1", BASE, dynamo="inductor", compile_mode="max-autotune")
             + steady("m0", BASE * 5, compile_mode=None))  # eager records carry a null mode
    path = write(tmp_path / "sweep.jsonl", sweep)
    status, report, _ = compare_json(capsys, path, "--pair", "compile_mode=default:max-autotune", "--fail-on=none")
    assert status == 0 and verdicts_by_model(report) == {"m0": "faster", "m1": "same"}
    assert len(report["rows"]) == 2
    # Any axis, including one this branch does not know (a value of another engineer's axis).
    other = steady("m0", BASE, precision="fp32") + steady("m0", BASE * 2, precision="bf16")
    status, report, _ = compare_json(capsys, write(tmp_path / "p.jsonl", other), "--pair", "precision=fp32:bf16",
                                     "--fail-on=none")
    assert verdicts_by_model(report) == {"m0": "slower"}


@pytest.mark.parametrize("argv, status, message", [
    (["--pair", "compile_mode=default"], 2, "--pair wants AXIS=CONTROL:TREATMENT"),
    (["--pair", "compile_mode=default:default"], 2, "the same value"),
    ([], 2, "name a TREATMENT results file"),
    (["--pair", "compile_mode=default:reduce-overhead"], 1, "has compile_mode=reduce-overhead"),
])
def test_pair_bad_input_is_one_line(tmp_path, capsys, argv, status, message):
    path = write(tmp_path / "sweep.jsonl", steady("m0", BASE, dynamo="inductor"))
    got, _, err = compare(capsys, path, *argv)
    assert got == status and message in err and err.strip().count("\n") == 0 and "Traceback" not in err
