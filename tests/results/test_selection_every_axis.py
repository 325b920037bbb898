"""Every axis flag selects, in every tool that selects records (aggregate.py, compare.py, history.py and
result_analyzer.py): upstream's --xla and --dynamo and each axis of config/axes.py, each made once from the tables
(results/selection.axis_flags). The records are the runner's own: each config as matrix.expand_experiments makes it
from the runner's parsed flags (an axis flag's example value, the dashboard's profiles settling the others), each
record as records.new_record starts it. A tool given `--AXIS=VALUE` must report exactly what it reports of a file
that holds only the records whose experiment ran VALUE; a value no record ran is one line, exit 1."""

import csv
import io
import json
import re

import pytest

from helpers import RUN1, call_tool

from benchmarks.config import axes, run_options
from benchmarks.results import records, selection
from benchmarks.runner import matrix
from benchmarks.suites import all_suites, load_suite

BASE = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=inductor"]


def flag_word(axis) -> str:
    return selection.flag_word(axis.example)


# (the selection flag and value, the experiment key and the value a record that ran it holds, the runner's flags
# that make such records)
CASES = [("--dynamo=inductor", "dynamo", "inductor", BASE + ["--test=eval"]),
         ("--dynamo=aot_eager", "dynamo", "aot_eager", ["--accelerator=cpu", "--xla=None", "--dynamo=aot_eager",
                                                        "--test=eval"]),
         ("--xla=PJRT", "xla", "PJRT", ["--accelerator=cpu", "--xla=PJRT", "--dynamo=None", "--dynamo=openxla",
                                        "--test=eval"])]
CASES += [(f"{axis.flag}={flag_word(axis)}", axis.key, None,
           BASE + [f"--test={'train' if axis.key == 'train_step' else 'eval'}", f"{axis.flag}={flag_word(axis)}"])
          for axis in axes.AXES]
IDS = [case[0] for case in CASES]


def runner_records(flags: list, first: int) -> list:
    """The records of the configs the runner makes of `flags`, numbered from `first` (their times differ)."""
    options = run_options.build_parser(all_suites()).options(flags)
    found = []
    for number, config in enumerate(matrix.expand_experiments(load_suite("dummy"), options), start=first):
        experiment = config.with_(accelerator_model="Test CPU", batch_size=4).to_dict()
        record = dict(records.new_record({"suite_name": "dummy", "model_name": "mlp"}, experiment, repeat=3,
                                         iterations_per_run=1, warmup=1, timestamp=RUN1, verify=False,
                                         requested_batch_size=None, environment={}))
        seconds = 0.001 * (number + 1)
        record["metrics"] = {"total_time": [seconds] * 3, "per_iter_time": [seconds] * 3, "warmup_time": [4 * seconds]}
        found.append(record)
    return found


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """(the results file, its records): every case's records, each distinct config once."""
    found = {}
    for _, _, _, flags in CASES:
        for record in runner_records(flags, len(found)):
            found.setdefault(json.dumps(record["experiment"], sort_keys=True), record)
    path = tmp_path_factory.mktemp("sweep") / "results.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in found.values()))
    return path, list(found.values())


def ran(case, made: list) -> object:
    """The value a record made by the case's flags holds for its key (the example axis value as the runner wrote
    it: a switch's True, a profile's text)."""
    _, key, value, flags = case
    if value is not None:
        return value
    values = {json.dumps(record["experiment"].get(key)) for record in runner_records(flags, 0)}
    values.discard(json.dumps(axes.BY_KEY[key].unset))
    values.discard("null")
    assert len(values) == 1, values
    return json.loads(values.pop())


def write(path, chosen: list):
    path.write_text("".join(json.dumps(record) + "\n" for record in chosen))
    return path


def speedups_by_backend(csv_text: str) -> dict:
    """{backend: its speedup column}, in the report's order, of aggregate.py's --format=csv (the column named
    `Speedup(BACKEND/baseline)`)."""
    header, *rows = csv.reader(io.StringIO(csv_text.lstrip("# ")))
    return {re.match(r"Speedup\((.*?)/", cell).group(1): [row[i] for row in rows]
            for i, cell in enumerate(header) if cell.startswith("Speedup(")}


def history_rows(tmp_path, name: str, results, *flags) -> list:
    db = tmp_path / f"{name}.sqlite"
    call_tool("history.py", "ingest", results, "--db", db, check_rc=0)
    result = call_tool("history.py", "show", "--db", db, "--format=csv", *flags, check_rc=0)
    return sorted(map(tuple, csv.reader(io.StringIO(result.stdout))))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_axis_flag_reports_only_the_records_that_ran_its_value(case, sweep, tmp_path):
    path, every = sweep
    flag, key = case[0], case[1]
    value = ran(case, every)
    expected = [record for record in every if record["experiment"].get(key) == value]
    assert 0 < len(expected) < len(every), (flag, len(expected))  # it selects, and leaves some out
    only = write(tmp_path / "only.jsonl", expected)

    # aggregate.py: the columns of the backends that ran the value (and the baseline's, where only torch.compile's
    # own axes left it out), each figure the whole report's: a speedup over the same baseline, never over itself
    aggregate = ["--report=latest", "--format=csv", "--test=" + ("training" if key == "train_step" else "inference")]
    full = speedups_by_backend(call_tool("aggregate.py", path, *aggregate, check_rc=0).stdout)
    chosen = speedups_by_backend(call_tool("aggregate.py", path, *aggregate, flag, check_rc=0).stdout)
    alone = speedups_by_backend(call_tool("aggregate.py", only, *aggregate, check_rc=0).stdout)
    assert set(alone) <= set(chosen) <= set(alone) | {next(iter(full))}, (flag, list(chosen), list(alone))
    assert chosen == {backend: full[backend] for backend in chosen}
    assert any(value not in ("", "1.0") for values in chosen.values() for value in values) or len(chosen) == 1

    # compare.py: the same rows, the same figures
    rows = json.loads(call_tool("compare.py", path, path, "--format=json", flag, check_rc=0).stdout)["rows"]
    alone = json.loads(call_tool("compare.py", only, only, "--format=json", check_rc=0).stdout)["rows"]
    assert rows == alone and len(rows) == len(expected)
    assert all(row["experiment"].get(key) == value for row in rows)

    # result_analyzer.py: a row per selected record, the very rows it writes for them alone
    report = call_tool("result_analyzer.py", path, "-o", "-", flag, "--log-level=warning", check_rc=0).stdout
    assert report == call_tool("result_analyzer.py", only, "-o", "-", "--log-level=warning", check_rc=0).stdout
    assert len(list(csv.DictReader(io.StringIO(report)))) == len(expected)

    # history.py: the same configs and series
    assert history_rows(tmp_path, "all", path, flag) == history_rows(tmp_path, "only", only)


@pytest.mark.parametrize("tool", ["aggregate.py", "compare.py", "result_analyzer.py", "history.py"])
def test_a_value_no_record_ran_is_one_line_and_exit_1(tool, sweep, tmp_path):
    path, _ = sweep
    args = {"aggregate.py": [path], "compare.py": [path, path], "result_analyzer.py": [path, "-o", "-"],
            "history.py": ["show", "--db", tmp_path / "h.sqlite"]}[tool]
    if tool == "history.py":
        call_tool("history.py", "ingest", path, "--db", tmp_path / "h.sqlite", check_rc=0)
    result = call_tool(tool, *args, "--dynamo=tvm", "--log-level=warning")
    assert result.returncode == 1 and result.stdout == "", (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(r"match(es)? the selection \(--dynamo=tvm\)", lines[0]), lines


def test_dynamo_s_none_and_eager_select_the_eager_records(sweep, tmp_path):
    path, every = sweep
    eager = [record for record in every if record["experiment"]["dynamo"] is None]
    assert 0 < len(eager) < len(every)
    for word in ("None", "eager"):
        rows = json.loads(call_tool("compare.py", path, path, "--format=json", f"--dynamo={word}",
                                    check_rc=0).stdout)["rows"]
        assert len(rows) == len(eager) and all(row["experiment"]["dynamo"] is None for row in rows)


def test_the_cases_cover_every_axis_flag():
    assert {case[1] for case in CASES} == set(selection.SELECTED_AXES)
