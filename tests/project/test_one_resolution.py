"""A config is resolved in one place and its child's environment composed in one place (issue #53): the plan and a
config run by hand call Suite.resolve, never its parts; the parent composes a child's environment once per config
(runner/sweep.make_job) and a config by hand its own (child/process_start.environment_by_hand), the fork server its
server's through process_env.server_environment. A sweep's child asks for neither again."""

import ast
import collections

from helpers import ROOT, source_nodes

LIBRARY = ROOT / "benchmarks"


def callers(*names) -> dict:
    """Function or attribute name -> the (module path, enclosing function) pairs of benchmarks/ that call it (for
    `resolve`, only a suite's: `suite.resolve(...)`)."""
    found = collections.defaultdict(set)
    for path in LIBRARY.rglob("*.py"):
        for node in source_nodes(path):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for call in ast.walk(node):
                if isinstance(call, ast.Call):
                    name = getattr(call.func, "attr", getattr(call.func, "id", None))
                    receiver = getattr(getattr(call.func, "value", None), "id", "") or ""
                    if name == "resolve" and "suite" not in receiver:  # Path.resolve and the like
                        continue
                    if name in names:
                        found[name].add((str(path.relative_to(ROOT)), node.name))
    return found


def test_the_plan_and_a_config_by_hand_share_one_resolution_and_nothing_else_resolves():
    found = callers("resolve", "precision_for", "train_step_for", "experiment_for", "precision_reason")
    assert {where for where in found["resolve"] if not where[0].startswith("benchmarks/suites/")} == {
        ("benchmarks/runner/plan.py", "model_config"), ("benchmarks/child/config_run.py", "setup")}
    parts = {name: {where for where in found[name] if not where[0].startswith("benchmarks/suites/")}
             for name in ("precision_for", "train_step_for", "experiment_for", "precision_reason")}
    assert parts == dict.fromkeys(parts, set()), "a part of Suite.resolve called outside the suites"


def test_a_childs_environment_is_composed_once_by_the_parent_or_by_a_config_by_hand():
    found = callers("child_environment")["child_environment"]
    assert found == {("benchmarks/runner/sweep.py", "make_job"),
                     ("benchmarks/child/process_start.py", "environment_by_hand"),
                     ("benchmarks/config/process_env.py", "server_environment")}
