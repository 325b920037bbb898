"""The same hostile names fed to every tool's every output (issue #61, findings 7, 8 and 10): a model name that is
matplotlib mathtext (`$\\foo$`), terminal escapes (title, screen clear, the clipboard-setting OSC 52) in a model's and
an accelerator's name, and a 200,000-character name. Every text from data goes through one function per medium
(cli_support.shown on a terminal, plot_text.plain_text in a figure, html_style's escaping on a page): each tool ends
well, no escape byte reaches a terminal, and the long name is refused at the door (record check) with its reason."""

import json

import pytest

from helpers import RUN1, call_tool, hand_record

MATHTEXT = "net$\\foo{$x"
ESCAPES = "m\x1b]52;c;cHduZWQ=\x07\x1b]0;PWNED\x07\x1b[2J"
ACCELERATOR = "CPU\x1b]0;PWNED\x07"
LONG = "m" * 200_000


def results(folder, models, accelerator_model="Test CPU"):
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for model in models:
        for dynamo, per_iter in ((None, 0.01), ("aot_eager", 0.008)):
            found = hand_record(model, dynamo, RUN1, per_iter, 0.02, 100)
            found["experiment"]["accelerator_model"] = accelerator_model
            found["environment"] = {"git_commit": "c01", "hostname": "h"}
            rows.append(found)
    path = folder / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def hostile(tmp_path):
    return results(tmp_path / "run", [MATHTEXT, ESCAPES, "plain"], ACCELERATOR)


def no_escape(result):
    assert "\x1b" not in result.stdout and "\x1b" not in result.stderr and "\x07" not in result.stdout


@pytest.mark.parametrize("argv", [["--format=table", "--report=latest_grouped"], ["--list-accelerators"]])
def test_aggregates_table_shows_escapes_as_text(hostile, argv):
    result = call_tool("aggregate.py", hostile, "--accelerator=cpu", *argv, check_rc=0)
    no_escape(result)
    assert "\\x1b" in result.stdout  # the name is there, its escapes shown as text


def test_aggregates_notes_on_stderr_with_csv_show_escapes_as_text(hostile):
    lonely = hand_record(ESCAPES + "-alone", "aot_eager", RUN1, 0.008, 0.5, 100)  # no eager: a note names it
    with open(hostile, "a") as handle:
        handle.write(json.dumps(lonely) + "\n")
    result = call_tool("aggregate.py", hostile, "--accelerator=cpu", "--format=csv", "--report=latest_grouped",
                       check_rc=0)
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "-alone" in result.stderr


@pytest.mark.parametrize("fmt", ["html", "png", "svg"])
def test_aggregates_page_and_figures_take_a_mathtext_name(hostile, tmp_path, fmt):
    out = tmp_path / f"report.{fmt}"
    result = call_tool("aggregate.py", hostile, "--accelerator=cpu", f"--format={fmt}", "-o", out)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 0


def test_compares_table_plot_and_expected_take_every_hostile_name(hostile, tmp_path):
    treatment = results(tmp_path / "other", [MATHTEXT, ESCAPES, "plain"], ACCELERATOR)
    table = call_tool("compare.py", hostile, treatment)
    assert table.returncode in (0, 1), table.stderr
    no_escape(table)
    plot = call_tool("compare.py", hostile, treatment, "--plot", tmp_path / "forest.png", "--format=csv")
    assert plot.returncode in (0, 1) and "Traceback" not in plot.stderr and (tmp_path / "forest.png").stat().st_size
    expected = tmp_path / "expected.csv"
    expected.write_text("model,config,accuracy\n")
    checked = call_tool("compare.py", hostile, "--expected", expected)
    assert checked.returncode == 1, checked.stderr
    no_escape(checked)
    assert "\\x1b]52" in checked.stdout


@pytest.mark.parametrize("fmt", ["table", "png", "html"])
def test_history_takes_every_hostile_name(hostile, tmp_path, fmt):
    db = tmp_path / "h.sqlite"
    no_escape(call_tool("history.py", "ingest", hostile, "--db", db, check_rc=0))
    shown = call_tool("history.py", "show", "--db", db, f"--format={fmt}", "-o", tmp_path / f"show.{fmt}")
    assert shown.returncode == 0, shown.stderr
    no_escape(shown)


@pytest.mark.parametrize("tool", ["aggregate.py", "history.py", "result_analyzer.py"])
def test_a_200000_character_name_is_refused_at_the_door(tmp_path, tool):
    path = results(tmp_path / "run", [LONG, "plain"])
    argv = {"aggregate.py": [path, "--accelerator=cpu", "--format=csv"],
            "history.py": ["ingest", path, "--db", tmp_path / "h.sqlite"],
            "result_analyzer.py": [path, "-o", tmp_path / "report.csv"]}[tool]
    result = call_tool(tool, *argv)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "text of 200000 characters" in result.stderr and LONG not in result.stderr + result.stdout


def test_the_analyzer_reads_back_a_database_row_with_a_long_cell(tmp_path):
    """A database an older version wrote, holding a 200,000-character cell: a later run that adds a column
    realigns its rows and must read that cell back."""
    first = results(tmp_path / "one", ["plain"])
    db = tmp_path / "db.csv"
    call_tool("result_analyzer.py", first, "-o", tmp_path / "o1.csv", f"--database={db}", check_rc=0)
    lines = db.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index("model_name")] = LONG
    db.write_text("\n".join([lines[0], ",".join(cells)] + lines[2:]) + "\n")
    second = results(tmp_path / "two", ["other"])
    found = json.loads(second.read_text().splitlines()[0])
    found["metrics"]["new_metric"] = [1.0, 2.0]  # a new column: every row of the database is realigned
    second.write_text(json.dumps(found) + "\n")
    result = call_tool("result_analyzer.py", second, "-o", tmp_path / "o2.csv", f"--database={db}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert LONG in db.read_text()
