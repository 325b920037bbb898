"""result_analyzer.py's two readers: the compiled one (benchmarks/analyzer/_jsonl_scan.c) must write byte for byte the
report of the pure-Python one, and report the same problems on the same lines, whatever the input. The input
here is every analyzer fixture plus lines written to trip a hand-written JSON scanner."""

import csv
import importlib
import io
import json
import logging
import math
import random
import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT, compiled_reader_missing

from benchmarks.analyzer import pipeline
from benchmarks.analyzer.problems import Problems
from benchmarks.analyzer.range_reader import TOP_KEYS

FIXTURES = ROOT / "tests" / "fixtures" / "analyzer"
if compiled_reader_missing():  # every test here is of the compiled reader (as helpers.NEEDS skips a test)
    pytest.skip(compiled_reader_missing(), allow_module_level=True)
compiled_reader = importlib.import_module("benchmarks.analyzer._jsonl_scan")


def record(model="m", metrics=None, **extra) -> dict:
    out = {"model": {"suite_name": "s", "model_name": model},
           "experiment": {"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval", "batch_size": 2},
           "metrics": {"total_time": [3.0, 1.0, 2.0], "per_iter_time": [3.0, 1.0, 2.0]} if metrics is None
           else metrics, "timestamp": 5.0}
    out.update(extra)
    return out


def tricky_lines() -> list:
    """Lines (bytes, without their newline) at the edges of JSON and of the record format."""
    dump = lambda value: json.dumps(value, ensure_ascii=False).encode()  # noqa: E731
    lines = [
        dump(record()),
        dump(record(metrics={"total_time": [1, 2.5, -0, -0.0, 1e-7, 18446744073709551616, 10 ** 30]})),
        dump(record(metrics={"total_time": [float("nan"), 1.0], "per_iter_time": [float("inf"), 2.0]})),  # NaN
        b'{"model":{"suite_name":"s","model_name":"esc"},"experiment":{"xla":null},'
        b'"metrics":{"tot\\u0061l_time":[1,2]}}',  # a metric name with an escape
        b'{"model":{"model_name":"dup"},"experiment":{},"metrics":{"total_time":[1],"total_time":[2,3]}}',
        b'{"model":{"model_name":"a"},"model":{"model_name":"b"},"experiment":{},"metrics":{}}',
        dump(record(model="\u6a21\u578b \u00e9\U0001F600", error={"type": "E", "message": 'a "quoted",\nline',
                                                                  "phase": "run"}, status="error")),
        dump(record(metrics={"total_time": [[1, 2]], "per_iter_time": [], "x": None, "y": {"a": 1, "b": {"c": 2}},
                             "z": "text", "w": [True, False], "v": [1, None, 3], "u": 7, "warmup_time": "soon"})),
        dump(record(metrics=[1, 2])), dump(record(metrics=None)), dump(record(metrics="x")),
        b' { "model" : { "model_name" : "spaced" } ,\t"experiment" : {} , "metrics" : { "total_time" : [ 1 , 2 ] '
        b', "error" : "x" } }\r',
        b'[1, 2]', b'3', b'', b'   ', b'{"model": {}, "experiment": {}} trailing',
        b'{"model": {"model_name": "bad utf8 \xff"}, "experiment": {}}',
        b'{"model": {"model_name": "lone \\ud800"}, "experiment": {}}',
        b'{"model": {"model_name": "pair \\ud83d\\ude00"}, "experiment": {}}',
        b'{"model": {"model_name": "deep"}, "experiment": {}, "diagnostics": ' + b"[" * 600 + b"]" * 600 + b"}",
        b'{"model": {"model_name": "deeper"}, "experiment": {}, "d": ' + b"[" * 3000 + b"]" * 3000 + b"}",
        b'{"model": {"model_name": "ctl\x01"}, "experiment": {}}',
        b'{"model": {"model_name": "num"}, "experiment": {"batch_size": 01}}',
        b'{"model": {"model_name": "num"}, "experiment": {"batch_size": 1.}, "metrics": {"total_time": [1.]}}',
        b'{"model": {"model_name": "huge"}, "experiment": {}, "metrics": {"total_time": [1e999, 2]}}',
        b'{"model": {"model_name": "t"}, "experiment": {}, "diagnostics": {"big": 1e999}, "metrics": {"total_time": [2]}}',
        dump(record(metrics={"error": "SKIP"})), dump(record(metrics={"error": "timed out"}, status=None)),
        dump(record(experiment=[1])), dump({"experiment": {}, "metrics": {}}),
        dump(record(timestamp="yesterday")), dump(record(timestamp=None)),
        dump(record(verification_mean_rel_error=0.125, verification_code="PASS", warmup=2)),
        dump(record(verification_mean_rel_error=[1], outputs_file=None, artifacts={"output": "o.pt"})),
        dump(record(metrics={"total_time": [1.0, 2.0], "per_iter_time": [1.0, 2.5]})),  # not equal: no alias here
        dump(record(metrics={"warmup_time": [9.0], "total_time": [1, 2, 3, 4]}, environment={"torch": "2.9.1"})),
        dump(record(environment="not an object")),
        dump(record(metrics={"dynamo_counters": {"stats": {"calls": 3}}, "total_time": [0.5]})),
        dump(record(metrics={"total_time": [0.25], "per_operator": {f"op{i:02d}": i for i in range(70)}})),
        dump(record(verification_code="FAIL", verification_mean_rel_error=4.5, verification_max_abs_error=1e300,
                    verification_cosine_similarity=-0.5, verification_tolerance=0.02,
                    verification_message="far off,\nat [0]")),
        dump(record(experiment={"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval", "dtype": "bf16",
                                "shape": {"M": 64}, "experiment_name": "run_all"})),
        # Found by scripts/upkeep/fuzz_scanner.py, each once a crash of the report: values nested deeper than orjson
        # writes (on a line read by Python's json for its NaN, and on one the scanner reads), integers beyond 64
        # bits and beyond the doubles, a lone surrogate as bytes in a column's name.
        b'{"model": {"model_name": "deep-config"}, "experiment": {"x": ' + b"[" * 300 + b"]" * 300
        + b'}, "metrics": {"total_time": [NaN]}}',
        b'{"model": {"model_name": "deep-stamp"}, "experiment": {}, "timestamp": ' + b"[" * 300 + b"]" * 300 + b"}",
        b'{"model": {"model_name": "big"}, "experiment": {}, "timestamp": [18446744073709551616], "metrics": '
        b'{"total_time": [NaN]}}',
        b'{"model": {"model_name": "big-repeat"}, "experiment": {}, "repeat": 18446744073709551616, "metrics": '
        b'{"total_time": [NaN, 1]}}',
        b'{"model": {"model_name": "huge"}, "experiment": {}, "metrics": {"total_time": [NaN, ' + b"9" * 400 + b"]}}",
        b'{"model": {"model_name": "huge-leaf"}, "experiment": {}, "metrics": {"total_time": [NaN], "counters": {"n": '
        + b"9" * 400 + b"}}}",
        b'{"model": {"model_name": "cesu"}, "experiment": {"\xed\xa0\x80": 1}, "metrics": {"total_time": [1]}}',
    ]
    rng = random.Random(5)
    for i in range(300):  # a sweep's worth of ordinary records with random samples
        values = [rng.lognormvariate(-6, 2) for _ in range(rng.choice((1, 5, 10)))]
        metrics = {"total_time": values, "per_iter_time": values if i % 7 else [v / 2 for v in values],
                   "peak_rss_bytes": [rng.randrange(1 << 40)] * len(values)}
        if i % 3 == 0:
            metrics["warmup_time"] = [values[0] * 10]
        lines.append(dump(record(model=f"m{i % 11}", metrics=metrics, timestamp=float(i // 100),
                                 verification_mean_rel_error=rng.random() if i % 5 == 0 else None)))
    return lines


def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    with open(path, "wb") as out:
        for fixture in sorted(FIXTURES.glob("*.jsonl")):
            out.write(fixture.read_bytes())
            out.write(b"\n")
        out.write(b"\n".join(tricky_lines()))
        out.write(b'\n{"model": {"model_name": "torn"}, "experiment": {}, "metr')  # torn last line
    return path


def report(tmp_path, caplog, path, reader, **options) -> tuple:
    """(the report's bytes, the problems logged) with one reader."""
    output = tmp_path / f"out-{reader}-{len(caplog.records)}.{options.get('output_format', 'csv')}"
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="benchmarks.analyzer.pipeline"):
        summary = pipeline.analyze(pipeline.Options(inputs=[str(path)], output=str(output), fallback_timestamp=7.0,
                                                    reader=reader, **options))
    assert summary.reader == reader
    return output.read_bytes(), [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize("options", [dict(), dict(jobs=2, chunk_bytes=2048), dict(chunk_bytes=64),
                                     dict(output_format="jsonl"), dict(output_format="jsonl", chunk_bytes=64),
                                     dict(hide_errors=True)],
                         ids=["one-range", "two-workers", "tiny-ranges", "jsonl", "jsonl-tiny-ranges",
                              "hide-errors"])
def test_both_readers_write_the_same_report_and_problems(tmp_path, caplog, options):
    path = corpus(tmp_path)
    compiled, compiled_log = report(tmp_path, caplog, path, "compiled", **options)
    python, python_log = report(tmp_path, caplog, path, "python", **options)
    assert compiled == python
    assert compiled_log == python_log
    assert len(compiled.splitlines()) > 300
    assert any("torn last line" in line for line in compiled_log)
    assert any("invalid JSON" in line for line in compiled_log)


def test_the_compiled_reader_leaves_to_python_only_what_it_must(tmp_path):
    """Ordinary records are read whole by the scanner (else the speed is the Python reader's)."""
    lines = tricky_lines()
    data = b"\n".join(lines) + b"\n"
    offsets, status, fields, names, *_ = compiled_reader.scan(data, TOP_KEYS, "metrics")
    status = list(status)
    assert len(status) == len(lines)
    assert status[-300:] == [0] * 300
    slow = {lines[i][:60] for i, code in enumerate(status) if code == 1}
    assert any(b"NaN" in lines[i] for i, code in enumerate(status) if code == 1)
    assert all(code == 2 for line, code in zip(lines, status) if not line.strip())
    assert {"total_time", "per_iter_time", "peak_rss_bytes", "warmup_time"} <= set(names), slow


def test_numbers_read_exactly_as_python_reads_them():
    """Correct rounding: random doubles of every magnitude, their shortest spellings and longer ones, values
    halfway between two doubles, and the edges of the double range."""
    rng = np.random.default_rng(3)
    doubles = rng.integers(1, 0x7FEFFFFFFFFFFFFF, size=100_000, dtype=np.int64).view(np.float64).tolist()
    tokens = [repr(v) for v in doubles] + [f"{v:.19e}" for v in doubles[:20_000]]
    tokens += [repr(v) for v in rng.lognormal(-6, 3, size=50_000).tolist()]
    for v in rng.lognormal(0, 10, size=5_000).tolist():  # halfway between neighbours, written out in full
        nxt = float(np.nextafter(v, math.inf))
        tokens.append(format((__import__("decimal").Decimal(v) + __import__("decimal").Decimal(nxt)) / 2, ".40e"))
    tokens += ["0", "-0.0", "1", "-1", "5e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
               "1.7976931348623157e308", "1.7976931348623158e308", "1e309", "1e-400", "9007199254740993",
               "18446744073709551615", "18446744073709551616", "123456789012345678901234567890e-10",
               "0.30000000000000004", "1e23", "8.98846567431158e307", "2.2250738585072011e-308",
               "0." + "0" * 100_001 + "1e100010", "1." + "0" * 100_001]  # fractions too long for the fast path
    tokens = [t.replace("E", "e").replace("inf", "1e999") for t in tokens]
    got = np.frombuffer(compiled_reader.parse_numbers([t.encode() for t in tokens]), dtype=np.float64)
    want = np.array([float(t) for t in tokens])
    different = np.flatnonzero(got.view(np.int64) != want.view(np.int64))
    assert not different.size, [(tokens[i], got[i], want[i]) for i in different[:5]]
    # JSON's integer -0 is Python's int 0 (orjson and json agree): +0.0, where -0.0 stays negative
    assert struct.pack("<dd", 0.0, -0.0) == compiled_reader.parse_numbers([b"-0", b"-0.0"])


def mutated_lines(count: int, seed: int) -> list:
    """Records cut, spliced and sprinkled with the bytes JSON gives meaning to (and some it forbids)."""
    rng = random.Random(seed)
    base = [line for line in tricky_lines() if line]
    alphabet = b'{}[]",:\\-+.eE0123456789 \tnulltruefalseNaN\x00\x1f\xc3\xa9\xff\xed\xa0'
    out = []
    for _ in range(count):
        line = bytearray(rng.choice(base))
        for _ in range(rng.randint(1, 3)):
            where = rng.randrange(len(line) + 1)
            action = rng.random()
            if action < 0.3:
                del line[where:where + rng.randint(1, 8)]
            elif action < 0.6:
                line[where:where] = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
            elif action < 0.8:
                other = rng.choice(base)
                start = rng.randrange(len(other))
                line[where:where] = other[start:start + rng.randint(1, 40)]
            else:
                line = line[:where]
        out.append(bytes(line).replace(b"\n", b" "))
    return out


def test_a_problems_lines_are_in_file_order_whichever_reader_found_them(tmp_path, caplog):
    """Found by scripts/upkeep/fuzz_scanner.py: the readers meet a kind of problem in different orders (NaN samples
    of two lengths go to two arrays); the log names its lines in file order, and the first line's message."""
    nan = lambda n: json.dumps(record(metrics={"total_time": [math.nan] + [1.0] * (n - 1)})).encode()  # noqa: E731
    path = tmp_path / "nan.jsonl"
    path.write_bytes(b"\n".join([nan(5), nan(2), nan(5)]) + b"\n")
    compiled, compiled_log = report(tmp_path, caplog, path, "compiled")
    python, python_log = report(tmp_path, caplog, path, "python")
    assert compiled == python and compiled_log == python_log
    assert f"{path}:1: metric 'total_time' has null or NaN samples; statistics that include them are left empty " \
           "(also lines 2, 3)" in compiled_log
    # Two kinds on one line: in column order, though the scanner met warmup_time first (on line 1).
    path.write_bytes(b"\n".join([json.dumps(record(metrics={"warmup_time": [1.0]})).encode(), json.dumps(record(
        metrics={"total_time": [1.0], "per_iter_time": [math.nan], "warmup_time": [math.nan]})).encode()]) + b"\n")
    compiled, compiled_log = report(tmp_path, caplog, path, "compiled")
    python, python_log = report(tmp_path, caplog, path, "python")
    assert compiled == python and compiled_log == python_log
    assert [line.split(": ", 1)[1][:28] for line in compiled_log if ":2: " in line] == [
        "metric 'per_iter_time' has n", "metric 'warmup_time' has nul"]
    problems = Problems()
    for line in (9, 3, 7, 1, 8, 2, 6):
        problems.add("kind", line, f"seen on {line}")
    assert problems.lines("f") == [(logging.WARNING, "f:1: seen on 1 (also lines 2, 3, 6, 7 and 2 more)")]


def test_minus_zero_is_not_taken_for_zero(tmp_path, caplog):
    """Found by scripts/upkeep/fuzz_scanner.py: -0.0 == 0.0 in Python, yet each row shows its own (on lines read by
    Python's json, for their NaN, and on lines the scanner reads)."""
    lines = [json.dumps(record(metrics={"total_time": [math.nan]} if slow else None,
                               verification_max_abs_error=value)).encode()
             for slow in (True, False) for value in (0.0, -0.0, 0)]
    path = tmp_path / "zeros.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    for reader in ("compiled", "python"):
        text, _ = report(tmp_path, caplog, path, reader)
        rows = list(csv.DictReader(io.StringIO(text.decode())))
        assert [row["verification_max_abs_error"] for row in rows] == ["0.0", "-0.0", "0"] * 2, reader


@pytest.mark.parametrize("seed", [1, 2])
def test_both_readers_agree_on_damaged_records(tmp_path, caplog, seed):
    """Random damage: whatever the scanner makes of a line, the report and the problems are the Python
    reader's (a line it cannot read whole goes to it), and nothing crashes."""
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"\n".join(tricky_lines()[-50:] + mutated_lines(1500, seed)) + b"\n")
    compiled, compiled_log = report(tmp_path, caplog, path, "compiled", chunk_bytes=65536)
    python, python_log = report(tmp_path, caplog, path, "python", chunk_bytes=65536)
    assert compiled == python
    assert compiled_log == python_log


def test_the_scanner_survives_any_bytes():
    rng = random.Random(9)
    for _ in range(300):
        data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 400)))
        offsets, status, fields, *_ = compiled_reader.scan(data, TOP_KEYS, "metrics")
        assert len(status) == len(np.frombuffer(offsets, dtype=np.int64)) - 1
        assert all(len(np.frombuffer(ids, dtype=np.int32)) == len(status) for _, ids in fields)


def test_a_compiled_reader_of_another_version_is_not_used(monkeypatch):
    """An old build left in place after an update (its interface differs) must not be called: the analyzer
    says so and reads with the Python reader."""
    from benchmarks.analyzer import compiled_reader as loader

    module, why = loader.load()
    assert module is compiled_reader and why is None and compiled_reader.ABI == loader.ABI
    stale = types.ModuleType("stale_scan")
    stale.ABI = loader.ABI - 1
    monkeypatch.setitem(sys.modules, "stale_scan", stale)
    assert loader.load("stale_scan") == (
        None, "built from another version of benchmarks/analyzer/_jsonl_scan.c (run `make env` to rebuild it)")
    module, why = loader.load("benchmarks.no_such_module")
    assert module is None and why.startswith("not built")
