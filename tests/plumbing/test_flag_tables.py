"""One form of flags for all five tools (#62): each declares its flags as a table of config/flags.Flag, and from
the table come a brief --help, a whole --help-all, the one-line close match for a mistyped flag, and the axis
selection flags (made once from config/axes.py), which select. The real tools as subprocesses."""

import ast
import json
import re
import subprocess
import sys

import pytest

from helpers import ROOT, RUN1, call_tool, hand_record

from benchmarks.aggregate import cli as aggregate_cli
from benchmarks.analyzer import cli as analyzer_cli
from benchmarks.compare import cli as compare_cli
from benchmarks.config import axes
from benchmarks.config.run_options import BRIEF as RUNNER_BRIEF
from benchmarks.config.run_options import declared_flags as runner_flags
from benchmarks.history import bisect_cli
from benchmarks.history import cli as history_cli
from benchmarks.results import selection
from benchmarks.suites import all_suites


def runner_table() -> list:
    return runner_flags() + [flag for suite in all_suites() for flag in suite.flags]


# (the command, its declared table, the flags its --help shows)
TOOLS = [
    (["experiment_runner.py"], runner_table, set(RUNNER_BRIEF)),
    (["result_analyzer.py"], analyzer_cli.declared_flags, analyzer_cli.BRIEF),
    (["aggregate.py"], aggregate_cli.declared_flags, aggregate_cli.BRIEF),
    (["compare.py"], compare_cli.declared_flags, compare_cli.BRIEF),
    (["history.py", "show"], history_cli.show_flags, history_cli.SERIES_BRIEF),
    (["history.py", "detect"], history_cli.detect_flags, history_cli.SERIES_BRIEF | {"--metric", "--fail-on"}),
]
IDS = [" ".join(words) for words, _, _ in TOOLS]


def entry(name: str) -> re.Pattern:
    """A flag's own help entry (its line in a section), not a mention in another flag's help."""
    return re.compile(rf"^\s+(-\w [^,\n]*, )?{re.escape(name)}\b", re.M)


@pytest.mark.parametrize("words, table, brief", TOOLS, ids=IDS)
def test_help_is_brief_and_lists_the_common_flags(words, table, brief):
    shown = call_tool(*words, "--help", check_rc=0).stdout
    everything = call_tool(*words, "--help-all", check_rc=0).stdout
    assert len(shown) < len(everything)
    for name in brief:
        assert entry(name).search(shown), name
    left = [flag.name for flag in table() if not flag.hidden and not flag.positional and flag.name not in brief]
    assert left and not any(entry(name).search(shown) for name in left)
    assert "--help-all" in shown


@pytest.mark.parametrize("words, table, brief", TOOLS, ids=IDS)
def test_help_all_lists_every_declared_flag(words, table, brief):
    everything = call_tool(*words, "--help-all", check_rc=0).stdout
    declared = [flag for flag in table() if not flag.hidden]
    missing = [flag.name for flag in declared if not flag.positional and not entry(flag.name).search(everything)]
    assert declared and not missing, missing
    for flag in table():
        if flag.hidden:  # upstream's ignored flag: parses, never shown
            assert flag.name not in everything


def test_history_s_other_subcommands_show_every_flag_of_their_table():
    for command, table in (("ingest", history_cli.ingest_flags), ("site", history_cli.site_flags),
                           ("bisect", bisect_cli.flags)):
        everything = call_tool("history.py", command, "--help-all", check_rc=0).stdout
        assert all(entry(flag.name).search(everything) for flag in table() if not flag.positional), command


# (the command, a mistyped flag, the flag it should suggest): every tool, a flag of its own table
MISTYPED = [
    (["experiment_runner.py"], "--warmpu=2", "--warmup"),
    (["result_analyzer.py"], "--databse=db.csv", "--database"),
    (["aggregate.py", "x.jsonl"], "--estimatr=mean", "--estimator"),
    (["compare.py", "a", "b"], "--resampels=10", "--resamples"),
    (["history.py", "show"], "--permutatons=9", "--permutations"),
    # the required argument missing too: the mistyped flag is named, not the missing FILE or COMMAND
    (["aggregate.py"], "--estimatr=mean", "--estimator"),
    (["history.py"], "--permutatons=9", "--permutations"),
    (["history.py", "bisect"], "--rpo=x", "--repo"),
    # the axis flags, made once for every tool that selects
    (["result_analyzer.py"], "--dynamoo=inductor", "--dynamo"),
    (["aggregate.py", "x.jsonl"], "--dinamo=inductor", "--dynamo"),
    (["compare.py", "a", "b"], "--precisoin=bf16", "--precision"),
    (["history.py", "detect"], "--channel-last=on", "--channels-last"),
]


@pytest.mark.parametrize("words, mistyped, meant", MISTYPED, ids=[" ".join(m[0]) for m in MISTYPED])
def test_a_mistyped_flag_is_one_line_with_its_close_match(words, mistyped, meant):
    result = call_tool(*words, mistyped)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(words[0]), line  # history.py, or its subcommand ("history.py bisect")
    assert f": error: unknown flag {mistyped.split('=')[0]}; " in line, line
    assert re.search(rf"did you mean (one of )?{re.escape(meant)}[,?]", line), line  # the closest named first


def test_the_axis_flags_are_made_from_the_axis_table_in_one_place():
    made = [flag.name for flag in selection.axis_flags("which records")]
    # upstream's swept keys (the runner's --xla, --dynamo), then every axis of ours
    assert made == ["--xla", "--dynamo"] + [axis.flag for axis in axes.AXES]
    for table in (aggregate_cli.declared_flags(), compare_cli.declared_flags(), history_cli.show_flags(),
                  history_cli.detect_flags(), analyzer_cli.declared_flags()):
        names = [flag.name for flag in table]
        assert all(name in names for name in made)


def test_no_tool_writes_its_parser_by_hand():
    """The tools' parsers come from their tables: no add_argument in their command-line modules."""
    modules = ["benchmarks/aggregate/cli.py", "benchmarks/compare/cli.py", "benchmarks/analyzer/cli.py",
               "benchmarks/history/cli.py", "benchmarks/history/bisect_cli.py", "benchmarks/results/selection.py",
               "benchmarks/runner/cli.py", "benchmarks/config/run_options.py"]
    for module in modules:
        calls = [node for node in ast.walk(ast.parse((ROOT / module).read_text()))
                 if isinstance(node, ast.Attribute) and node.attr == "add_argument"]
        assert not calls, module


def test_one_help_mechanism_for_all_five_tools():
    """The runner's --help-all is cli_support.Parser's, as every tool's: no second parser built to print it."""
    from benchmarks.config import run_options
    from benchmarks.plumbing import cli_support

    assert not hasattr(run_options, "HelpAll")
    parser = run_options.build_parser(all_suites())
    assert isinstance(parser, cli_support.Parser) and parser.brief.keys() == RUNNER_BRIEF.keys()
    brief, everything = parser.format_help(), parser.format_help(everything=True)
    # BRIEF's shorter text in --help, the flag's whole help in --help-all
    assert "a pattern that matches no model is an error naming the close ones" in " ".join(brief.split())
    assert "a pattern that matches no model" not in " ".join(everything.split())
    hidden = [flag for flag in runner_table() if not flag.hidden and flag.name not in RUNNER_BRIEF]
    assert f"{len(hidden)} more flags (diagnostics, golden, noise control, Ray, single config, each suite's own " \
           "...): --help-all" in " ".join(brief.split())
    for text in (brief, everything):
        assert text.startswith("usage: experiment_runner.py") and "examples:" in text and "exit status:" in text


@pytest.mark.parametrize("option", ["--help", "--help-all"])
def test_the_runner_s_help_shows_the_suites_and_every_choice(option):
    """--help once showed `--suite-name SUITE_NAME` (and `--accelerator ACCELERATOR`): the sweep-file pass's parser,
    whose choices are stripped, answered --help before the real one."""
    shown = call_tool("experiment_runner.py", option, check_rc=0).stdout
    names = [suite.name for suite in all_suites()]
    assert re.search(r"^  --suite-name \{" + ",".join(names) + r"\}$", shown, re.M), shown[:2000]
    assert re.search(r"^  --accelerator \{cpu,cuda,tpu\}$", shown, re.M)
    assert re.search(r"^  --test \{eval,train\}", shown, re.M)
    assert "SUITE_NAME" not in shown and "ACCELERATOR" not in shown


@pytest.mark.parametrize("words", [["experiment_runner.py"], ["result_analyzer.py"], ["aggregate.py"],
                                   ["compare.py"], ["history.py", "detect"]], ids=lambda words: words[0])
def test_help_loads_neither_torch_nor_pandas(words):
    result = subprocess.run([sys.executable, "-X", "importtime", str(ROOT / words[0]), *words[1:], "--help"],
                            capture_output=True, text=True, cwd=ROOT, check=True)
    heavy = [line for line in result.stderr.splitlines() if re.search(r"\| +(torch|pandas)$", line)]
    assert "--help-all" in result.stdout and not heavy, heavy


# ---------------------------------------------------------------- the axis flags select

def records(tmp_path) -> str:
    """Eager, Inductor and Inductor at max-autotune of two models in one run: records as the dashboard's tests
    write them (helpers.hand_record)."""
    found = []
    for model in ("mlp", "cnn"):
        found += [hand_record(model, None, RUN1, 1.0, 1.0, 1e6),
                  hand_record(model, "inductor", RUN1, 0.5, 3.0, 1e6),
                  hand_record(model, "inductor", RUN1, 0.25, 9.0, 1e6, compile_mode="max-autotune")]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in found))
    return str(path)


def backend_columns(csv_text: str) -> list:
    header = csv_text.splitlines()[0].lstrip("# ").split(",")
    return [re.match(r"Speedup\((.*)/", cell).group(1) for cell in header if cell.startswith("Speedup(")]


def test_aggregate_s_axis_flag_reports_only_the_selected_rows(tmp_path):
    path = records(tmp_path)
    every = call_tool("aggregate.py", path, "--format=csv", check_rc=0).stdout
    assert backend_columns(every) == ["Eager", "Inductor", "Inductor[max-autotune]"]
    # the baseline stays eager: max-autotune's speedup is over eager (4.0), as in the whole report, not over itself
    chosen = call_tool("aggregate.py", path, "--format=csv", "--compile-mode=max-autotune", check_rc=0).stdout
    assert backend_columns(chosen) == ["Eager", "Inductor[max-autotune]"]
    assert [line.split(",")[3] for line in chosen.splitlines()[1:]] == ["4.0"]
    inductor = call_tool("aggregate.py", path, "--format=csv", "--dynamo=inductor", check_rc=0).stdout
    assert backend_columns(inductor) == ["Eager", "Inductor", "Inductor[max-autotune]"]
    assert [line.split(",")[3:6:2] for line in inductor.splitlines()[1:]] == [["2.0", "4.0"]]
    # a record without the key ran the default mode: eager's and Inductor's records are kept
    default = call_tool("aggregate.py", path, "--format=csv", "--compile-mode=default", check_rc=0).stdout
    assert backend_columns(default) == ["Eager", "Inductor"]
    assert [line.split(",")[3] for line in default.splitlines()[1:]] == ["2.0"]  # Inductor's speedup over eager


def test_compare_s_axis_flag_selects_on_both_sides(tmp_path):
    path = records(tmp_path)
    result = call_tool("compare.py", path, path, "--format=json", "--compile-mode=max-autotune", check_rc=0)
    report = json.loads(result.stdout)
    modes = [(row["model_name"], row["experiment"]["compile_mode"]) for row in report["rows"]]
    assert sorted(modes) == [("cnn", "max-autotune"), ("mlp", "max-autotune")], modes
