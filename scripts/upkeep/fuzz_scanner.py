#!/usr/bin/env python3
"""result_analyzer.py's compiled reader (benchmarks/analyzer/_jsonl_scan.c) under AddressSanitizer and
UndefinedBehaviorSanitizer, fed mutated and random lines for a bounded time.

Results files given to the analyzer may come from anywhere: the C scanner must be safe on any bytes, and it
must read them as the pure-Python reader does. This builds the C file with -fsanitize=address,undefined
(every report fatal) into build/fuzz-scanner/ (the normal build is left alone), then runs a Python process
with the sanitizer runtime preloaded that, until the time is up, writes inputs and analyzes each with both
readers: real records (tests/fixtures/analyzer) and synthetic ones, mutated (bit flips, cuts, splices,
quotes, backslashes, brackets, huge and odd numbers, deep nesting, invalid UTF-8, NaN/Infinity, duplicated
keys ...), and random lines. Each input must give the same report bytes and the same problems with both
readers; the scanner's number parser must read every number token as Python's float() does.

Exit status 0 when clean; 1 on any sanitizer report or difference (the failing input is saved, and its
path printed); 2 when the sanitized build cannot be made. The seed is fixed by default and printed: the
same seed gives the same inputs. `make fuzz-scanner` runs it (FUZZ_SECONDS=N for longer).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "benchmarks" / "analyzer" / "_jsonl_scan.c"
BUILD_DIR = ROOT / "build" / "fuzz-scanner"
FAILURES_DIR = ROOT / "output" / "fuzz-scanner"
FIXTURES = ROOT / "tests" / "fixtures" / "analyzer"
SANITIZE = ["-fsanitize=address,undefined,float-cast-overflow", "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer", "-g", "-O1"]
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter", "-shared", "-fPIC"]
DEFAULT_SECONDS = 60.0
DEFAULT_SEED = 12
HANG_SECONDS = 300  # past its time, the child is taken for hung (one input never takes this long)
# The first line of a sanitizer's report (on the child's stderr).
SANITIZER_REPORT = re.compile(r"ERROR: (?:Address|UndefinedBehavior|Leak)Sanitizer|: runtime error: ")
LOGGER = "benchmarks.analyzer.pipeline"


# ---------------------------------------------------------------- the sanitized build (parent)


def build(build_dir: Path) -> Path:
    """The sanitized extension module, rebuilt when the C file or the flags changed."""
    target = build_dir / f"_jsonl_scan{sysconfig.get_config_var('EXT_SUFFIX')}"
    command = ["gcc", *SANITIZE, *CFLAGS, f"-I{sysconfig.get_paths()['include']}", str(SOURCE), "-o", str(target)]
    stamp = build_dir / "command.txt"
    if (target.exists() and stamp.exists() and stamp.read_text() == " ".join(command)
            and target.stat().st_mtime >= SOURCE.stat().st_mtime):
        return target
    build_dir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"fuzz_scanner.py: error: cannot build the sanitized reader:\n{result.stderr.strip()}")
    stamp.write_text(" ".join(command))
    return target


def sanitizer_runtime() -> str:
    """libasan's path: it must be loaded first, before the Python executable's own libraries."""
    found = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(found) or not os.path.exists(found):
        raise SystemExit("fuzz_scanner.py: error: gcc has no AddressSanitizer runtime (libasan.so); install it "
                         "(Debian: libasan8)")
    return found


# ---------------------------------------------------------------- inputs


def base_lines(rng: random.Random) -> list:
    """Real records (the analyzer's fixtures) and synthetic ones of every shape the report handles."""
    lines = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        lines += [line for line in path.read_bytes().split(b"\n") if line.strip()]
    for i in range(120):
        lines.append(synthetic_record(rng, i))
    return lines


def synthetic_record(rng: random.Random, i: int) -> bytes:
    samples = rng.choice((1, 2, 5, 10))
    times = [rng.lognormvariate(-6, 2) for _ in range(samples)]
    metrics = {"total_time": times, "per_iter_time": times if i % 3 else [t / 2 for t in times]}
    if i % 4 == 0:
        metrics["warmup_time"] = [times[0] * 30]
    if i % 5 == 0:
        metrics.update(trace_total_time=times, xla_CompileTime_number=[3] + [0] * (samples - 1))
    if i % 7 == 0:
        metrics["dynamo_counters"] = {"stats": {"calls": i, "unique": 1}, "graph_break": {}}
    if i % 11 == 0:
        metrics["total_time"] = [float("nan"), *times[1:]] if i % 2 else [float("inf")] + times
    if i % 13 == 0:
        metrics = {"error": "RuntimeError: boom\nTraceback (most recent call last):\nValueError: x"}
    experiment = {"accelerator": "cpu", "xla": rng.choice((None, "PJRT")), "dynamo": rng.choice((None, "inductor")),
                  "test": rng.choice(("eval", "train")), "batch_size": rng.choice((1, 8, None))}
    if i % 6 == 0:
        experiment["dtype"] = "bf16"
    record = {"model": {"suite_name": "s", "model_name": f"m{i % 9}"}, "experiment": experiment,
              "metrics": metrics, "timestamp": 1_700_000_000.0 + i}
    if i % 2:
        record.update(status=rng.choice(("ok", "error", "crash", "skip", "timeout", "odd")), warmup=2,
                      environment={"python": "3.11", "torch": "2.9.1", "hostname": "h"},
                      error={"type": "E", "message": 'a "quoted",\nline', "phase": "run"} if i % 4 == 1 else None)
    if i % 8 == 3:
        record.update(verification_code="FAIL", verification_mean_rel_error=0.5, verification_max_abs_error=1e300,
                      verification_message="far,\noff", artifacts={"output": "o.pt"})
    return json.dumps(record, ensure_ascii=bool(i % 2)).encode()


TOKENS = [b'"', b"\\", b"[", b"]", b"{", b"}", b",", b":", b"\\u", b"\\ud800", b"\\udc00", b"\\ud83d\\ude00",
          b"\\u0000", b"\\x", b"-", b".", b"e", b"E", b"+", b"0", b"9", b"null", b"true", b"false", b"NaN",
          b"Infinity", b"-Infinity", b" ", b"\t", b"\r", b"\x0c", b"\x00", b"\x1f", b"\x7f", b"\xff", b"\xc3",
          b"\xc0\xaf", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xef\xbb\xbf", b"\xc3\xa9",
          b"\xf0\x9f\x98\x80", b'"metrics":', b'"model":', b'{"model":{},"experiment":{}}', b"[]", b"{}"]
NUMBERS = [b"0", b"-0", b"-0.0", b"1e999", b"-1e999", b"1e-400", b"5e-324", b"2.4703282292062328e-324",
           b"1.7976931348623157e308", b"1.7976931348623158e308", b"18446744073709551616", b"9007199254740993",
           b"123456789012345678901234567890e-10", b"0.30000000000000004", b"1e23", b"01", b"1.", b".5", b"1e",
           b"1e+", b"--1", b"1e1000000000000", b"0e-99999999999", b"9" * 400, b"0." + b"0" * 400 + b"1",
           b"1" + b"0" * 25 + b"e-25", b"2.2250738585072011e-308", b"4.9406564584124654e-324", b"NaN",
           b"Infinity", b"-Infinity", b"1E5", b"1e05", b"-", b"0x10", b"1_000"]
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
PAIR = re.compile(rb'"[A-Za-z_]+"\s*:\s*(?:\[[^\[\]]*\]|"[^"\\]*"|-?[\d.eE+-]+|null|true|false|\{[^{}]*\})')
KEY = re.compile(rb'"([A-Za-z_]+)"\s*:')


def random_number(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return rng.choice(NUMBERS)
    mantissa = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30))).lstrip("0") or "0"
    text = rng.choice(("", "-")) + mantissa
    if rng.random() < 0.6:
        text += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25)))
    if rng.random() < 0.6:
        text += rng.choice("eE") + rng.choice(("", "+", "-")) + str(rng.randint(0, 400))
    return text.encode()


def mutate(line: bytes, rng: random.Random, base: list) -> bytes:
    """One to four damages of one line."""
    out = bytearray(line)
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(len(out) + 1)
        action = rng.randrange(11)
        if action == 0 and out:  # a bit flip
            at = rng.randrange(len(out))
            out[at] ^= 1 << rng.randrange(8)
        elif action == 1:  # cut
            out = out[:where]
        elif action == 2:  # a span gone
            del out[where:where + rng.randint(1, 12)]
        elif action == 3:  # bytes JSON gives meaning to (and some it forbids)
            out[where:where] = b"".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 3)))
        elif action == 4:  # an odd number in place of one
            numbers = list(NUMBER.finditer(out))
            if numbers:
                found = rng.choice(numbers)
                out[found.start():found.end()] = random_number(rng)
        elif action == 5:  # a piece of another record
            other = rng.choice(base)
            start = rng.randrange(len(other))
            out[where:where] = other[start:start + rng.randint(1, 60)]
        elif action == 6:  # a key twice
            pairs = list(PAIR.finditer(out))
            if pairs:
                found = rng.choice(pairs)
                out[found.end():found.end()] = b"," + found.group(0)
        elif action == 7:  # deep nesting
            depth = rng.choice((2, 300, 511, 512, 513, 1100, 3000))
            opener, closer = rng.choice(((b"[", b"]"), (b'{"a":', b"}")))
            numbers = list(NUMBER.finditer(out))
            if numbers:
                found = rng.choice(numbers)
                out[found.start():found.end()] = opener * depth + found.group(0) + closer * depth
            else:
                out[where:where] = opener * depth
        elif action == 8:  # a span repeated many times
            span = bytes(out[where:where + rng.randint(1, 20)])
            out[where:where] = span * rng.randint(2, 400)
        elif action == 9:  # a key spelled with an escape
            keys = list(KEY.finditer(out))
            if keys:
                found = rng.choice(keys)
                name = found.group(1)
                at = rng.randrange(len(name))
                out[found.start(1) + at:found.start(1) + at + 1] = b"\\u%04x" % name[at]
        else:  # NaN or Infinity where a number was
            numbers = list(NUMBER.finditer(out))
            if numbers:
                found = rng.choice(numbers)
                out[found.start():found.end()] = rng.choice((b"NaN", b"Infinity", b"-Infinity"))
    return bytes(out)


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice((0, -1, 7, 2 ** 63, 2 ** 64, -(2 ** 63) - 1, 10 ** 30))
    if kind == 3:
        return rng.choice((0.5, -0.0, 1e-310, 1e308, float("nan"), float("inf"), rng.random()))
    if kind in (4, 5):
        return "".join(rng.choice("ab \"\\,\n\t\u00e9\u6a21\U0001F600\x01") for _ in range(rng.randint(0, 8)))
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(("total_time", "model", "x", "error", "metrics", "")): random_value(rng, depth + 1)
            for _ in range(rng.randint(0, 4))}


def random_line(rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:  # any bytes
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 120)))
    if kind == 1:  # any JSON value
        return json.dumps(random_value(rng), ensure_ascii=rng.random() < 0.5).encode()
    if kind == 2:  # a record whose metrics are anything
        metrics = {f"m{j}": random_value(rng) for j in range(rng.randint(0, 6))}
        if rng.random() < 0.2:
            metrics.update({f"many{j}": [j] for j in range(rng.choice((255, 256, 257, 300)))})
        return json.dumps({"model": random_value(rng) if rng.random() < 0.2 else {"model_name": "r"},
                           "experiment": {"xla": random_value(rng)}, "metrics": metrics,
                           "status": random_value(rng), "error": random_value(rng),
                           "timestamp": random_value(rng)}).encode()
    if kind == 3:  # numbers, valid and not
        return (b'{"model":{},"experiment":{},"metrics":{"total_time":['
                + b",".join(random_number(rng) for _ in range(rng.randint(1, 12))) + b"]}}")
    return b" " * rng.randint(0, 3) + rng.choice((b"", b"\r", b"\t", b"{}", b"[]", b"null", b'""'))


def make_input(rng: random.Random, base: list) -> bytes:
    lines = []
    for _ in range(rng.randint(1, 40)):
        choice = rng.random()
        if choice < 0.25:
            lines.append(rng.choice(base))
        elif choice < 0.8:
            lines.append(mutate(rng.choice(base), rng, base))
        else:
            lines.append(random_line(rng))
    data = rng.choice((b"\n", b"\r\n")).join(lines)
    return data if rng.random() < 0.3 else data + b"\n"  # a last line without its newline: torn


# ---------------------------------------------------------------- one input, both readers (child)


@dataclasses.dataclass
class Outcome:
    """What one reader made of an input: the report's bytes (or the error that stopped it) and the problems."""
    report: Optional[bytes]
    error: Optional[str]
    problems: list


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.levelname} {record.getMessage()}")


def run_reader(path: Path, output: Path, reader: str, options: dict) -> Outcome:
    from benchmarks.analyzer import pipeline
    from benchmarks.analyzer.report_files import AnalyzeError

    handler = _Collect()
    logger = logging.getLogger(LOGGER)
    logger.addHandler(handler)
    try:
        pipeline.analyze(pipeline.Options(inputs=[str(path)], output=str(output), fallback_timestamp=7.0,
                                          reader=reader, **options))
        report, error = output.read_bytes(), None
    except AnalyzeError as exc:
        report, error = None, f"AnalyzeError: {exc}"
    except Exception as exc:  # a crash of either reader: never expected, always reported
        report, error = None, f"crash: {type(exc).__name__}: {exc}"
    finally:
        logger.removeHandler(handler)
    return Outcome(report, error, handler.messages)


def find_difference(compiled: Outcome, python: Outcome) -> Optional[str]:
    """What differs between the two readers' outcomes, in one line (None: nothing). A crash is a finding
    even when both readers crash alike."""
    for name, outcome in (("compiled", compiled), ("python", python)):
        if outcome.error and outcome.error.startswith("crash"):
            return f"the {name} reader crashed ({outcome.error})"
    if compiled.error != python.error:
        return f"different errors: compiled {compiled.error!r}, python {python.error!r}"
    if compiled.report != python.report:
        a, b = compiled.report or b"", python.report or b""
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return (f"different reports ({len(a)} and {len(b)} bytes), from byte {at}: compiled "
                f"{a[max(0, at - 40):at + 60]!r}, python {b[max(0, at - 40):at + 60]!r}")
    if compiled.problems != python.problems:
        diff = [(x, y) for x, y in zip(compiled.problems, python.problems) if x != y][:1] or [
            (compiled.problems[len(python.problems):][:1], python.problems[len(compiled.problems):][:1])]
        return f"different problems: compiled {diff[0][0]!r}, python {diff[0][1]!r}"
    return None


def number_difference(module, tokens: list) -> Optional[str]:
    """The scanner's value of each valid JSON number token must be Python's (JSON's integer -0 is int 0);
    an invalid token must be refused."""
    import struct

    for token in tokens:
        valid = re.fullmatch(rb"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?", token) is not None
        try:
            got = module.parse_numbers([token])
        except ValueError:
            got = None
        if not valid:
            if got is not None:
                return f"parse_numbers accepted {token!r}, not a JSON number"
            continue
        integer = not re.search(rb"[.eE]", token)
        want = struct.pack("<d", 0.0 if integer and int(token) == 0 else float(token))
        if got != want:
            return f"parse_numbers({token!r}) = {got!r}, Python reads {want!r}"
    return None


def child(args) -> int:
    import importlib.util

    # The sanitized build stands in for the normal one before the analyzer looks for it.
    spec = importlib.util.spec_from_file_location("benchmarks.analyzer._jsonl_scan", args.module)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["benchmarks.analyzer._jsonl_scan"] = module
    from benchmarks.analyzer import compiled_reader

    if compiled_reader.module is not module:
        print(f"fuzz_scanner.py: error: the sanitized build was not used ({compiled_reader.why_unavailable})",
              file=sys.stderr)
        return 2
    warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow notes on huge samples: only noise here
    logging.getLogger(LOGGER).setLevel(logging.INFO)
    logging.getLogger(LOGGER).propagate = False
    workdir = Path(args.workdir)
    rng = random.Random(args.seed)
    base = base_lines(rng)
    figures = dict(inputs=0, lines=0, bytes=0, numbers=0, differences=0)
    path = workdir / "input.jsonl"
    started = time.monotonic()
    last_saved = 0.0
    while time.monotonic() - started < args.seconds:
        data = make_input(rng, base)
        options = dict(output_format=rng.choice(("csv", "jsonl")), hide_errors=rng.random() < 0.2,
                       chunk_bytes=rng.choice((None, None, 64, 700)))
        path.write_bytes(data)
        (workdir / "options.json").write_text(json.dumps(options))
        outcomes = [run_reader(path, workdir / f"report-{reader}", reader, options) for reader in ("compiled", "python")]
        tokens = [random_number(rng) for _ in range(20)]
        (workdir / "numbers.txt").write_bytes(b"\n".join(tokens) + b"\n")
        difference = find_difference(*outcomes) or number_difference(module, tokens)
        figures["inputs"] += 1
        figures["lines"] += data.count(b"\n") + (not data.endswith(b"\n"))
        figures["bytes"] += len(data)
        figures["numbers"] += len(tokens)
        if difference:
            figures["differences"] += 1
            (workdir / "difference.txt").write_text(difference + "\n")
        if difference or time.monotonic() - last_saved > 1:
            figures["seconds"] = time.monotonic() - started
            (workdir / "figures.json").write_text(json.dumps(figures))
            last_saved = time.monotonic()
        if difference:
            return 1
    figures["seconds"] = time.monotonic() - started
    (workdir / "figures.json").write_text(json.dumps(figures))
    return 0


# ---------------------------------------------------------------- the run (parent)


def save_failure(workdir: Path, seed: int, kind: str) -> Path:
    """Keep the input being checked (and beside it its options and the number tokens checked after it)."""
    FAILURES_DIR.mkdir(parents=True, exist_ok=True)
    target = FAILURES_DIR / f"seed{seed}-{kind}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    for name, suffix in (("input.jsonl", ".jsonl"), ("options.json", ".options.json"), ("numbers.txt", ".numbers.txt")):
        if (workdir / name).exists():
            shutil.copyfile(workdir / name, target.with_suffix(suffix))
    return target


def main() -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS,
                        help=f"how long to feed it inputs (default {DEFAULT_SECONDS:.0f})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"the inputs' seed (default {DEFAULT_SEED})")
    parser.add_argument("--build-dir", default=str(BUILD_DIR), help="where the sanitized build goes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--module", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seconds <= 0:
        parser.error("--seconds must be positive")
    if args.child:
        return child(args)
    module = build(Path(args.build_dir))
    runtime = sanitizer_runtime()
    workdir = Path(tempfile.mkdtemp(prefix="fuzz-scanner-"))
    env = dict(os.environ, LD_PRELOAD=runtime, PYTHONMALLOC="malloc",  # every allocation seen by the sanitizer
               ASAN_OPTIONS="detect_leaks=0",  # CPython keeps memory until exit by design
               UBSAN_OPTIONS="print_stacktrace=1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    print(f"fuzz_scanner.py: seed {args.seed}, {args.seconds:g} s, sanitized build {module}", flush=True)
    try:
        command = [sys.executable, "-m", __spec__.name, "--child", f"--seconds={args.seconds}", f"--seed={args.seed}",
                   f"--module={module}", f"--workdir={workdir}"]
        child_process = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True,
                                         errors="replace")
        hung = threading.Event()

        def kill_hung() -> None:  # a scan that never ends
            hung.set()
            child_process.kill()

        watchdog = threading.Timer(args.seconds + HANG_SECONDS, kill_hung)
        watchdog.start()
        reports = 0
        for line in child_process.stderr:  # passed on as it comes, sanitizer reports counted
            sys.stderr.write(line)
            reports += bool(SANITIZER_REPORT.search(line))
        status = child_process.wait()
        watchdog.cancel()
        figures_file = workdir / "figures.json"
        figures = json.loads(figures_file.read_text()) if figures_file.exists() else {}
        failure = None
        if reports:
            failure = save_failure(workdir, args.seed, "sanitizer")
        elif (workdir / "difference.txt").exists():
            failure = save_failure(workdir, args.seed, "difference")
            print(f"DIFFERENCE: {(workdir / 'difference.txt').read_text().strip()}", file=sys.stderr)
        elif status:
            failure = save_failure(workdir, args.seed, "hang" if hung.is_set() else f"exit{status}")
        print(f"inputs {figures.get('inputs', 0):,}  lines {figures.get('lines', 0):,}  bytes {figures.get('bytes', 0):,}"
              f"  number tokens {figures.get('numbers', 0):,}  seconds {figures.get('seconds', 0):.1f}"
              f"  differences {figures.get('differences', 0)}  sanitizer reports {reports}")
        if failure:
            print(f"fuzz_scanner.py: FAILED (seed {args.seed}, exit status {status}); the failing input is in "
                  f"{failure} (its options and the number tokens checked after it beside it)", file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
