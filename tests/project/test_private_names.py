"""Modules meet at public names (docs/architecture.md, "Layout"): no module of the library, no test and no
script takes another module's underscore names, by `from ... import _x` or by `module._x`."""

import ast
from pathlib import Path

from helpers import ROOT, source_nodes


def private_uses(path: Path) -> list:
    """(line, text) of each underscore name of a `benchmarks` module that the file at `path` uses."""
    nodes = source_nodes(path)
    modules, found = set(), []  # the names this file binds to benchmarks modules
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update(alias.asname for alias in node.names if alias.asname and alias.name.startswith("benchmarks"))
    for node in nodes:
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return found


def test_no_module_uses_another_modules_private_names():
    files = [path for folder in ("benchmarks", "tests", "scripts") for path in sorted((ROOT / folder).rglob("*.py"))]
    found = {str(path.relative_to(ROOT)): uses for path in files if (uses := private_uses(path))}
    assert not found, found


def test_a_planted_private_use_is_found(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("from benchmarks.analyzer.cells import _matrix_rows, cell\n"
                       "from benchmarks.analyzer import pipeline\n"
                       "pipeline._REPORT = None\npipeline.analyze\n")
    assert private_uses(planted) == [(1, "from benchmarks.analyzer.cells import _matrix_rows"),
                                     (3, "pipeline._REPORT")]
