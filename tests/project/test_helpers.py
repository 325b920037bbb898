"""The test tiers (conftest.py): the unit tier calls the tools in process (helpers.call_tool), and what it gets is
what their own process gives; a tool's own process is for the integration tier and for tests marked `process`; a
clone that has not built the compiled reader skips what needs it, with the reason (helpers.NEEDS)."""

import logging
import os
import shutil
import subprocess
from xml.etree import ElementTree

import pytest

from helpers import GOLDEN, PYTHON, ROOT, call_tool, run_tool

FIXTURE = GOLDEN / "upstream_v100.jsonl"


def test_a_unit_test_may_not_start_a_tool_as_a_process():
    with pytest.raises(AssertionError, match="call_tool"):
        run_tool("aggregate.py", "--help")


@pytest.mark.process  # compares the tool's own process with call_tool
def test_in_process_gives_what_the_process_gives():
    for args in (["--accelerator=v100", "--report=latest", "--format=csv", FIXTURE],  # a report: exit 0
                 ["--accelerator=v100", "--no-such-flag", FIXTURE],  # bad usage: one line, exit 2
                 ["--accelerator=tpu", FIXTURE]):  # nothing to report: exit 1
        alone, here = run_tool("aggregate.py", *args), call_tool("aggregate.py", *args)
        assert (here.returncode, here.stdout, here.stderr) == (alone.returncode, alone.stdout, alone.stderr), args


def test_call_tool_puts_back_the_environment_the_directory_and_logging(tmp_path):
    before = (dict(os.environ), os.getcwd(), logging.getLogger().handlers[:], logging.getLogger().level)
    result = call_tool("aggregate.py", "--accelerator=v100", "--log-level=debug", FIXTURE, cwd=tmp_path,
                       env={**os.environ, "PTBENCH_TEST_ONLY": "1"}, check_rc=0)
    assert "Speedup" in result.stdout
    assert (dict(os.environ), os.getcwd(), logging.getLogger().handlers[:], logging.getLogger().level) == before


@pytest.mark.process  # a fresh clone's unit tier: pytest in a copy of the tree that has no compiled reader
def test_a_clone_without_the_compiled_reader_skips_what_needs_it_and_says_why(tmp_path):
    """A clone has no benchmarks/analyzer/_jsonl_scan.c build until `make env` or `pip install -e .`: what needs it
    is skipped, each with the reason and how to build it, and the same tests run with the Python reader."""
    clone = tmp_path / "clone"
    left_out = shutil.ignore_patterns("*.so", "__pycache__", "output", ".pytest_cache")  # as git leaves them out
    for folder in ("benchmarks", "tests", "scripts"):
        shutil.copytree(ROOT / folder, clone / folder, ignore=left_out)
    shutil.copy(ROOT / "pyproject.toml", clone)
    chosen = ["tests/analyzer/test_report_files.py", "tests/analyzer/test_compiled_reader.py",
              "tests/features/test_compile_options.py::test_analyzer_has_a_column_per_compile_key",
              "tests/scripts/test_fuzz_scanner.py::test_the_two_real_readers_agree_on_a_damaged_input"]
    report = tmp_path / "report.xml"
    result = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             f"--junitxml={report}", *chosen], cwd=clone, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    outcomes = {}
    for case in ElementTree.parse(report).iter("testcase"):
        skipped = case.find("skipped")  # its reason: the message, or the text (a whole file skipped)
        outcomes[case.get("name")] = "passed" if len(case) == 0 else (
            f"{skipped.get('message')} {skipped.text}" if skipped is not None
            else ElementTree.tostring(case, encoding="unicode"))
    why = ("the compiled analyzer reader is not built (benchmarks/analyzer/_jsonl_scan.c; `make env` or `pip install "
           "-e .` builds it when a C compiler is installed)")
    compiled = {name: outcome for name, outcome in outcomes.items() if "python" not in name}
    python = {name: outcome for name, outcome in outcomes.items() if "[python]" in name}
    assert len(python) >= 5 and set(python.values()) == {"passed"}, python
    assert "test_compiled_reader" in " ".join(compiled)  # the file of the compiled reader's own tests, skipped whole
    assert len(compiled) == len(python) + 2 and {why in outcome for outcome in compiled.values()} == {True}, compiled
