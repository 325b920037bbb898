"""Which torch the project runs on (benchmarks/plumbing/torch_support.py): the floor, its one-line refusal at the start
of a sweep or of a config by hand (never a traceback mid-sweep), the package's ranges, and torch-xla's pairing."""

import json
import os
import re
import tomllib

import pytest

from benchmarks.plumbing import torch_support
from helpers import ROOT, run_runner


def test_release_reads_every_kind_of_torch_version():
    assert torch_support.release("2.9.1") == (2, 9, 1)
    assert torch_support.release("2.14.1+cu130") == (2, 14, 1)
    assert torch_support.release("2.15.0.dev20261001+cpu") == (2, 15, 0)
    assert torch_support.release("2.15.0a0+git1234abc") == (2, 15, 0)
    assert torch_support.release("2.10") == (2, 10, 0)
    assert torch_support.release("nightly") is None and torch_support.release(None) is None


def test_the_floor_refuses_older_torch_only():
    for fine in ("2.9.1", "2.9.1+cu128", "2.10.0", "2.14.1+cu130", "2.15.0.dev20261001", "3.0.0a0+gitabc", "local"):
        assert torch_support.unsupported_reason(fine) is None, fine
    reason = torch_support.unsupported_reason("2.8.0+cpu")
    assert reason.startswith("torch 2.8.0+cpu is older than 2.9.1, the oldest this project supports and tests")
    assert "pip install 'torch>=2.9.1'" in reason and "\n" not in reason
    assert torch_support.unsupported_reason("2.9.0").startswith("torch 2.9.0 is older than 2.9.1")  # a patch below


def test_the_package_requires_the_floor_as_a_range_and_pins_nothing():
    """pip install -e . leaves a supported torch as it is: every requirement is a range (or bare), and torch's and
    torchvision's floors are the ones the runner checks."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    pins = [r for r in requirements if re.search(r"===?\s*[\d.]", r.split(";")[0])]
    assert not pins, f"a pin in the package's requirements replaces users' packages: {pins}"
    assert f"torch>={torch_support.TORCH_FLOOR}" in project["dependencies"]
    assert f"torchvision>={torch_support.TORCHVISION_FLOOR}" in project["dependencies"]
    lock = (ROOT / "requirements.txt").read_text()
    assert f"torch=={torch_support.TORCH_FLOOR}\n" in lock and f"torchvision=={torch_support.TORCHVISION_FLOOR}\n" in lock


def fake_torch(root, version, with_version_file=True):
    """A folder holding a package named torch that says `version` and can't be imported (so a test proves that the
    version was read without importing it)."""
    package = root / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('this torch must not be imported')\n")
    if with_version_file:
        (package / "version.py").write_text(f"__version__ = '{version}'\ngit_version = 'abc'\n")
    return root


def test_the_installed_version_is_read_without_importing_torch(tmp_path):
    folder = fake_torch(tmp_path / "site", "2.15.0a0+gitdeadbee")
    assert torch_support.installed_torch([str(folder)]) == ("2.15.0a0+gitdeadbee", str(folder / "torch"))
    assert torch_support.environment_problem([str(folder)]) is None
    old = fake_torch(tmp_path / "old", "2.7.1")
    assert torch_support.environment_problem([str(old)]).startswith("torch 2.7.1 is older than 2.9.1")
    assert torch_support.environment_problem([str(tmp_path / "empty")]).startswith("torch is not installed for ")
    # a torch without its version file, whose version can't be told: let through (the probe's answer is checked)
    assert torch_support.environment_problem([str(fake_torch(tmp_path / "bare", "", with_version_file=False))]) is None


def test_torch_xla_pairs_only_with_its_own_torch_release():
    assert torch_support.xla_pairing_problem("2.9.1+cu128", "2.9.0") is None
    assert torch_support.xla_pairing_problem("2.14.1", None) is None
    assert torch_support.xla_pairing_problem("2.14.1+cu130", "2.9.0") == (
        "torch-xla 2.9.0 pairs only with torch 2.9, and this environment has torch 2.14.1+cu130")


@pytest.mark.process  # what the tool's own process does in an environment whose torch is too old
def test_a_torch_below_the_floor_is_one_line_and_exit_2_before_anything_starts(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(fake_torch(tmp_path / "site", "2.8.0+cpu")), BENCHMARKS_PROBE_CACHE="off")
    out = tmp_path / "out"
    sweep = run_runner("--suite-name=dummy", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=inductor",
                       f"--output-dirname={out}", env=env, check_rc=2)
    assert sweep.stderr.strip().splitlines() == [
        f"experiment_runner.py: error: {torch_support.unsupported_reason('2.8.0+cpu')}"]
    assert not out.exists(), "a refused sweep writes nothing"
    by_hand = run_runner("--model-config=" + json.dumps({"suite_name": "dummy", "model_name": "mlp"}),
                         "--experiment-config=" + json.dumps({"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval"}),
                         f"--output-dirname={out}", env=env, check_rc=2)
    assert re.fullmatch(r"experiment_runner\.py: error: torch 2\.8\.0\+cpu is older than 2\.9\.1.*",
                        by_hand.stderr.strip())
    assert "Traceback" not in sweep.stderr + by_hand.stderr
