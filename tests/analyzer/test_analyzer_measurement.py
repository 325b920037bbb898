"""The analyzer's columnar fast path (range_reader.py, rows.py, the compiled reader) keeps its own vectorised
statistics; on every golden and fuzz-corpus file they are the numbers of the records' Measurement view:
each metric's statistics, the per-iteration time and the compile time (and dynamo's columns, those of
results/dynamo_stats.py)."""

import csv
import json
import math
import random
from pathlib import Path

import pytest

from helpers import GOLDEN, ROOT

from benchmarks.analyzer import pipeline
from benchmarks.results import dynamo_stats, record_check
from benchmarks.results.measurement import Measurement
from scripts.upkeep import fuzz_scanner

pytestmark = pytest.mark.usefixtures("analyzer_reader")  # each test with each reader

FILES = sorted((ROOT / "tests" / "fixtures" / "analyzer").glob("*.jsonl")) + sorted(
    GOLDEN.glob("*.jsonl")) + [GOLDEN / "special" / "torn.jsonl"]


def fuzz_corpus(path: Path) -> Path:
    """scripts/upkeep/fuzz_scanner.py's corpus: the real records it starts from and its synthetic ones."""
    path.write_bytes(b"\n".join(fuzz_scanner.base_lines(random.Random(0))) + b"\n")
    return path


def placed_records(path: Path) -> list:
    """The lines the analyzer makes rows of: JSON objects the shared validation accepts (record_check.py: a model
    and an experiment object, values of the right types)."""
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if record_check.problem(value) is None:
            out.append(value)
    return out


def same(cell: str, number) -> bool:
    if number is None or (isinstance(number, float) and math.isnan(number)):
        return cell in ("", "nan")
    return cell != "" and float(cell) == number


def check(path: Path, tmp_path: Path) -> int:
    report = tmp_path / (path.stem + ".csv")
    pipeline.analyze(pipeline.Options(inputs=[str(path)], output=str(report), jobs=1))
    with open(report, newline="") as handle:
        rows = list(csv.DictReader(handle))
    found = placed_records(path)
    assert len(rows) == len(found), path
    checked = 0
    for row, record in zip(rows, found):
        m = Measurement(record)
        for metric in m.metrics:
            summary = m.summary(metric)
            if summary is None or f"min_{metric}" not in row:
                continue
            for statistic, number in summary.items():
                assert same(row[f"{statistic}_{metric}"], number), (path.name, metric, statistic, row, record)
                checked += 1
        total = m.raw("total_time")
        per_iter = m.raw("per_iter_time")
        assert same(row["median_total_time"], None if total is None else m.summary("total_time")["median"])
        assert same(row["median_per_iter_time"], None if per_iter is None else m.summary("per_iter_time")["median"])
        compile_time = m.compile_time()
        assert same(row["dynamo_compile_time"], compile_time if m.experiment.get("dynamo") else None), path.name
        assert same(row["xla_compile_time"], compile_time if m.experiment.get("xla") else None), path.name
        checked += 4
        if dynamo_stats.REASONS in row:  # dynamo's columns: the record's own dynamo_stats, row by row
            reasons, *phases = dynamo_stats.cells(record.get("dynamo_stats"))
            assert row[dynamo_stats.REASONS] == (reasons or ""), path.name
            assert all(same(row[name], value) for (name, _), value in zip(dynamo_stats.PHASE_COLUMNS, phases))
            checked += 1
    return checked


@pytest.mark.parametrize("name", [p.relative_to(ROOT).as_posix() for p in FILES])
def test_analyzer_matches_the_view_on_golden_files(name, tmp_path):
    assert check(ROOT / name, tmp_path) > 0


def test_analyzer_matches_the_view_on_the_fuzz_corpus(tmp_path):
    assert check(fuzz_corpus(tmp_path / "corpus.jsonl"), tmp_path) > 1000
