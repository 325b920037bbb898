"""`make soak` (scripts/upkeep/soak.py) kept from rotting: a short run of its local phase (eager only, two faulted
rounds, faults every second or so) reports a clean sweep, and its accounting finds a lost config, a duplicate and a torn
line planted in a real results file."""

import json
import re
import shutil

import pytest

from helpers import PYTHON, read_jsonl, run_tool

from scripts.upkeep import soak

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def soaked(tmp_path_factory):
    out = tmp_path_factory.mktemp("soak")
    result = run_tool("scripts.upkeep.soak", "--iterations=2", "--eager-only", "--phases=local", "--mean-gap=1",
                      "--timeout=10", "--seed=3", f"--output-dir={out}", timeout=900)
    return out, result


def test_a_short_soak_counts_its_faults_and_finds_nothing_lost(soaked):
    out, result = soaked
    assert result.returncode == 0, result.stdout + result.stderr
    text = result.stdout
    rounds, runs = map(int, re.search(r"phase local: (\d+) faulted round\(s\), (\d+) run\(s\)", text).groups())
    assert rounds == 2 and runs >= rounds
    total, by_kind = re.search(r"faults injected: (\d+) \((.*)\)", text).groups()
    kinds = dict((k, int(v)) for k, v in (item.rsplit(" ", 1) for item in by_kind.split(", ")))
    assert int(total) == sum(kinds.values()) and set(kinds) <= {"kill_child", "kill_fork_server", "kill_parent",
                                                                "stop_child_past_timeout"}
    # 2 models x eager x eval/train = 4 configs per round; the run after each killed parent resumes its round.
    assert runs == rounds + kinds.get("kill_parent", 0)
    assert "configs with exactly one final record: 8 of 8" in text
    assert "lost: 0   duplicated: 0   torn lines: 0" in text and "left behind: 0 process(es), 0 scratch" in text
    for index in (1, 2):
        assert len(read_jsonl(out / f"local-{index}" / "results.jsonl")) == 4


def test_the_soaks_accounting_finds_what_is_lost_duplicated_or_torn(soaked, tmp_path):
    out, _ = soaked
    planted = tmp_path / "results.jsonl"
    shutil.copy(out / "local-1" / "results.jsonl", planted)
    lines = planted.read_bytes().splitlines(keepends=True)
    # one config's record gone, another's twice, and half a line
    planted.write_bytes(b"".join(lines[1:]) + lines[1] + lines[2][:40] + b"\n")
    tally = soak.Tally("planted")
    tally.account(str(planted), 4)
    assert (tally.exactly_one, tally.lost, tally.duplicated, tally.torn) == (2, 1, 1, 1)
    assert json.loads(lines[0])  # a whole record, as written
