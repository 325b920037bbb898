"""The recipe of docs/architecture.md, "Adding a matrix axis": a new axis is one feature folder (its declaration,
and its child half where it does something in the child) plus its tests, with no edit anywhere else. Two throwaway
features, a switch and a valued axis, are written OUTSIDE the checkout (a temporary folder that a sitecustomize
adds to benchmarks.features' path in every process started with it on PYTHONPATH: the tools, and the children a
sweep starts); the tools must show them in their flags, the labels, the fingerprint, the slug and the selection
flags, and the valued axis's child hook must run in a real sweep and change the record. Nothing is written into the
repository, so nothing is to undo there."""

import json
import subprocess

import pytest
from helpers import PYTHON, ROOT, env_with_package_folder, read_jsonl, run_runner

from benchmarks import features
from benchmarks.config import axes
from scripts.upkeep import generated_docs

SWITCH_FEATURE = '''"""A throwaway switch (tests/features/test_feature_recipe.py)."""
from benchmarks.config.axis import SWITCH, Axis

AXES = (Axis("throwaway_switch", "a throwaway switch of the recipe test", kind=SWITCH),)
'''
VALUED_FEATURE = '''"""A throwaway valued axis (tests/features/test_feature_recipe.py): a positive count, null by default."""
from benchmarks.config.axis import Axis, flag_type
from benchmarks.config.record_key import RecordKey, feature


def parse(value):
    if value is None:
        return None
    number = int(value)
    if number < 1:
        raise ValueError(f"throwaway_level must be a positive integer, not {value!r}")
    return number


AXES = (Axis("throwaway_level", "a throwaway valued axis of the recipe test", parse=parse, type=flag_type(parse),
             metavar="N", label="level{}", slug="level{}", example=3, record_type="count",
             meaning="a throwaway level"),)
RECORD_KEYS = (RecordKey("throwaway_level_seen", "object", feature("throwaway_level"), "what the hook saw"),)
'''
VALUED_CHILD = '''"""The throwaway valued axis in the child: its hook writes what it saw into the record."""
from benchmarks.child.config_hooks import Hook, HookRun


class Seen(Hook):
    def __init__(self, value):
        self.value = value

    def setup(self, run: HookRun) -> None:
        import torch

        run.record["throwaway_level_seen"] = {"value": self.value, "torch": torch.__version__ is not None}
        if self.value == 2:  # a key its declaration lacks: refused in strict mode, else warned naming this feature
            run.record["throwaway_level_undeclared"] = True


def hook_for(value, experiment):
    return Seen(value) if value else None
'''
# What the tools show of the two axes, printed as one JSON object by a process that has them.
PROBE = '''
import contextlib, io, json
from benchmarks import __main__ as runner
from benchmarks.aggregate import cli as aggregate_cli
from benchmarks.compare import cli as compare_cli
from benchmarks.config import axes
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.history import cli as history_cli
from benchmarks.results import records
from benchmarks.results.measurement import Measurement


def printed(main, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(list(args))
        except SystemExit:
            pass
    return out.getvalue()


model = {"model_name": "mlp", "suite_name": "dummy"}
plain = ExperimentConfig("cpu", None, None, "eval")
both = plain.with_(throwaway_switch=True, throwaway_level=3)
record = {"model": model, "experiment": both.to_dict(), "metrics": {"per_iter_time": [1.0]}, "status": "ok"}
print(json.dumps({
    "keys": list(axes.KEYS),
    "runner_help": printed(runner.main, "--help-all"),
    "dry_run": printed(runner.main, "--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None",
                       "--dynamo=None", "--test=eval", "--throwaway-switch", "--throwaway-level=3", "--dry-run"),
    "fingerprints": [records.fingerprint(model, e.to_dict(), None, False) for e in (plain, both)],
    "slug": both.slug(),
    "label": Measurement(record).backend_label(),
    "selection_help": {name: printed(cli.main, *args, "--help-all") for name, cli, args in
                       (("aggregate", aggregate_cli, ()), ("compare", compare_cli, ()),
                        ("history", history_cli, ("show",)))},
}))
'''


@pytest.fixture
def throwaway(tmp_path):
    """A folder of two throwaway features and a sitecustomize that puts it on benchmarks.features' path; the
    environment that makes every process see them."""
    extra = tmp_path / "features"
    clash = {"throwaway_switch", "throwaway_level"} & set(features.names())
    assert not clash, f"a real feature is named {clash}: this test's throwaway features take those names; rename it"
    for name, files in (("throwaway_switch", {"__init__.py": SWITCH_FEATURE}),
                        ("throwaway_level", {"__init__.py": VALUED_FEATURE, "child.py": VALUED_CHILD})):
        (extra / name).mkdir(parents=True)
        for file, text in files.items():
            (extra / name / file).write_text(text, encoding="utf-8")
    return env_with_package_folder(tmp_path, "benchmarks.features", extra)


@pytest.mark.process
def test_a_throwaway_feature_folder_is_an_axis_in_every_tool(throwaway):
    found = subprocess.run([PYTHON, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, env=throwaway, timeout=300)
    assert found.returncode == 0, found.stderr
    shown = json.loads(found.stdout)
    # the throwaway features declare no ORDER: after every feature that does, by feature name
    assert shown["keys"] == [*axes.KEYS, "throwaway_level", "throwaway_switch"]
    assert "--throwaway-switch" in shown["runner_help"] and "--throwaway-level" in shown["runner_help"]
    assert '"throwaway_switch": true' in shown["dry_run"] and '"throwaway_level": 3' in shown["dry_run"]
    plain, both = shown["fingerprints"]
    assert plain != both and "throwaway" in both and "throwaway" not in plain  # at their defaults: the old text
    assert shown["slug"].endswith("-level3-throwaway-switch")
    assert shown["label"] == "eager[level3,throwaway-switch]"
    for tool, text in shown["selection_help"].items():
        assert "--throwaway-switch" in text and "--throwaway-level" in text, tool


# The experiment keys in the order records have been written with since they existed: the features' ORDER keeps it.
RECORDS_KEY_ORDER = ("quantization", "precision", "dynamic", "compile_mode", "inductor_config", "compile_cache",
                     "train_step", "speedup", "allocator", "cpu_profile", "cuda_profile", "channels_last",
                     "matmul_precision", "deterministic", "batch_invariant", "aot_precompile", "prompt_tokens",
                     "new_tokens", "generation_compile")


def test_each_feature_declares_its_own_order_and_the_keys_follow_it():
    orders = {name: getattr(features.declaration(name), "ORDER", None) for name in features.names()}
    assert all(isinstance(order, int) for order in orders.values()), orders
    assert len(set(orders.values())) == len(orders), f"two features share an ORDER: {orders}"
    by_order = sorted(orders, key=orders.get)
    assert axes.KEYS == tuple(axis.key for name in by_order for axis in features.declaration(name).AXES)
    assert all(axis.feature in features.names() for axis in axes.AXES)


def test_the_declared_orders_keep_the_records_key_order():
    assert axes.KEYS[: len(RECORDS_KEY_ORDER)] == RECORDS_KEY_ORDER


@pytest.mark.integration
def test_a_throwaway_features_child_hook_runs_in_a_real_sweep(throwaway, tmp_path):
    out = tmp_path / "out"
    run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
               "--test=eval", "--throwaway-level=3", "--throwaway-level=1", "--repeat=1", "--iterations-per-run=1",
               f"--output-dirname={out}", env=throwaway, check_rc=0)
    seen = {r["experiment"]["throwaway_level"]: r.get("throwaway_level_seen") for r in read_jsonl(out / "results.jsonl")}
    assert seen == {3: {"value": 3, "torch": True}, 1: {"value": 1, "torch": True}}


@pytest.mark.integration
def test_a_key_a_features_child_sets_undeclared_is_written_with_a_warning_naming_that_feature(throwaway, tmp_path):
    # a user's sweep (not strict): the child keeps the key, and hands the parent, beside the record, which feature's
    # code set it, so the parent's warning names that feature's RECORD_KEYS, not any feature's
    out = tmp_path / "out"
    run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
               "--test=eval", "--throwaway-level=2", "--repeat=1", "--iterations-per-run=1", f"--output-dirname={out}",
               env=dict(throwaway, BENCHMARKS_STRICT_RECORDS="0"), check_rc=0)
    (record,) = read_jsonl(out / "results.jsonl")
    assert record["status"] == "ok" and record["throwaway_level_undeclared"] is True
    assert ("record schema: throwaway_level_undeclared is not declared (set by the code of feature throwaway_level: "
            "declare it in the RECORD_KEYS of benchmarks/features/throwaway_level/__init__.py)") in record["warnings"]


def test_the_docs_list_every_feature_and_axis_as_the_table_has_them():
    """architecture.md's features table and record-schema.md are what the discovery makes (`make docs`)."""
    assert not generated_docs.stale(), f"generated docs are stale: run {generated_docs.COMMAND}"


def test_a_stale_features_table_is_found_and_made_anew():
    text = generated_docs.ARCHITECTURE.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `channels_last` |"))
    stale = text.replace(row + "\n", "")
    assert stale != text and generated_docs.with_features_table(stale) == text


def test_a_feature_with_a_hook_declares_one_axis():
    from benchmarks.child.feature_methods import feature_child

    for name in features.names():
        child = feature_child(name)
        if child is not None and hasattr(child, "hook_for"):
            assert len(features.declaration(name).AXES) == 1, name
