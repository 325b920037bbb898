"""No function of the child or the parent (benchmarks/child/, benchmarks/runner/, benchmarks/fork_server/, their
packages included, and the features' child halves) is over 60 lines, counted from its `def` line to the last line of its body, its docstring and
comments included (decorators not): one config's path stays readable a screen at a time."""

import ast

from helpers import ROOT, source_nodes

FOLDERS = ("benchmarks/child", "benchmarks/runner", "benchmarks/fork_server")
MOST_LINES = 60


def long_functions(paths, most: int = MOST_LINES) -> dict:
    """'path:line name' -> lines, for every function (nested ones and methods too) of `paths` over `most` lines."""
    found = {}
    for path in paths:
        for node in source_nodes(path):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > most:
                    found[f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno} {node.name}"] = lines
    return found


def test_no_child_or_runner_function_is_over_60_lines():
    paths = [path for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]
    paths += sorted((ROOT / "benchmarks/features").glob("*/child.py"))
    assert len(paths) > 60, "the folders were not found"
    assert not long_functions(paths)


def test_a_long_function_is_found_with_its_docstring_counted(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(58))  # with the def and docstring: 60 lines
    module = tmp_path / "planted.py"
    module.write_text(f'@staticmethod\ndef long():\n    """A docstring."""\n{body}\n    return x0\n\n\n'
                      f'def short():\n    """A docstring."""\n{body}\n')
    assert long_functions([module]) == {f"{module}:2 long": 61}  # its return the 61st line; short is 60
    assert long_functions([module], most=59) == {f"{module}:2 long": 61, f"{module}:65 short": 60}
