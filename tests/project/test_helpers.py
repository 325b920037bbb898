"""The test tiers (conftest.py): the unit tier calls the tools in process (helpers.call_tool), and what it gets is
what their own process gives; a tool's own process is for the integration tier and for tests marked `process`."""

import logging
import os

import pytest

from helpers import GOLDEN, call_tool, run_tool

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
