"""The library's shape (docs/architecture.md, "Layout"): imports run one way, with no circle, the shared layers
(plumbing/, config/, results/) each import only those below them, no module name stands in two folders, and only
a handful of modules stay at the top of benchmarks/."""

import ast
import collections
import graphlib
import re
import tomllib
from pathlib import Path

from helpers import ROOT, source_nodes

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
        for node in source_nodes(path):
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
    assert "benchmarks.results.records" in order


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


# The shared layers, bottom up: each imports only itself and those below it, never a tool. The features'
# declarations (benchmarks/features/<name>/__init__.py) are of the config layer: config/axes.py gathers them.
SHARED = ("benchmarks.plumbing", "benchmarks.config", "benchmarks.results")
FEATURES = "benchmarks.features"


def is_feature_child(module: str) -> bool:
    """A feature's child half (benchmarks.features.<name>.child): child-layer code beside its declaration."""
    parts = module.split(".")
    return len(parts) == 4 and module.startswith(FEATURES + ".") and parts[3] == "child"


def is_feature_declaration(module: str) -> bool:
    return (module == FEATURES or module.startswith(FEATURES + ".")) and not is_feature_child(module)


def _shared_layer(name: str) -> int:
    """The shared layer a module (or an import target) is of, or -1 for none (a tool, a feature's child half)."""
    if is_feature_declaration(name):
        return SHARED.index("benchmarks.config")
    return next((level for level, layer in enumerate(SHARED) if name == layer or name.startswith(layer + ".")), -1)


def test_a_shared_layer_imports_no_tool_nor_a_layer_above_it_and_no_tool_imports_a_cli_module():
    graph = import_graph()
    for module, targets in graph.items():
        if module == "benchmarks.__main__":  # an entry point (python -m benchmarks), like experiment_runner.py
            continue
        level = _shared_layer(module)
        if level >= 0:
            assert all(0 <= _shared_layer(t) <= level for t in targets), (module, targets, SHARED[: level + 1])
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


# The fork server's parent half: what the runner may use of benchmarks/fork_server/ (the zygote is its child half).
FORK_SERVER_PARENT_HALF = ("benchmarks.fork_server.client", "benchmarks.fork_server.node_servers",
                           "benchmarks.fork_server.protocol")
FORK_SERVER_CHILD_HALF = "benchmarks.fork_server.zygote"


# What each tool folder may import from the library (docs/architecture.md, "Layout"). The runner is the
# parent and the child its single-config process: neither imports the other; only the entry point
# (benchmarks/__main__.py) knows both.
ALLOWED_IMPORTS = {
    "benchmarks.plumbing": ("benchmarks.plumbing",),
    # the features' declarations are of the config layer (config/axes.py gathers them); their child halves are
    # held apart below (test_a_feature_is_a_config_layer_declaration_and_a_child_layer_child_half)
    "benchmarks.config": ("benchmarks.config", "benchmarks.plumbing", FEATURES),
    "benchmarks.results": ("benchmarks.results", "benchmarks.config", "benchmarks.plumbing", FEATURES),
    # a suite builds models: it reads the config, never a record
    "benchmarks.suites": ("benchmarks.suites", "benchmarks.config", "benchmarks.plumbing", FEATURES),
    "benchmarks.runner": ("benchmarks.runner", *SHARED, FEATURES, "benchmarks.suites", *FORK_SERVER_PARENT_HALF),
    "benchmarks.child": ("benchmarks.child", *SHARED, FEATURES, "benchmarks.suites"),
    # a declaration: plumbing, config and other declarations; a child half: what the child's own modules may
    "benchmarks.features": ("benchmarks.child", *SHARED, FEATURES, "benchmarks.suites"),
    # the fork server, one package of two halves (their own rule below): the parent's starts, asks and stops servers
    # (the runner launches children through them: runner/forked_launch.py); the child's (the zygote) reads torch
    # through the child's guard
    "benchmarks.fork_server": ("benchmarks.fork_server", *SHARED, FEATURES, "benchmarks.suites",
                               "benchmarks.child.torch_internals"),
    "benchmarks.analyzer": ("benchmarks.analyzer", *SHARED, FEATURES),
    "benchmarks.aggregate": ("benchmarks.aggregate", *SHARED, FEATURES),
    "benchmarks.compare": ("benchmarks.compare", *SHARED, FEATURES),
    # history reuses compare's pairing and statistics (never its cli: see the test below)
    "benchmarks.history": ("benchmarks.history", *SHARED, FEATURES, "benchmarks.compare"),
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
        assert not {t for t in targets if t.startswith("benchmarks.child") or is_feature_child(t)}, (module, targets)
    children = {m: t for m, t in graph.items() if m.startswith("benchmarks.child.") or is_feature_child(m)}
    for module, targets in children.items():
        assert not {t for t in targets if t.startswith("benchmarks.runner")}, (module, targets)


def test_a_feature_is_a_config_layer_declaration_and_a_child_layer_child_half():
    """benchmarks/features/<name>/ (docs/architecture.md, "Adding a matrix axis"): its declaration imports only
    plumbing, config and other declarations, never torch (the parent plans with it); its child half imports torch
    inside its functions only; only the child (benchmarks/child/ and the features' child halves) imports a child
    half, so no runner, config, results or reporting module does."""
    graph = import_graph()
    features = [p for p in (LIBRARY / "features").iterdir() if (p / "__init__.py").exists()]
    assert features, "no feature found"
    for module, targets in graph.items():
        if is_feature_declaration(module):
            assert all(t.startswith(("benchmarks.plumbing", "benchmarks.config")) or is_feature_declaration(t)
                       for t in targets), (module, targets)
        if not (module.startswith("benchmarks.child.") or is_feature_child(module)):
            assert not {t for t in targets if is_feature_child(t)}, f"{module} imports a feature's child half"
    for path in (LIBRARY / "features").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        everywhere = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        torch = {n.lineno for n in (top if path.name == "child.py" else everywhere)
                 if any(name.split(".")[0] == "torch" for name in _imported_names(n))}
        assert not torch, f"{path.relative_to(ROOT)} imports torch at lines {sorted(torch)}"


def _imported_names(node) -> list:
    return [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]


def test_the_fork_server_halves_keep_to_their_sides():
    """benchmarks/fork_server/: the parent's half (every module but the zygote) imports nothing of the child, and
    nothing of the parent (runner/, the parent's half) imports the zygote, which the parent starts by name
    (`python -m`); the zygote imports no runner nor the parent's half, only the messages they share; the runner
    may use the parent's half, the child may not (it would be the runner's)."""
    graph = import_graph()
    parent = {m: t for m, t in _imports_of("benchmarks.fork_server", graph).items() if m != FORK_SERVER_CHILD_HALF}
    assert set(parent) == set(FORK_SERVER_PARENT_HALF) and FORK_SERVER_CHILD_HALF in graph
    for module, targets in {**parent, **_imports_of("benchmarks.runner", graph)}.items():
        assert not {t for t in targets if t.startswith("benchmarks.child") or t == FORK_SERVER_CHILD_HALF}, module
    for module in parent:
        path = LIBRARY.parent / (module.replace(".", "/") + ".py")
        names = {alias.name for node in source_nodes(path) if isinstance(node, ast.Import) for alias in node.names}
        names |= {node.module for node in source_nodes(path) if isinstance(node, ast.ImportFrom) and node.module}
        assert not {n for n in names if n.split(".")[0] in ("torch", "torch_xla")}, f"{module} imports torch"
    zygote = graph[FORK_SERVER_CHILD_HALF]
    shared = "benchmarks.fork_server.protocol"  # the messages: both halves name them
    assert not {t for t in zygote if t.startswith("benchmarks.runner") or (t in parent and t != shared)}, zygote
    for module, targets in _imports_of("benchmarks.child", graph).items():
        assert not {t for t in targets if t.startswith("benchmarks.fork_server")}, (module, targets)


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
        "plumbing", "config", "results", "runner", "child", "suites", "analyzer", "aggregate", "features"}


def test_no_module_name_stands_in_two_folders():
    """A module's name says which one it is without its folder (no `precision as precisions` aliases); only each
    tool's cli.py, the packages' __init__.py and each feature's child half (features/<name>/child.py) repeat."""
    folders = collections.defaultdict(list)
    for path in LIBRARY.rglob("*.py"):
        if path.name not in ("cli.py", "__init__.py") and not is_feature_child(module_name(path, LIBRARY.parent)):
            folders[path.name].append(str(path.parent.relative_to(ROOT)))
    assert not {name: where for name, where in folders.items() if len(where) > 1}


def _library_imports(path: Path) -> set:
    """The modules of the library (benchmarks...) that a file's import statements name, as written."""
    names = set()
    for node in source_nodes(path):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
    return {name for name in names if name.split(".")[0] == "benchmarks"}


def test_every_import_of_the_library_names_a_module_of_this_tree():
    """`benchmarks` has no __init__.py, so it is a namespace package: an import of a module this tree no longer has
    (one moved) could still be found in another checkout on the path (an editable install's). None may be."""
    known = {module_name(path, LIBRARY.parent) for path in LIBRARY.rglob("*.py")} | {"benchmarks"}
    files = [*LIBRARY.rglob("*.py"), *(ROOT / "scripts").rglob("*.py"), *ROOT.glob("*.py"),
             *(p for p in (ROOT / "tests").rglob("*.py") if "fixtures" not in p.parts)]
    dangling = {str(path.relative_to(ROOT)): sorted(_library_imports(path) - known) for path in files}
    assert not {path: names for path, names in dangling.items() if names}


def test_every_package_and_its_data_is_installed():
    """pyproject.toml finds every package folder (discovery, no hand list: a new package needs no edit there;
    tests/project/test_packaging.py builds the install), and its package data names every file that is not Python."""
    from setuptools import find_namespace_packages

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert isinstance(setuptools["packages"], dict), "a hand list: [tool.setuptools.packages.find] finds them"
    find = setuptools["packages"]["find"]
    found = set(find_namespace_packages(str(LIBRARY.parent), include=find["include"], exclude=find["exclude"]))
    packages = {module_name(path, LIBRARY.parent) for path in LIBRARY.rglob("__init__.py")} | {"benchmarks"}
    assert packages <= found and all(name.startswith("benchmarks") for name in found), found ^ packages
    patterns = setuptools["package-data"]["benchmarks"]
    data = {path for path in LIBRARY.rglob("*") if path.is_file() and path.suffix not in (".py", ".pyc", ".c", ".so")
            and "__pycache__" not in path.parts}
    assert data, "no package data found"
    unlisted = {str(path.relative_to(LIBRARY)) for path in data
                if not any(path.match(str(LIBRARY / pattern)) for pattern in patterns)}
    assert not unlisted, f"package data pyproject.toml does not install: {unlisted}"


# tests/: a folder per folder of the library, and these of their own (docs/architecture.md, "Tests").
TEST_FOLDERS_OF_THEIR_OWN = {
    "project": "rules over the whole repository: the layout, public names, one vocabulary, the README, the CLI "
               "conventions, the test helpers",
    "end_to_end": "whole sweeps and what crosses the tools: a real sweep, the first hour, a full disk, the GPU tier",
    "scripts": "the tools of scripts/",
    "fixtures": "inputs the tests read",
    "security": "untrusted input (issue #52): hostile results files, state files, symlinks; nothing runs or escapes",
}


def test_the_tests_mirror_the_library():
    tests = ROOT / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    library = {p.name for p in LIBRARY.iterdir() if (p / "__init__.py").exists()}
    assert folders == library | set(TEST_FOLDERS_OF_THEIR_OWN), folders ^ (library | set(TEST_FOLDERS_OF_THEIR_OWN))
    assert not list(tests.glob("test_*.py")), "a test file left at the top of tests/: put it in its code's folder"


def test_a_test_imports_another_test_module_only_from_its_own_folder():
    """pytest puts a test file's own folder on the import path (and conftest's, tests/, for helpers): a test module
    of another folder would import only where that folder's tests were collected first, never in a file run alone.
    What tests of several folders share is in helpers.py."""
    strays = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        for node in source_nodes(path):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            for name in names:
                if name.startswith("test_") and not (path.parent / f"{name}.py").is_file():
                    strays.add((str(path.relative_to(ROOT)), name))
    assert not strays


def test_the_scripts_are_packages_that_leave_the_import_path_alone():
    """scripts/ is packages by family, each tool run from the root as `python -m scripts.<family>.<tool>`: so no
    module there edits sys.path (they import `benchmarks` and each other plainly), and the library imports none."""
    scripts = ROOT / "scripts"
    assert {path.parent.name for path in scripts.glob("*/*.py")} == {"bench", "gpu", "parity", "upkeep"}
    assert [path.name for path in scripts.glob("*.py")] == ["__init__.py"]
    assert all((folder / "__init__.py").is_file() for folder in scripts.iterdir() if folder.is_dir()
               and folder.name != "__pycache__")
    edits = {str(path.relative_to(ROOT)) for path in scripts.rglob("*.py") for node in source_nodes(path)
             if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", None) == "sys"}
    assert not edits
    importers = {str(path.relative_to(ROOT)) for path in LIBRARY.rglob("*.py") for node in source_nodes(path)
                 if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "scripts" for a in node.names)
                 or isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "scripts"}
    assert not importers


def test_no_test_carries_its_own_script_loader():
    """A file outside any package (aggregate's golden runner) is loaded through helpers.load_script, the one loader;
    the tools of scripts/ are packages, imported."""
    loaders = {"spec_from_file_location", "module_from_spec", "run_path"}
    carriers = set()
    for path in (ROOT / "tests").rglob("*.py"):
        if "fixtures" in path.parts or path.name == "helpers.py":
            continue
        for node in source_nodes(path):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in loaders:
                carriers.add(str(path.relative_to(ROOT)))
    assert not carriers


def test_every_path_under_tests_that_is_named_exists():
    """The Makefile, the CI script, README.md, docs/, the scripts, the library and the tests (their fixtures too)
    name test files and folders (which to run, where a rule is checked): each one named is there (a glob: something
    matches it)."""
    named = ["Makefile", ".ci/run", "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "scripts").rglob("*.py"),
             *LIBRARY.rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    missing = set()
    for path in named:
        text = (ROOT / path).read_text(encoding="utf-8")
        for name in re.findall(r"\btests/[\w./*-]*[\w*]", text):
            if not list(ROOT.glob(name.rstrip("/"))):
                missing.add((str(Path(path).relative_to(ROOT) if Path(path).is_absolute() else path), name))
    assert not missing
