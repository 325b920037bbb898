"""A non-editable install carries every package of benchmarks/: pyproject.toml finds them (no hand list), so a
package added by anyone (a feature's folder, a backend's) is installed with no edit there. Built for real with
setuptools' build_py (what a wheel or `pip install .` copies) in a copy of the tree, with a package of the test's
own planted in it; scripts/ and tests/ stay out."""

import shutil
import subprocess

import pytest

from helpers import PYTHON, ROOT


def python_folders(top):
    """The folders under `top` that hold a module, as dotted names relative to top's parent."""
    return {".".join(path.parent.relative_to(top.parent).parts) for path in top.rglob("*.py")}


@pytest.mark.process  # setuptools' build, as an install runs it (about a second: no compile)
def test_a_built_install_carries_every_package_a_new_one_too_and_no_scripts(tmp_path):
    tree, built = tmp_path / "tree", tmp_path / "built"
    left_out = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info")  # as a clean clone has them
    for folder in ("benchmarks", "scripts"):
        shutil.copytree(ROOT / folder, tree / folder, ignore=left_out)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, tree)
    planted = tree / "benchmarks" / "planted_feature" / "inner"
    planted.mkdir(parents=True)
    for folder in (planted, planted.parent):
        (folder / "__init__.py").write_text('"""A package no list names."""\n')
    done = subprocess.run([PYTHON, "setup.py", "-q", "build_py", f"--build-lib={built}"], cwd=tree,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    packages = {".".join(path.parent.relative_to(tree).parts) for path in (tree / "benchmarks").rglob("__init__.py")}
    assert {"benchmarks.planted_feature", "benchmarks.planted_feature.inner"} <= packages
    assert python_folders(built / "benchmarks") == python_folders(tree / "benchmarks") == packages | {"benchmarks"}
    files = [{path.relative_to(top) for path in (top / "benchmarks").rglob("*") if path.is_file()}
             for top in (built, tree)]
    assert files[0] == files[1]  # every module and every file of package data
    assert sorted(path.name for path in built.iterdir()) == ["benchmarks"]
