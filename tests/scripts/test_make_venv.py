"""`make env TORCH=...` (scripts/upkeep/make_venv.py, fast): what TORCH may name (a release, a requirement, a wheel, an
environment's Python or folder) and what is refused in one line; the lock's packages a chosen torch does not get; the
Makefile's recipe and its rebuild rule (make -n: nothing is installed from a test). The builds themselves are
`make test-torch-latest`'s first step (README.md, "Your own torch")."""

import re
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT

from scripts.upkeep import make_venv

MAKE = shutil.which("make")


def test_torch_names_a_release_a_requirement_a_wheel_or_an_environment(tmp_path):
    assert make_venv.torch_requirement("2.14.1") == "torch==2.14.1"
    assert make_venv.torch_requirement("2.15.0.dev20261001") == "torch==2.15.0.dev20261001"
    assert make_venv.torch_requirement("torch>=2.14") == "torch>=2.14"
    wheel = tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"")
    assert make_venv.torch_requirement(str(wheel)) == str(wheel)
    with pytest.raises(make_venv.Refused, match="no such wheel"):
        make_venv.torch_requirement(str(tmp_path / "missing.whl"))
    with pytest.raises(make_venv.Refused, match="not a release"):
        make_venv.torch_requirement("nightly please")
    # an environment, by its Python or its folder (a venv's bin/python)
    assert str(make_venv.named_environment(sys.executable)) == sys.executable
    venv = tmp_path / "env"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    assert make_venv.named_environment(str(venv)) == venv / "bin" / "python"
    assert make_venv.named_environment("2.14.1") is None and make_venv.named_environment(str(wheel)) is None


def test_a_refused_torch_is_one_line_and_exit_2(tmp_path, capsys):
    assert make_venv.main(["--venv", str(tmp_path / "v"), "--torch", "nightly please"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("make_venv: TORCH=nightly please: not a release") and err.count("\n") == 1
    assert not (tmp_path / "v").exists()


def test_a_chosen_torch_gets_the_locks_other_packages_but_not_torchs_pairs(tmp_path):
    out = tmp_path / "others.txt"
    make_venv.lock_without_torch(ROOT / "requirements.txt", out)
    kept = out.read_text()
    names = {line.split("==")[0].strip().lower() for line in kept.splitlines() if "==" in line and not
             line.lstrip().startswith("#")}
    assert not names & {"torch", "torchvision", "torch-xla", "torchao"}
    assert {"numpy", "pandas", "orjson", "pytest", "pytest-xdist", "transformers", "timm", "ray"} <= names
    assert 'intel-openmp==2026.2.0; platform_machine == "x86_64"' in kept  # markers kept as written


@pytest.mark.skipif(MAKE is None, reason="no make on this machine")
def test_make_env_with_torch_builds_its_own_venv_and_the_lock_stays_as_it_was():
    def dry(*args):
        done = subprocess.run([MAKE, "--no-print-directory", "-n", *args], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    chosen = dry("env", "TORCH=2.14.1", "VENV=/nonexistent/venv-x")
    assert "-m scripts.upkeep.make_venv --venv /nonexistent/venv-x --torch '2.14.1'" in chosen
    assert "-r requirements.txt" not in chosen  # the lock's torch never goes into it
    assert "-m scripts.upkeep.make_venv --venv .venv-torch --torch '/x/torch.whl' --torchvision 'none'" in dry(
        "env", "TORCH=/x/torch.whl", "TORCHVISION=none", "-W", "requirements.txt")
    latest = dry("test-torch-latest")
    assert "env TORCH=2.14.1 VENV=.venv-torch-latest" in latest
    assert re.search(r'\.venv-torch-latest/bin/python -m pytest -q -n \d+ --dist loadfile -m "not integration" tests',
                     latest)
    assert ".venv-torch-latest/bin/python -m scripts.upkeep.torch_sweep --output-dirname=output/torch-latest" in latest
