"""plumbing/environment_variables.py: variables set for a block (None: unset) and put back as they were, whatever
the block did to them, on an exception too."""

import os

import pytest

from benchmarks.plumbing import environment_variables

SET, UNSET = "PTBENCH_TEST_SET", "PTBENCH_TEST_UNSET"


@pytest.fixture
def variables(monkeypatch):
    monkeypatch.setenv(SET, "before")
    monkeypatch.delenv(UNSET, raising=False)


def test_a_block_sees_the_values_and_leaves_every_variable_as_it_was(variables):
    with environment_variables.changed({SET: None, UNSET: "during"}):
        assert SET not in os.environ and os.environ[UNSET] == "during"
        os.environ[SET] = "set by the block"  # as Inductor sets its cache variable when it finds none
    assert os.environ[SET] == "before" and UNSET not in os.environ


def test_an_exception_in_the_block_puts_them_back_too(variables):
    with pytest.raises(RuntimeError), environment_variables.changed({SET: "during", UNSET: "during"}):
        raise RuntimeError("boom")
    assert os.environ[SET] == "before" and UNSET not in os.environ


def test_apply_sets_and_unsets(variables):
    environment_variables.apply({SET: None, UNSET: "now"})
    assert SET not in os.environ and os.environ[UNSET] == "now"
    environment_variables.apply({UNSET: None})
    assert UNSET not in os.environ
