"""One vocabulary, one spelling: the record's statuses and codes are types (results/accuracy_status.py,
results/records.py), compare's and history's words one table (results/change_words.py), and no other module spells one
as a string; a member writes the same JSON as the string it replaced, and equals the plain string a record read back
holds."""

import ast
import json
from pathlib import Path

import orjson
import pytest

from helpers import ROOT, source_nodes

from benchmarks.results.accuracy_status import AccuracyStatus, GoldenStatus
from benchmarks.results.change_words import Word
from benchmarks.results.records import RecordStatus, VerificationCode

ENUMS = (AccuracyStatus, GoldenStatus, RecordStatus, VerificationCode, Word)
# The modules that define them: the only places their values are spelled.
ENUM_MODULES = ("benchmarks/results/accuracy_status.py", "benchmarks/results/records.py")
# Values that are also everyday words (a metrics key "error", a script's own "timeout"): literals of these count only
# where they stand for a status (compared with one, or given to a status key); every other value counts anywhere.
EVERYDAY = {member.value for member in RecordStatus} | {AccuracyStatus.TIMEOUT.value, AccuracyStatus.SKIPPED.value,
                                                        GoldenStatus.SAVED.value}
DISTINCT = {member.value for enum in ENUMS[:-1] for member in enum} - EVERYDAY
# compare's and history's words that no other idea spells (not `accuracy`, a record key; not `same` or `fixed`).
CHANGE_WORDS = {word.value for word in Word if "-" in word.value} | {Word.SLOWER.value, Word.FASTER.value,
                                                                      Word.UNSURE.value}
# The record's keys that hold a status or code, and the names that hold one in code.
STATUS_KEYS = ("status", "accuracy", "verification_code", "verification")
# Scripts with status words of their own (not a record's), or that write records without importing the library.
OWN_WORDS = {
    "scripts/gpu/check.py": "its report's parts are ok, failed or skipped, and a command's end ok or timeout",
    "scripts/gpu/check_machine.py": "the same parts (the packages' part), and a command's end ok or timeout",
    "scripts/parity/report.py": "a harness command ended ok, exit N or timeout",
    "scripts/upkeep/fuzz_scanner.py": "writes records, an invalid status among them, for the C scanner: imports no "
                                      "library",
    "scripts/bench/analyzer.py": "writes a million records for the analyzer it times: imports no library",
    "scripts/bench/overhead.py": "times the runner as a process over its records: imports no library",
}


def _sources(*but: str) -> list:
    """Every Python file of the library, the entry points and the scripts, but `but`."""
    paths = sorted((ROOT / "benchmarks").rglob("*.py")) + sorted(ROOT.glob("*.py"))
    paths += sorted((ROOT / "scripts").rglob("*.py"))
    return [p for p in paths if p.relative_to(ROOT).as_posix() not in but]


def _docstrings(nodes) -> set:
    found = set()
    for node in nodes:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(first.value)
    return found


def _standing_for(node):
    """The string constants that give `node` its value: itself, a collection's elements, a conditional's branches,
    a set or tuple built from a collection."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _standing_for(element)
    elif isinstance(node, ast.Starred):
        yield from _standing_for(node.value)
    elif isinstance(node, ast.IfExp):
        yield from _standing_for(node.body)
        yield from _standing_for(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _standing_for(value)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set",
                                                                                             "tuple") and node.args:
        yield from _standing_for(node.args[0])


def _names_a_status(node) -> bool:
    """Whether an expression reads a status: `x.status`, `status`, `row["accuracy"]`, `r.get("verification_code")`."""
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        name = node.slice.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and node.args and isinstance(node.args[0], ast.Constant):
        name = node.args[0].value
    else:
        return False
    return isinstance(name, str) and (name in STATUS_KEYS or name.endswith(("_status", "_accuracy")))


def spelled_statuses(source: str) -> list:
    """(line, value, where) of each string literal that spells a status or code: a distinct value anywhere but in a
    docstring; an everyday word where it stands for a status (compared with one, a status key's value in a dict,
    a keyword argument or an assignment)."""
    return statuses_spelled_among(tuple(ast.walk(ast.parse(source))))


def statuses_spelled_among(nodes) -> list:
    """spelled_statuses over a parsed file's nodes (helpers.source_nodes)."""
    docstrings = _docstrings(nodes)
    found = [(node.lineno, node.value, "a literal") for node in nodes
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in DISTINCT
             and node not in docstrings]
    for node in nodes:
        given = []
        if isinstance(node, ast.Compare):
            operands = [node.left] + node.comparators
            if any(_names_a_status(operand) for operand in operands):
                given = [(c, "compared with a status") for operand in operands for c in _standing_for(operand)]
        elif isinstance(node, ast.Dict):
            given = [(c, f"the value of {key.value!r}") for key, value in zip(node.keys, node.values)
                     if isinstance(key, ast.Constant) and key.value in STATUS_KEYS for c in _standing_for(value)]
        elif isinstance(node, ast.keyword) and node.arg in STATUS_KEYS:
            given = [(c, f"{node.arg}=") for c in _standing_for(node.value)]
        elif isinstance(node, ast.Assign) and any(_names_a_status(target) for target in node.targets):
            given = [(c, "assigned to a status") for c in _standing_for(node.value)]
        found += [(c.lineno, c.value, where) for c, where in given if c.value in EVERYDAY]
    return sorted(set(found))


def test_no_status_or_code_is_spelled_outside_its_enum_module():
    found = []
    for path in _sources(*ENUM_MODULES):
        name = path.relative_to(ROOT).as_posix()
        if name in OWN_WORDS:
            continue
        found += [f"{name}:{line}: {value!r} ({where})" for line, value, where in
                  statuses_spelled_among(source_nodes(path))]
    assert not found, "spell these with their enum (AccuracyStatus, GoldenStatus, RecordStatus, " \
                      "VerificationCode):\n" + "\n".join(found)


def test_compare_and_history_spell_their_words_only_in_the_one_table():
    found = [f"{path.relative_to(ROOT).as_posix()}:{node.lineno}: {node.value!r}"
             for path in _sources("benchmarks/results/change_words.py")
             for node in source_nodes(path)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in CHANGE_WORDS]
    assert not found, "spell these with results/change_words.Word:\n" + "\n".join(found)


def test_the_tools_lists_are_rows_of_the_one_table():
    from benchmarks.compare import outcomes
    from benchmarks.history import cli as history_cli
    from benchmarks.results import change_words

    assert set(change_words.COMPARE_FAIL_ON) >= set(change_words.COMPARE_DEFAULT_FAIL_ON)
    assert set(change_words.HISTORY_FAIL_ON) >= set(change_words.HISTORY_DEFAULT_FAIL_ON)
    assert outcomes.parse_fail_on("slower,graph-breaks") == (Word.SLOWER, Word.GRAPH_BREAKS)
    assert history_cli.fail_on("slower,accuracy-failure") == (Word.SLOWER, Word.ACCURACY_FAILURE)
    # the words the two tools share mean the same: compare's new-failure is history's new-failure event
    shared = set(change_words.COMPARE_FAIL_ON) & set(change_words.HISTORY_FAIL_ON)
    assert shared == {Word.SLOWER, Word.FASTER, Word.NEW_FAILURE, Word.FIXED, Word.GRAPH_BREAKS}


def test_the_scripts_left_out_still_exist_and_spell_a_status():
    for name in OWN_WORDS:
        source = (ROOT / name).read_text(encoding="utf-8")
        assert any(word in source for word in ('"ok"', '"timeout"', '"FAIL"')), name


@pytest.mark.parametrize("source, spelled", [
    ('if record["accuracy"] == "pass": pass', [(1, "pass")]),
    ('ok = row["status"] == "ok"', [(1, "ok")]),
    ('ok = m.status in ("ok", "skip")', [(1, "ok"), (1, "skip")]),
    ('def f(r):\n    return r.get("status") != "error"', [(2, "error")]),
    ('record = {"status": "timeout", "verification_code": "PASS"}', [(1, "PASS"), (1, "timeout")]),
    ('record.update(status="crash" if bad else "ok")', [(1, "crash"), (1, "ok")]),
    ('record["status"] = "oom"', [(1, "oom")]),
    ('JUDGED = frozenset({"fail_accuracy"})', [(1, "fail_accuracy")]),
    ('def f():\n    return "not_checked"', [(2, "not_checked")]),
    ('log.info("accuracy %s", "pass" if ok else "fail")', [(1, "pass")]),
    ('golden = {"status": "saved"}', [(1, "saved")]),
])
def test_the_guard_finds_a_status_spelled_as_a_string(source, spelled):
    assert [(line, value) for line, value, _ in spelled_statuses(source)] == spelled


@pytest.mark.parametrize("source", [
    '"""A docstring may say pass, fail_accuracy or VERIFIER_SKIPPED."""',
    'if "error" not in metrics: pass',  # upstream's metrics.error: a key, not a status
    'text = metrics.get("error")',
    'chosen = [m for m in names if m != "error"]',
    'problem = "timeout"',  # a word of the script's own
    'kind = "skipped" if row.status == RecordStatus.SKIP else "failed"',  # a report's word, given by the enum
    'counts = {"ok": 0, "failed": 0, "skipped": 0}',
])
def test_the_guard_leaves_other_words_alone(source):
    assert spelled_statuses(source) == []


@pytest.mark.parametrize("enum", ENUMS)
def test_a_member_writes_the_json_of_its_value_and_equals_the_plain_string(enum):
    for member in enum:
        value = member.value
        record = {"status": member, "list": [member], member: 1}
        plain = {"status": value, "list": [value], value: 1}
        assert json.dumps(record) == json.dumps(plain) and json.dumps(record, indent=1) == json.dumps(plain, indent=1)
        assert json.dumps(record, ensure_ascii=False, sort_keys=True) == json.dumps(plain, ensure_ascii=False,
                                                                                   sort_keys=True)
        assert orjson.dumps({"status": member, "list": [member]}) == orjson.dumps({"status": value, "list": [value]})
        assert member == value and value == member and not member != value and hash(member) == hash(value)
        assert {value: 1}[member] == 1 and member in {value} and value in (member,) and enum(value) is member
        assert str(member) == f"{member}" == "%s" % member == value and f"{member:>20}" == f"{value:>20}"
        assert json.loads(json.dumps(record))["status"] == member  # what a reader gets back


def test_the_golden_checks_failures_are_accuracy_statuses():
    from benchmarks.results import accuracy_status

    for status in (GoldenStatus.FAIL_GOLDEN, GoldenStatus.NO_GOLDEN, GoldenStatus.BAD_GOLDEN):
        assert status in accuracy_status.GOLDEN_FAILURES and AccuracyStatus(status.value) in accuracy_status.FAILURES
    assert GoldenStatus.SAVED not in accuracy_status.STATUSES and GoldenStatus.PASS == AccuracyStatus.PASS
