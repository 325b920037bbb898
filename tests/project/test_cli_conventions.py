"""The command-line conventions every tool keeps (docs/command-line.md): --format and -o/--output, the
exit-status paragraph of --help, the exit statuses themselves on real inputs, and the old spellings kept as
hidden aliases. Fast: the real tools as subprocesses, on small files; no child process, no compile."""

import copy
import json
import re

import pytest

from helpers import ROOT, call_tool

from benchmarks.plumbing import cli_support

OURS = ROOT / "tests" / "fixtures" / "analyzer" / "ours.jsonl"
TOOLS = ("result_analyzer.py", "aggregate.py", "compare.py", "history.py")
# The commands that write a report (history.py's through its subcommands).
REPORTERS = [(tool,) for tool in TOOLS if tool != "history.py"] + [("history.py", "show"), ("history.py", "detect")]


def write_jsonl(path, found) -> str:
    path.write_text("".join(json.dumps(item) + "\n" for item in found))
    return str(path)


def first_record() -> dict:
    return json.loads(OURS.read_text().splitlines()[0])  # mlp, eager, ok


def rounds(tmp_path, name: str, factor: float, processes: int = 4) -> str:
    """`processes` rounds of ours.jsonl's eager mlp record, its times scaled by `factor` (a little spread
    between rounds so that the interval is a real one)."""
    found = []
    for round_ in range(processes):
        item = copy.deepcopy(first_record())
        item["round"] = round_
        scale = factor * (1 + 0.002 * round_)
        for key in ("total_time", "per_iter_time"):
            item["metrics"][key] = [value * scale for value in item["metrics"][key]]
        found.append(item)
    return write_jsonl(tmp_path / f"{name}.jsonl", found)


def tool_args(tool: str, tmp_path, inputs: list) -> list:
    """What each tool needs besides its inputs to give an answer (compare: two sides)."""
    if tool == "compare.py":
        return [*inputs, *inputs] if len(inputs) == 1 else inputs
    return inputs


def answer(tool: str, tmp_path, inputs: list, *flags):
    """Run `tool` on `inputs` with `flags`. history.py ingests the inputs into a database, then shows it: a
    failed ingest is the answer."""
    if tool == "history.py":
        db = tmp_path / "history.sqlite"
        ingested = call_tool(tool, "ingest", *inputs, "--db", db)
        return ingested if ingested.returncode else call_tool(tool, "show", "--db", db, *flags)
    return call_tool(tool, *tool_args(tool, tmp_path, inputs), *flags)


def assert_one_line(result, status: int, *fragments) -> str:
    assert result.returncode == status, f"exit {result.returncode}\n{result.stderr}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# ---------------------------------------------------------------- --help


@pytest.mark.parametrize("command", REPORTERS, ids=" ".join)
def test_help_shows_the_shared_flags_and_the_exit_statuses(command):
    tool = command[0]
    result = call_tool(*command, "--help", check_rc=0)
    text = result.stdout
    assert "-o FILE, --output FILE" in text and "--format {" in text
    statuses = text[text.index("\nexit status:\n"):]
    # The same words in every tool (one helper builds them), but what 0 and 1 mean for each.
    shared = cli_support.epilog(ok="OK", bad_news="NEWS").split("\n")
    for line in shared[3:]:
        head = " ".join(line.split()[:4])
        assert head in " ".join(statuses.split()), (head, statuses)
    for status in ("0", "1    bad news: ", "2    bad usage or bad input: ", "3    the tool failed", "130  interrupted"):
        assert f"\n  {status}" in statuses, (status, statuses)
    # Old spellings work (tests below) but --help shows only the new ones.
    assert "--output-format" not in text
    if tool != "aggregate.py":  # aggregate's own --baseline is oldest|latest, as upstream's
        assert not re.search(r"--baseline(?![-\w])", text)
    formats = re.search(r"--format \{([^}]*)\}", text).group(1).split(",")
    assert "tab" not in formats and "markdown" not in formats
    metrics = re.search(r"--metric \{([^}]*)\}", text)
    assert metrics is None or "exec" not in metrics.group(1).split(",")


def test_every_epilog_comes_from_the_one_helper():
    """Every parser's epilog (history.py's and each of its subcommands') is the helper's text (so that the
    paragraphs cannot drift apart)."""
    from benchmarks.aggregate import cli as aggregate_cli
    from benchmarks.analyzer import cli as analyzer_cli
    from benchmarks.compare import cli as compare_cli
    from benchmarks.history import cli as history_cli

    generic = cli_support.epilog(ok="", bad_news="").split("\n")[3:]
    history = history_cli.build_parser()
    subcommands = history._subparsers._group_actions[0].choices
    assert set(subcommands) == {"ingest", "show", "detect", "site", "bisect"}
    from benchmarks.config.run_options import build_parser as runner_parser
    from benchmarks.suites import all_suites

    parsers = [m.build_parser() for m in (analyzer_cli, aggregate_cli, compare_cli)] + [history, *subcommands.values()]
    parsers.append(runner_parser(all_suites()))  # experiment_runner.py
    for parser in parsers:
        lines = parser.epilog.split("\n")
        assert lines[0] == "exit status:" and lines[3:3 + len(generic)] == generic, parser.prog


# ---------------------------------------------------------------- exit statuses


@pytest.mark.parametrize("tool", TOOLS)
def test_a_bad_flag_is_one_line_and_exit_2(tool, tmp_path):
    assert_one_line(answer(tool, tmp_path, [OURS], "--format=xml"), 2, "--format", "xml")
    assert_one_line(answer(tool, tmp_path, [OURS], "--no-such-flag"), 2, "--no-such-flag")


@pytest.mark.parametrize("tool", TOOLS)
def test_a_missing_input_file_is_one_line_and_exit_2(tool, tmp_path):
    missing = tmp_path / "missing.jsonl"
    assert_one_line(answer(tool, tmp_path, [missing]), 2, "no such file", "missing.jsonl")


@pytest.mark.parametrize("tool", TOOLS)
def test_an_invalid_input_file_is_exit_2(tool, tmp_path):
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("{not json\n[]\n")
    result = answer(tool, tmp_path, [garbage], "-o", tmp_path / "out")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("tool", TOOLS)
def test_an_output_that_cannot_be_written_is_one_line_and_exit_2(tool, tmp_path):
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    result = answer(tool, tmp_path, [OURS], "-o", not_a_directory / "report.csv")
    line = assert_one_line(result, 2, "error")
    assert "file" in line


@pytest.mark.parametrize("tool", TOOLS)
def test_an_empty_input_is_nothing_to_report_exit_1(tool, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = answer(tool, tmp_path, [empty], "-o", tmp_path / "out")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "no" in result.stderr.strip().splitlines()[-1]


def test_aggregate_with_nothing_selected_is_exit_1(tmp_path):
    result = call_tool("aggregate.py", OURS, "-k", "no_such_model")
    assert result.returncode == 1 and "match the selection (" in result.stderr, result.stderr


def test_compare_with_no_config_in_common_is_nothing_to_compare_exit_1(tmp_path):
    other = first_record()
    other["model"]["model_name"] = "another"
    result = call_tool("compare.py", OURS, write_jsonl(tmp_path / "other.jsonl", [other]))
    assert_one_line(result, 1, "no config of", "matches one of")


def test_history_with_nothing_selected_is_exit_1(tmp_path):
    result = answer("history.py", tmp_path, [OURS], "-k", "no_such_model")
    assert_one_line(result, 1, "no config in the database matches the selection")


def test_compare_regression_is_exit_1_and_no_change_exit_0(tmp_path):
    control = rounds(tmp_path, "control", 1.0)
    slower = call_tool("compare.py", control, rounds(tmp_path, "slower", 1.5), "--format=csv")
    assert slower.returncode == 1, slower.stderr
    assert slower.stdout.splitlines()[1].startswith("slower,")
    same = call_tool("compare.py", control, rounds(tmp_path, "same", 1.0), "--format=csv")
    assert same.returncode == 0, same.stderr
    assert same.stdout.splitlines()[1].startswith("same,")


@pytest.mark.parametrize("tool", TOOLS)
def test_ok_is_exit_0_and_o_dash_is_stdout(tool, tmp_path):
    result = answer(tool, tmp_path, [OURS], "--format=csv", "-o", "-", "--log-level=warning")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") >= 2 and "," in result.stdout.splitlines()[0]
    assert not (ROOT / "-").exists()


def test_run_main_turns_a_bug_into_one_line_and_exit_3(capsys):
    import logging

    def buggy():
        return {}["missing"]

    assert cli_support.run_main("tool.py", buggy, logging.getLogger("test")) == cli_support.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("tool.py: internal error: KeyError") and err.count("\n") == 1


# ---------------------------------------------------------------- hidden aliases: old spellings still work


def test_analyzer_output_format_is_an_alias_of_format(tmp_path):
    call_tool("result_analyzer.py", OURS, "--format=jsonl", "-o", tmp_path / "new.jsonl", "--timestamp=1", check_rc=0)
    call_tool("result_analyzer.py", OURS, "--output-format=jsonl", "--output", tmp_path / "old.jsonl", "--timestamp=1",
             check_rc=0)
    assert (tmp_path / "new.jsonl").read_text() == (tmp_path / "old.jsonl").read_text()
    assert (tmp_path / "new.jsonl").read_text().startswith("{")


def test_analyzer_baseline_is_an_alias_of_baseline_backend():
    new = call_tool("result_analyzer.py", OURS, "--format=oss-benchmark", "-o", "-", "--baseline-backend=eager",
                   check_rc=0).stdout
    old = call_tool("result_analyzer.py", OURS, "--output-format=oss-benchmark", "--output=-", "--baseline=eager",
                   check_rc=0).stdout
    assert new == old and '"speedup"' in new


def test_aggregate_tab_is_an_alias_of_table():
    new = call_tool("aggregate.py", OURS, "--format=table", check_rc=0).stdout
    assert call_tool("aggregate.py", OURS, "--format=tab", check_rc=0).stdout == new
    assert new != call_tool("aggregate.py", OURS, "--format=csv", check_rc=0).stdout


def test_aggregate_exec_is_an_alias_of_time():
    new = call_tool("aggregate.py", OURS, "--metric=time", check_rc=0).stdout
    assert call_tool("aggregate.py", OURS, "--metric=exec", check_rc=0).stdout == new
    assert call_tool("aggregate.py", OURS, check_rc=0).stdout == new  # time is the default


def test_compare_takes_exec_tab_and_markdown_as_the_other_tools_spell_them(tmp_path):
    control, slower = rounds(tmp_path, "control", 1.0), rounds(tmp_path, "slower", 1.5)
    for new, old in (("--metric=time", "--metric=exec"), ("--format=table", "--format=tab"),
                     ("--format=md", "--format=markdown")):
        expected = call_tool("compare.py", control, slower, new, "--color=never").stdout
        assert call_tool("compare.py", control, slower, old, "--color=never").stdout == expected, old
    assert call_tool("compare.py", control, slower, "-o", tmp_path / "r.md", "--format=md").returncode == 1
    assert "\n| verdict |" in (tmp_path / "r.md").read_text()
