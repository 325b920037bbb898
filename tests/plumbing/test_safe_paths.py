"""safe_name and inside: names made safe once, and no path that leaves its root (docs/architecture.md)."""

import os

import pytest

from benchmarks.plumbing.safe_paths import MAX_NAME, PathEscapes, inside, safe_name


@pytest.mark.parametrize("text", ["..", ".", "...", "a/../b", "../../etc/passwd", "", "/", "x\\..\\y", ".hidden",
                                  "a..b", "\x00", "é" * 300, "a" * 500])
def test_safe_name_is_one_harmless_component(text):
    name = safe_name(text)
    assert name and ".." not in name and os.sep not in name and "/" not in name
    assert not name.startswith(".") and len(name) <= MAX_NAME
    assert os.path.normpath(os.path.join("out", name)).startswith("out" + os.sep)


def test_safe_name_is_stable_and_keeps_ordinary_names():
    assert safe_name("resnet18") == "resnet18"
    assert safe_name("bert-base_uncased.v1=2") == "bert-base_uncased.v1=2"
    # a name that had to change keeps its readable part and ends with its hash, so it can't meet a safe one
    assert safe_name("a b/c") == "a_b_c-fa4fb713" and safe_name("a_b_c") == "a_b_c"
    assert safe_name("..") == safe_name("..") == "__-9d891e73"
    # two long names that share their first MAX_NAME characters stay apart
    assert safe_name("a" * 200 + "x") != safe_name("a" * 200 + "y")


def test_inside_resolves_under_the_root(tmp_path):
    assert inside(str(tmp_path), "logs/m/c.log") == os.path.join(os.path.realpath(tmp_path), "logs", "m", "c.log")
    assert inside(str(tmp_path), ".") == os.path.realpath(tmp_path)


@pytest.mark.parametrize("relative", ["..", "../x", "a/../../x", "/etc/passwd"])
def test_inside_refuses_what_leaves_the_root(tmp_path, relative):
    with pytest.raises(PathEscapes) as caught:
        inside(str(tmp_path / "out"), relative)
    assert str(tmp_path / "out") in str(caught.value) and relative in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_inside_follows_links_that_point_out(tmp_path):
    (tmp_path / "out").mkdir()
    os.symlink(str(tmp_path), str(tmp_path / "out" / "link"))
    with pytest.raises(PathEscapes):
        inside(str(tmp_path / "out"), "link/secret")
    # a sibling whose name starts with the root's is still outside
    with pytest.raises(PathEscapes):
        inside(str(tmp_path / "out"), "../out2/x")


# ---------------------------------------------------------------- every writer's path stays under the output dir

from benchmarks.config.experiment_config import ExperimentConfig  # noqa: E402
from benchmarks.config.process_env import child_environment  # noqa: E402
from benchmarks.config.run_options import RunOptions  # noqa: E402
from benchmarks.plumbing import safe_paths  # noqa: E402

EVIL_MODELS = [{"suite_name": "files", "model_name": name} for name in ("..", ".", "...py", "../../x", "/etc", "")]
XLA = ExperimentConfig.from_dict({"accelerator": "cpu", "xla": "PJRT", "dynamo": None, "test": "eval"})


def options_for(out, **diagnostics):
    options = RunOptions(output_dirname=str(out))
    return options.with_(diagnostics=options.diagnostics.__class__(**diagnostics)) if diagnostics else options


def assert_under(path, out):
    real, root = os.path.realpath(path), os.path.realpath(out)
    assert real.startswith(root + os.sep), f"{path} leaves {out}"


@pytest.mark.parametrize("model", EVIL_MODELS, ids=lambda m: repr(m["model_name"]))
def test_the_log_of_any_model_name_is_under_the_output_dir(tmp_path, model):
    assert_under(safe_paths.log_path(str(tmp_path / "out"), model, XLA), tmp_path / "out")
    assert_under(safe_paths.log_path(str(tmp_path / "out"), model, XLA, round_index=2), tmp_path / "out")


@pytest.mark.parametrize("model", EVIL_MODELS, ids=lambda m: repr(m["model_name"]))
def test_artifacts_and_diagnostics_of_any_model_name_are_under_the_output_dir(tmp_path, model):
    out = tmp_path / "out"
    for kind, ext, repeat in (("output", "pt", 0), ("trace", "json", 1), ("dynamo-counters", "json", None),
                              ("xla-profile", "", None), ("aoti-package", "pt2", None)):
        path = safe_paths.artifact_file(str(out), model, XLA, kind, ext, repeat)
        assert_under(path, out)
        assert os.path.basename(path).startswith(kind + "-")


@pytest.mark.parametrize("model", EVIL_MODELS, ids=lambda m: repr(m["model_name"]))
def test_xla_dumps_of_any_model_name_are_under_the_output_dir(tmp_path, model):
    out = tmp_path / "out"
    options = options_for(out, dump_hlo=True, save_ir_format="text")
    assert_under(safe_paths.hlo_dir(str(out), model, XLA), out)
    assert_under(safe_paths.ir_file(str(out), model, XLA, "text"), out)
    env = child_environment(XLA, options, {}, model)
    paths = [word.split("=", 1)[-1] for value in env.values() for word in value.split()]
    paths = [path for path in paths if os.path.isabs(path)]
    assert len(paths) == 2, env  # the HLO dump directory and the IR file, both given to torch_xla
    for path in paths:
        assert_under(path, out)


def test_a_link_out_of_the_output_dir_is_refused_before_anything_is_written(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    os.symlink(str(elsewhere), str(out / "logs"))
    with pytest.raises(PathEscapes):
        safe_paths.log_path(str(out), {"model_name": "m"}, XLA)
    with pytest.raises(PathEscapes):
        safe_paths.under(str(out), "../results.jsonl")
    assert list(elsewhere.iterdir()) == []
