"""safe_name and inside: names made safe once, and no path that leaves its root (docs/architecture.md)."""

import os

import pytest

from benchmarks.common.safe_paths import MAX_NAME, PathEscapes, inside, safe_name


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
    assert safe_name("a b/c") == "a_b_c"
    assert safe_name("..") == safe_name("..") == "__"
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
