"""One way to write a file (issue #61, finding 4): every writer in benchmarks/ and scripts/ goes through
plumbing/disk_writes.py (a whole file from a temporary file of ours in the same real folder, a link at the name
refused: cli_support.write_file for the paths a user names), figures through plot_text.figure_bytes, and the
history database through database.connect (a link refused). This test fails when a new `open(..., "w")`,
`write_text`, `write_bytes`, `savefig` or `sqlite3.connect` appears anywhere else; the few left are listed below
with the reason each is safe."""

import ast

from helpers import ROOT, source_nodes

# (file, function) -> why its direct write is safe. A new entry needs as good a reason.
ALLOWED = {
    ("benchmarks/plumbing/plot_text.py", "figure_bytes"): "the one savefig: into memory, never a path",
    ("benchmarks/history/database.py", "connect"): "the one sqlite3.connect: a link at the path refused first",
    ("benchmarks/analyzer/report_files.py", "_write_csv"): "a range's rows into the spool folder mkdtemp made (ours)",
    ("benchmarks/analyzer/report_files.py", "finish"): "appends to our own temporary report (temporary_path), "
                                                       "published with disk_writes.publish (a link refused)",
    ("benchmarks/analyzer/pipeline.py", "analyze"): "creates our own temporary files (temporary_path, mkdtemp), "
                                                    "published with disk_writes.publish (a link refused)",
    ("benchmarks/results/record_schema.py", "main"): "make docs: docs/record-schema.md of this repository",
    ("benchmarks/runner/ray/artifact_shipping.py", "unpack"): "a worker's artifacts into paths checked by "
                                                              "safe_paths.inside under the output directory",
    ("benchmarks/suites/faults_models.py", "*"): "the test suite's fault models: a marker in the test's own tmp",
    ("benchmarks/child/device_memory.py", "*"): "writes /proc/self/clear_refs, a kernel interface",
    ("benchmarks/child/profilers.py", "*"): "a profile into the config's artifact path (safe_paths.under)",
    ("benchmarks/child/xla_dumps.py", "*"): "an XLA dump index into the config's artifact path (safe_paths.under)",
    ("scripts/parity/report.py", "*"): "a developer's parity tool: writes into the scratch folder it made",
    ("scripts/parity/harness.py", "*"): "a developer's parity tool: writes into the scratch folder it made",
    ("scripts/parity/table.py", "*"): "a developer's parity tool: the table it was asked for",
    ("scripts/gpu/check.py", "*"): "the GPU check: logs and its report into the folder it made (mkdtemp/--out)",
    ("scripts/gpu/check_machine.py", "run"): "the GPU check's process logs, into the folder it made (--out)",
    ("scripts/gpu/slice_report.py", "*"): "the GPU check's report into its own folder",
    ("scripts/gpu/slice.py", "*"): "the GPU check's state into its own folder",
    ("scripts/upkeep/generated_docs.py", "*"): "make docs: rewrites docs/ of this repository",
    ("scripts/upkeep/torch_sweep.py", "*"): "a developer's sweep: reports into the folder it made",
    ("scripts/upkeep/fuzz_records.py", "*"): "the fuzzer: its own work folder",
    ("scripts/upkeep/fuzz_scanner.py", "*"): "the fuzzer: its own work folder",
    ("scripts/upkeep/make_venv.py", "*"): "make env: the virtual environment it builds",
    ("scripts/bench/analyzer.py", "*"): "a benchmark's input file in its own temporary folder",
    ("scripts/bench/scale.py", "*"): "a benchmark's input file in its own temporary folder; os.devnull",
    ("scripts/bench/unit_tier.py", "*"): "a git archive into its own scratch folder",
}
WRITE_MODES = set("wax+")


def _mode(call: ast.Call):
    found = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return found.value if isinstance(found, ast.Constant) and isinstance(found.value, str) else None


def what_writes(call: ast.Call):
    """The kind of direct write `call` is, or None."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "open" and _mode(call) and WRITE_MODES & set(_mode(call)):
        return f"open(..., {_mode(call)!r})"
    if isinstance(func, ast.Attribute):
        receiver = func.value.id if isinstance(func.value, ast.Name) else None
        if func.attr in ("write_text", "write_bytes") and receiver != "disk_writes":
            return func.attr
        if func.attr == "savefig":
            return "savefig"
        if func.attr == "connect" and receiver == "sqlite3":
            return "sqlite3.connect"
    return None


def direct_writes(root) -> list:
    """(file, enclosing function, kind, line) of every direct write under benchmarks/ and scripts/."""
    found = []
    for folder in ("benchmarks", "scripts"):
        for path in sorted((root / folder).rglob("*.py")):
            relative = str(path.relative_to(root))
            tree = source_nodes(path)[0]
            for function in [None] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
                body = tree if function is None else function
                for node in ast.walk(body):
                    if isinstance(node, ast.Call) and what_writes(node):
                        found.append((relative, function.name if function else "<module>", what_writes(node),
                                      node.lineno))
    innermost = {}
    for relative, name, kind, line in found:  # a call is in several enclosing nodes: keep the innermost function
        if (relative, line, kind) not in innermost or name != "<module>":
            innermost[(relative, line, kind)] = name
    return sorted((relative, name, kind, line) for (relative, line, kind), name in innermost.items())


def unexplained(root) -> list:
    return [w for w in direct_writes(root) if (w[0], w[1]) not in ALLOWED and (w[0], "*") not in ALLOWED]


def test_every_writer_goes_through_the_one_safe_writer():
    assert unexplained(ROOT) == []


def test_a_new_open_for_writing_is_found(tmp_path):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "benchmarks" / "new.py").write_text(
        "import sqlite3\n\ndef report(path, text, fig):\n    with open(path, 'w') as handle:\n        handle.write(text)\n"
        "    path.write_text(text)\n    fig.savefig(path)\n    sqlite3.connect(path)\n\n"
        "def fine(path, text):\n    disk_writes.write_text(path, text)\n    open(path).read()\n")
    found = [(w[1], w[2]) for w in sorted(unexplained(tmp_path), key=lambda w: w[3])]
    assert found == [("report", "open(..., 'w')"), ("report", "write_text"), ("report", "savefig"),
                     ("report", "sqlite3.connect")]
