"""A rerun command for every record (#48): a sweep's failing configs carry the command that reruns them alone; the
HTML page, compare's changes and the end-of-sweep list show it; run as shown, it gives a record of the same model
and experiment with the same status, in a directory of its own."""

import html
import json
import re
import shlex
import subprocess
import sys

import pytest

from helpers import ROOT, read_jsonl, run_runner, run_tool

from benchmarks.config import rerun_command
from benchmarks.config.experiment_config import ExperimentConfig

pytestmark = pytest.mark.integration


def as_asked(record: dict) -> ExperimentConfig:
    """The record's experiment as the sweep asked for it (the requested batch size; accelerator_model aside)."""
    experiment = dict(record["experiment"], batch_size=record.get("requested_batch_size"), accelerator_model=None)
    return ExperimentConfig.from_dict(experiment)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """faults raise_on_load (fails to build) and structure_differs (runs; fails --verify under dynamo)."""
    out = tmp_path_factory.mktemp("rerun")
    result = run_runner("--suite-name=faults", "-k", "^(raise_on_load|structure_differs)$", "--accelerator=cpu",
                        "--xla=None", "--dynamo=None", "--dynamo=aot_eager", "--test=eval", "--repeat=1", "--warmup=1",
                        "--verify", f"--output-dirname={out}", check_rc=1)
    return out, read_jsonl(out / "results.jsonl"), result.stdout  # the end-of-sweep summary


def test_every_record_carries_its_rerun_and_the_sweeps_end_names_the_failing_ones(sweep):
    out, found, summary = sweep
    assert len(found) == 4 and all(r["rerun"].startswith(shlex.quote(sys.executable)) for r in found)
    assert "rerun one alone (each record's `rerun` holds its command):" in summary
    failing = [r for r in found if r["status"] != "ok" or r["accuracy"] != "pass"]
    assert {r["rerun"] for r in failing[:3]} <= set(line.strip() for line in summary.splitlines())


def test_the_html_pages_rerun_reproduces_the_failing_configs(sweep, tmp_path):
    out, found, _ = sweep
    page = tmp_path / "report.html"
    run_tool("aggregate.py", str(out), "--accelerator=cpu", "--format=html", f"--output={page}", check_rc=0)
    commands = [html.unescape(c) for c in re.findall(r'<details class="rerun"><summary>rerun</summary><code>(.*?)'
                                                     r"</code></details>", page.read_text())]
    by_command = {r["rerun"]: r for r in found}
    assert len(commands) == 3 and set(commands) <= set(by_command)  # raise_on_load twice, structure_differs' fail
    for command in commands:
        original = by_command[command]
        result = subprocess.run(shlex.split(command), cwd=ROOT, capture_output=True, text=True, timeout=300)
        [again] = read_jsonl(re.search(r"--output-dirname=(\S+)", command).group(1) + "/results.jsonl")
        assert again["model"] == original["model"] and as_asked(again) == as_asked(original), result.stderr
        assert (again["status"], again["accuracy"]) == (original["status"], original["accuracy"])
        assert again["rerun"] and "/rerun/" in again["rerun"]


def test_compare_shows_the_changed_configs_rerun(sweep, tmp_path):
    out, found, _ = sweep
    passing = [dict(r, status="ok", accuracy="pass", metrics={"per_iter_time": [0.001], "total_time": [0.001]},
                    error=None) for r in found]
    (tmp_path / "before").mkdir()
    (tmp_path / "before" / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in passing))
    result = run_tool("compare.py", str(tmp_path / "before"), str(out), "--format=json")
    rows = json.loads(result.stdout)["rows"]
    assert {row["rerun"] for row in rows} == {r["rerun"] for r in found}
    table = run_tool("compare.py", str(tmp_path / "before"), str(out)).stdout
    # the table shows each changed config's rerun short (a sweep of that one config); JSON keeps the exact command
    shorts = {rerun_command.short_rerun(r) for r in found}
    assert "rerun a changed config alone" in table and any(short and short in table for short in shorts), table
