"""The library's shape (docs/architecture.md, "Layout"): imports run one way, with no circle, and only
a handful of modules stay at the top of benchmarks/."""

import ast
import graphlib
from pathlib import Path

from helpers import ROOT

LIBRARY = ROOT / "benchmarks"


def module_name(path: Path, root: Path) -> str:
    name = ".".join(path.relative_to(root).with_suffix("").parts)
    return name.removesuffix(".__init__")


def import_graph(library: Path = LIBRARY) -> dict:
    """Module -> the library modules it imports, function-level imports included (relative ones resolved)."""
    modules = {module_name(path, library.parent): path for path in library.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                candidates = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            targets.update(c for c in candidates if c in modules and c != name)
        graph[name] = targets
    return graph


def test_the_import_graph_has_no_circle():
    try:
        order = list(graphlib.TopologicalSorter(import_graph()).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError(f"import circle: {' -> '.join(exc.args[1])}") from None
    assert "benchmarks.common.records" in order


def test_a_circle_through_a_function_level_import_is_found(tmp_path):
    package = tmp_path / "lib"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("from lib.sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def late():\n    from ..a import x\n")
    graph = import_graph(package)
    assert graph["lib.a"] == {"lib.sub", "lib.sub.b"} and graph["lib.sub.b"] == {"lib.a"}
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError:
        return
    raise AssertionError("the planted circle was not found")


def test_common_imports_no_tool_and_no_tool_imports_a_cli_module():
    graph = import_graph()
    for module, targets in graph.items():
        if module == "benchmarks.__main__":  # an entry point (python -m benchmarks), like experiment_runner.py
            continue
        if module.startswith("benchmarks.common."):
            assert all(t.startswith("benchmarks.common") for t in targets), (module, targets)
        clis = {t for t in targets if t.endswith(".cli") and t.rpartition(".")[0] != module.rpartition(".")[0]}
        assert not clis, f"{module} imports another tool's command line {clis}"


def _imports_of(package: str, graph: dict) -> dict:
    """Module of `package` -> the library modules it imports (function-level imports included)."""
    return {module: targets for module, targets in graph.items() if module.startswith(package + ".")}


def _outside(targets, *allowed) -> set:
    """The targets outside `allowed`; a tool package itself (`from benchmarks.child import backends` names
    it too) holds only a docstring and counts for nothing, but the suites' interface does."""
    packages = {f"benchmarks.{p.name}" for p in LIBRARY.iterdir() if (p / "__init__.py").exists()}
    return {t for t in targets if not any(t == a or t.startswith(a + ".") for a in allowed)
            and (t not in packages or t == "benchmarks.suites")}


# What each tool folder may import from the library (docs/architecture.md, "Layout"). The runner is the
# parent and the child its single-config process: neither imports the other; only the entry point
# (benchmarks/__main__.py) knows both.
ALLOWED_IMPORTS = {
    "benchmarks.common": ("benchmarks.common",),
    "benchmarks.suites": ("benchmarks.suites", "benchmarks.common", "benchmarks.child.backends"),
    "benchmarks.runner": ("benchmarks.runner", "benchmarks.common", "benchmarks.suites"),
    "benchmarks.child": ("benchmarks.child", "benchmarks.common", "benchmarks.suites"),
    "benchmarks.analyzer": ("benchmarks.analyzer", "benchmarks.common"),
    "benchmarks.aggregate": ("benchmarks.aggregate", "benchmarks.common"),
    "benchmarks.compare": ("benchmarks.compare", "benchmarks.common"),
    # history reuses compare's pairing and statistics (never its cli: see the test below), and its site
    # aggregate's page look (html_report's STYLE and esc: one look for every page)
    "benchmarks.history": ("benchmarks.history", "benchmarks.common", "benchmarks.compare",
                           "benchmarks.aggregate.html_report"),
}


def test_every_tool_folder_imports_only_what_the_layout_allows():
    graph = import_graph()
    folders = {p.name for p in LIBRARY.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert {f"benchmarks.{f}" for f in folders} == set(ALLOWED_IMPORTS), "a tool folder without its rule"
    for package, allowed in ALLOWED_IMPORTS.items():
        for module, targets in _imports_of(package, graph).items():
            assert not _outside(targets, *allowed), f"{module} imports {_outside(targets, *allowed)}"


def test_the_parent_never_imports_the_child_nor_the_child_the_parent():
    graph = import_graph()
    for module, targets in _imports_of("benchmarks.runner", graph).items():
        assert not {t for t in targets if t.startswith("benchmarks.child")}, (module, targets)
    for module, targets in _imports_of("benchmarks.child", graph).items():
        assert not {t for t in targets if t.startswith("benchmarks.runner")}, (module, targets)


def test_the_layout_rule_catches_a_function_level_import_of_the_child(tmp_path):
    package = tmp_path / "benchmarks"
    for sub in ("runner", "child"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "child" / "single_config.py").write_text("")
    (package / "runner" / "cli.py").write_text("def run():\n    from benchmarks.child import single_config\n")
    targets = import_graph(package)["benchmarks.runner.cli"]
    assert _outside(targets, *ALLOWED_IMPORTS["benchmarks.runner"]) == {"benchmarks.child.single_config"}


def test_few_modules_at_the_top_of_the_library():
    top = sorted(p.name for p in LIBRARY.glob("*.py"))
    assert top == ["__main__.py"], top
    assert {p.name for p in LIBRARY.iterdir() if p.is_dir() and not p.name.startswith("__")} >= {
        "common", "runner", "child", "suites", "analyzer", "aggregate"}
