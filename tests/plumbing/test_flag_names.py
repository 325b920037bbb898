"""One way for flags in every tool (plumbing/cli_support.Parser): a mistyped flag name is one line naming the close
ones, exit 2, as a mistyped value is; --help shows the common flags and says how many more --help-all shows;
--help-all shows every one."""

import re

import pytest

from helpers import call_tool

# (tool and subcommand, a mistyped flag, the flag it should suggest)
MISTYPED = [
    (["experiment_runner.py"], "--compil-mode=max-autotune", "--compile-mode"),
    (["result_analyzer.py"], "--formatt=csv", "--format"),
    (["aggregate.py", "output/"], "--compil-mode=max-autotune", "--compile-mode"),
    (["compare.py", "a", "b"], "--tresholdd=5%", "--threshold"),
    (["history.py", "detect"], "--compil-mode=max-autotune", "--compile-mode"),
    (["history.py", "site", "-o", "site"], "--windw=3", "--window"),
]


@pytest.mark.parametrize("words, mistyped, meant", MISTYPED, ids=[" ".join(m[0][:2]) for m in MISTYPED])
def test_a_mistyped_flag_gets_its_close_matches_in_one_line(words, mistyped, meant):
    result = call_tool(words[0], *words[1:], mistyped)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    name = mistyped.split("=")[0]
    assert f"unknown flag {name}; did you mean" in lines[0] and meant in lines[0], lines[0]


def test_a_word_far_from_every_flag_says_so():
    result = call_tool("compare.py", "a", "b", "--zzzzqqq")
    assert result.returncode == 2
    assert result.stderr.strip() == "compare.py: error: unknown flag --zzzzqqq; no flag is close (--help-all lists them)"


# (tool and subcommand, a flag --help leaves to --help-all)
DETAIL = [
    (["experiment_runner.py"], "--dump-pytorch-profiles"),
    (["result_analyzer.py"], "--reader"),
    (["aggregate.py"], "--channels-last"),
    (["compare.py"], "--resamples"),
    (["history.py", "detect"], "--permutations"),
    (["history.py", "show"], "--allocator"),
]


@pytest.mark.parametrize("words, detail", DETAIL, ids=[" ".join(d[0]) for d in DETAIL])
def test_help_is_brief_and_help_all_shows_every_flag(words, detail):
    brief = call_tool(*words, "--help", check_rc=0).stdout
    everything = call_tool(*words, "--help-all", check_rc=0).stdout
    described = re.compile(rf"^\s+{re.escape(detail)}\b", re.M)  # the flag's own help entry
    assert not described.search(brief) and described.search(everything)
    assert "--help-all" in brief and "more flags" in brief
    assert len(everything) > len(brief)


def test_history_names_help_all_too():
    assert "--help-all" in call_tool("history.py", "--help", check_rc=0).stdout
