"""The README's promises: its quickstart commands run as written and write what it says they write, every
relative link in README.md and docs/*.md points at a file (and heading) that exists, and it stays within 200 lines."""

import csv
import json
import re
import shlex
import subprocess
import sys

import pytest

from helpers import ROOT, read_jsonl

QUICKSTART_MARK = "<!-- quickstart:"
TOOLS = ("experiment_runner.py", "result_analyzer.py", "aggregate.py", "compare.py")


def quickstart_commands() -> list:
    """The commands of the fenced block after the README's quickstart mark, each as an argv list."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert QUICKSTART_MARK in text, "README.md lost its quickstart mark"
    block = re.search(r"```\w*\n(.*?)```", text[text.index(QUICKSTART_MARK):], re.S).group(1)
    joined = re.sub(r"\\\n", " ", block)  # continuation lines
    lines = [line.strip() for line in joined.splitlines()]
    return [shlex.split(line) for line in lines if line and not line.startswith("#")]


def as_run_here(argv: list) -> list:
    """`.venv/bin/python tool.py ...` from the repository, run with this interpreter (the tests' venv)."""
    assert argv[0] == ".venv/bin/python" and argv[1] in TOOLS, f"not a quickstart command: {argv}"
    return [sys.executable, str(ROOT / argv[1]), *argv[2:]]


def flag(argv: list, name: str) -> str:
    return next(arg.split("=", 1)[1] for arg in argv if arg.startswith(name + "="))


def test_quickstart_block_is_the_documented_flow():
    tools = [argv[1] for argv in quickstart_commands()]
    assert tools == ["experiment_runner.py", "result_analyzer.py", "aggregate.py", "aggregate.py",
                     "experiment_runner.py", "compare.py"], tools


def test_the_quickstarts_per_model_grid_has_one_row_per_model(tmp_path):
    """Step 3's grid, run as written on a real sweep's records (tests/fixtures/reads: 7 models, one run): a row per
    model and the geomean, not one per run."""
    grid = quickstart_commands()[2]
    assert grid[2] == "runs/base", grid
    argv = as_run_here(grid)
    argv[2] = str(ROOT / "tests" / "fixtures" / "reads" / "faults_verified.jsonl")
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    body = lines[next(i for i, line in enumerate(lines) if line.startswith("+=")):]  # below the header
    names = [line.split("|")[1].strip() for line in body if line.startswith("| ")]
    models = ["drifts_when_armed", "falls_back_to_eager", "graph_break", "mask_differs_a_lot", "mixed_dtypes",
              "segfault", "structure_differs"]
    assert [name for name in names if name] == models + ["GEOMEAN"], result.stdout


@pytest.mark.integration
def test_quickstart_runs_as_documented(tmp_path):
    sweep, analyze, grid, page, sweep_again, compare = quickstart_commands()

    def run(argv):
        result = subprocess.run(as_run_here(argv), cwd=tmp_path, capture_output=True, text=True, timeout=900)
        return result, f"{' '.join(argv)}\nexit {result.returncode}\nSTDOUT:\n{result.stdout}\nSTDERR:\n{result.stderr}"

    # 1. the sweep: one ok record per config in <dir>/results.jsonl, a log per child in <dir>/logs/
    result, why = run(sweep)
    assert result.returncode == 0, why
    base = tmp_path / flag(sweep, "--output-dirname")
    records = read_jsonl(base / "results.jsonl")
    configs = {(r["model"]["model_name"], r["experiment"]["dynamo"]) for r in records}
    assert configs == {(m, d) for m in ("mlp", "cnn", "multi_output") for d in (None, "aot_eager")}, why
    assert all(r["status"] == "ok" and len(r["metrics"]["per_iter_time"]) == 2 for r in records), why
    assert len(list((base / "logs").glob("*/*.log"))) == len(records)  # logs/<model>/<config>.log (the fork server's is beside)

    # 2. the analyzer: <dir>/metric_report.csv, one row per record
    result, why = run(analyze)
    assert result.returncode == 0, why
    with open(base / "metric_report.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted((r["model_name"], r["dynamo"]) for r in rows) == sorted((m, d or "") for m, d in configs), rows

    # 3. aggregate: the grid names both backends; the page is one HTML file where the README says
    result, why = run(grid)
    assert result.returncode == 0, why
    assert "aot_eager" in result.stdout and "Eager" in result.stdout, why
    result, why = run(page)
    assert result.returncode == 0, why
    html = (tmp_path / flag(page, "--output")).read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "aot_eager" in html

    # 4. the same sweep again, then compare: the same code, one process a side: no slower/faster verdict (issue 60:
    # on a busy machine this had printed `2 slower, 3 unsure, 1 faster` and exit 1), each side's noise shown
    result, why = run(sweep_again)
    assert result.returncode == 0, why
    assert len(read_jsonl(tmp_path / flag(sweep_again, "--output-dirname") / "results.jsonl")) == len(records)
    result, why = run(compare)
    lines = result.stdout.splitlines()
    head = next((i for i, line in enumerate(lines) if line.startswith("verdict")), None)
    assert head is not None and lines[0].startswith("every row: cpu"), why
    assert any(line.startswith("control (1 sweep") for line in lines[:head]), why
    verdicts = [line.split()[0] for line in lines[head + 2:head + 2 + len(records)]]
    assert len(verdicts) == len(records) and set(verdicts) == {"unsure"}, why
    table = lines[:next((i for i, line in enumerate(lines) if line.startswith("rerun a changed")), len(lines))]
    assert result.returncode == 0 and max(map(len, table)) <= 120, why  # a rerun command is one line to paste
    # the same comparison as JSON agrees with the table
    as_json = subprocess.run(as_run_here(compare) + ["--format=json"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=300)
    assert sorted(row["verdict"] for row in json.loads(as_json.stdout)["rows"]) == sorted(verdicts)


# --- links ---

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path) -> set:
    text = FENCED.sub("", path.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*)$", text, re.M)}


def documents() -> list:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_stays_within_200_lines():
    """The README is the front page: details belong in docs/ (the developers' guide keeps it to 200 lines)."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 200, f"README.md has {lines} lines: move details into docs/"


def test_the_guides_the_readme_promises_exist():
    for name in ("runner", "parallel", "analyzer", "aggregate", "compare", "command-line", "architecture"):
        assert (ROOT / "docs" / f"{name}.md").is_file(), name


@pytest.mark.parametrize("document", documents(), ids=lambda p: p.name)
def test_relative_links_point_at_existing_files_and_headings(document):
    text = FENCED.sub("", document.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto: are not ours to check
            continue
        path, _, anchor = target.partition("#")
        resolved = (document.parent / path).resolve() if path else document
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    assert not broken, f"{document.name}: " + "; ".join(broken)


def test_slug_follows_github():
    assert slug("compare.py") == "comparepy"
    assert slug("Speed: the compiled reader") == "speed-the-compiled-reader"
    assert slug("Quantization (`--quantization RECIPE`, TorchAO)") == "quantization---quantization-recipe-torchao"
