"""compare.py's output on real records (tests/fixtures/selection/axes.jsonl: one tiny sweep of the runner, fp32
against bf16 with --pair): it fits a 120-column terminal, states the axes every row shares once above the table and
each side's recorded noise (the runner's noise check: load average and warnings), gives no slower/faster verdict
from one process a side, prints short reruns, and draws a forest plot whose labels stay inside the figure."""

import json

from helpers import ROOT, call_tool

from benchmarks.compare import report_formats

AXES_FILE = ROOT / "tests" / "fixtures" / "selection" / "axes.jsonl"
PAIR = ("--pair", "precision=fp32:bf16")


def test_the_table_fits_120_columns_and_says_what_every_row_shares_once():
    result = call_tool("compare.py", AXES_FILE, *PAIR, check_rc=0)  # one process a side: no verdict, exit 0
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120, max(lines, key=len)
    assert lines[0].startswith("every row: cpu eval precision=fp32:bf16 dynamic=static speedup=isolated")
    rows = lines[lines.index(next(line for line in lines if line.startswith("verdict"))) + 2:][:8]
    assert len(rows) == 8 and all(row.split()[0] == "unsure" for row in rows)
    assert not any("dynamic=static" in row or "allocator=" in row for row in rows)  # said once, above
    assert sum("channels-last" in row for row in rows) == 4
    assert "[1] 1 process on each side: variation between processes unknown, no verdict; run both with --rounds 3" \
        in lines


def test_each_sides_recorded_noise_is_shown():
    records = [json.loads(line) for line in AXES_FILE.read_text().splitlines()]
    load = records[0]["environment"]["noise"]["load_average"][0]
    result = call_tool("compare.py", AXES_FILE, *PAIR, check_rc=0)
    text = " ".join(result.stdout.split())
    for side in ("control", "treatment"):
        assert f"{side} (1 sweep, 8 records): load average {load:.2f} at the start, 2 core(s); the runner warned of " \
               f"noise on 8 of 8: load average {load:.2f} on 2 core(s)" in text
    noise = json.loads(call_tool("compare.py", AXES_FILE, *PAIR, "--format=json", check_rc=0).stdout)["noise"]
    assert noise["control"]["load_average"] == [load, load] and noise["treatment"]["records_warned"] == 8


def test_a_rerun_hint_is_the_flags_of_one_config(tmp_path):
    """A changed config's rerun: the runner's flags of a sweep of that config, not its JSON (~860 characters)."""
    records = [json.loads(line) for line in AXES_FILE.read_text().splitlines()]
    slow = [dict(r, metrics={**r["metrics"], "per_iter_time": [t * 3 for t in r["metrics"]["per_iter_time"]]},
                 round=n) for n in (0, 1, 2) for r in records if r["model"]["model_name"] == "cnn"]
    base = [dict(r, round=n) for n in (0, 1, 2) for r in records if r["model"]["model_name"] == "cnn"]
    for name, found in (("a.jsonl", base), ("b.jsonl", slow)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in found))
    result = call_tool("compare.py", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--precision=bf16",
                       "--channels-last=on", "--backend=aot_eager[channels-last,bf16]")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    command = lines[lines.index(next(line for line in lines if line.startswith("rerun a changed"))) + 2].strip()
    assert command.startswith("experiment_runner.py --suite-name=dummy '--filter=^(?-i:cnn)$' --accelerator=cpu")
    assert "--dynamo=aot_eager" in command and "--channels-last" in command and "--precision=bf16" in command
    assert "--experiment-config" not in command and len(command) < 300
    exact = json.loads(call_tool("compare.py", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--precision=bf16",
                                 "--channels-last=on", "--backend=aot_eager[channels-last,bf16]",
                                 "--format=json").stdout)["rows"][0]["rerun"]
    assert "--experiment-config=" in exact  # the exact command stays in the machine-readable formats


def test_a_switch_axis_pairs_by_its_on_off_words():
    for words in ("off:on", "False:True", "false:true"):
        report = json.loads(call_tool("compare.py", AXES_FILE, "--pair", f"channels_last={words}", "--format=json",
                                      check_rc=0).stdout)
        assert len(report["rows"]) == 8 and all(row["control"]["n_processes"] == 1 for row in report["rows"]), words


def test_the_forest_plots_labels_stay_inside_the_figure(tmp_path):
    from benchmarks.compare import comparison, matching

    found = matching.read_side([str(AXES_FILE)], "control")
    split = matching.parse_axis_pair("precision=fp32:bf16").split(found)
    report = comparison.compare(matching.pair(split[0], split[1]), comparison.Settings(), (found, found))
    figure = report_formats.forest_figure(report)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    inside = figure.bbox
    labels = [label for label in figure.axes[0].get_yticklabels() if label.get_text()]
    assert len(labels) == 9  # 8 configs and the geomean
    for artist in labels + [figure.axes[0].title]:
        box = artist.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= inside.x1 and box.y0 >= 0 and box.y1 <= inside.y1, artist.get_text()
    assert all(len(label.get_text()) < 60 for label in labels)
