"""child/config_hooks.py's HookRun, the typed interface of a hook: every hook (here, in generation_verify and in
each feature's child half, benchmarks/features/<name>/child.py) reads only the attributes of the run it declares and
sets only MAY_SET; the config's run (config_run.ConfigRun) has every one of them."""

import ast

from helpers import ROOT, source_nodes

from benchmarks.child import config_hooks

LIBRARY = ROOT / "benchmarks"
DECLARED = set(config_hooks.HookRun.__annotations__)


def hook_files() -> list:
    """The modules that define a Hook: config_hooks itself, the features' child halves, and any other."""
    found = []
    for path in sorted(LIBRARY.rglob("*.py")):
        classes = [n for n in source_nodes(path) if isinstance(n, ast.ClassDef)]
        if any(ast.unparse(base).endswith("Hook") for c in classes for base in c.bases) or path.name == "config_hooks.py":
            found.append(path)
    return found


def strays(source: str) -> list:
    """What a module's functions do with a parameter named `run` outside HookRun: an attribute read it does not
    declare, a set outside MAY_SET, or the run handed to getattr/setattr/vars (which would hide the name)."""
    found = []
    for function in [n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        if "run" not in [a.arg for a in function.args.args + function.args.kwonlyargs]:
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "run":
                if isinstance(node.ctx, ast.Store) and node.attr not in config_hooks.MAY_SET:
                    found.append(f"{function.name}:{node.lineno}: sets run.{node.attr}")
                elif node.attr not in DECLARED:
                    found.append(f"{function.name}:{node.lineno}: reads run.{node.attr}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "setattr", "vars", "delattr") \
                    and any(isinstance(a, ast.Name) and a.id == "run" for a in node.args):
                found.append(f"{function.name}:{node.lineno}: {node.func.id}(run, ...)")
    return found


def test_every_hook_touches_only_what_hookrun_declares():
    files = hook_files()
    names = {str(path.relative_to(LIBRARY)) for path in files}
    assert {"child/config_hooks.py", "features/channels_last/child.py", "features/speedup/child.py"} <= names
    found = {str(path.relative_to(LIBRARY)): strays(path.read_text(encoding="utf-8")) for path in files}
    assert not {name: lines for name, lines in found.items() if lines}


def test_every_hook_method_takes_a_hookrun():
    """The hooks say so in their signatures: every `run` parameter of a hook module is annotated HookRun."""
    unannotated = []
    for path in hook_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                for arg in node.args.args:
                    if arg.arg == "run" and (arg.annotation is None or ast.unparse(arg.annotation) != "HookRun"):
                        unannotated.append(f"{path.relative_to(LIBRARY)}:{node.lineno}")
    assert not unannotated


def test_the_check_catches_an_undeclared_read_a_set_and_a_hidden_name():
    source = ("def check(self, run):\n    run.suite.load()\n    run.record['x'] = 1\n    run.step = None\n"
              "    getattr(run, 'gpu')\n    run.exported = 1\n")
    assert sorted(strays(source)) == ["check:2: reads run.suite", "check:4: sets run.step", "check:5: getattr(run, ...)"]


def test_the_config_run_has_everything_hookrun_declares():
    """config_run.ConfigRun is what hooks are handed: each declared name is one of its methods or set on it."""
    tree = ast.parse((LIBRARY / "child" / "config_run.py").read_text(encoding="utf-8"))
    run_class = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ConfigRun")
    methods = {n.name for n in run_class.body if isinstance(n, ast.FunctionDef)}
    assigned = {t.attr for n in ast.walk(run_class) if isinstance(n, ast.Assign) for target in n.targets
                for t in ast.walk(target) if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                and t.value.id == "self"}
    assert DECLARED - methods - assigned == set()
    assert set(config_hooks.MAY_SET) <= DECLARED
