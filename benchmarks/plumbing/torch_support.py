"""Which torch this project runs on (README.md, "Your own torch"): the floor (the oldest torch it supports and tests;
pyproject.toml's requirement says the same, tests/plumbing/test_torch_support.py holds them equal), the check of an
environment's torch against it, and which torch-xla pairs with a torch. No torch import: the installed version is
read from torch's own version.py (what `torch.__version__` is, a build from source's too), else its metadata."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import re
import sys
from importlib import metadata
from typing import Optional

# The oldest releases supported and tested (the lock, requirements.txt, is this torch; CI also runs the newest:
# `make test-torch-latest`). pyproject.toml's dependencies carry the same floors.
TORCH_FLOOR = "2.9.1"
TORCHVISION_FLOOR = "0.24.1"
INSTALL = f"pip install 'torch>={TORCH_FLOOR}' (or `make env` for the tested set)"

_RELEASE = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")
_VERSION_LINE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def release(version: Optional[str]) -> Optional[tuple]:
    """(major, minor, patch) of a version string: a release ("2.14.1"), a local build ("2.14.1+cu130"), a nightly
    ("2.15.0.dev20261001+cpu") or a build from source ("2.15.0a0+git1234abc") alike; None for anything else."""
    found = _RELEASE.match(str(version or ""))
    return tuple(int(part or 0) for part in found.groups()) if found else None


def installed_torch(path: Optional[list] = None) -> tuple:
    """(version or None, where it was found or None) of the torch this interpreter would import, without importing
    it: its version.py, else its installed metadata. (None, None): no torch here."""
    try:
        spec = importlib.util.find_spec("torch") if path is None else importlib.machinery.PathFinder.find_spec(
            "torch", path)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return None, None
    folder = os.path.dirname(spec.origin)
    try:
        with open(os.path.join(folder, "version.py"), encoding="utf-8") as handle:
            found = _VERSION_LINE.search(handle.read())
        if found:
            return found.group(1), folder
    except OSError:
        pass
    try:
        return metadata.version("torch"), folder
    except metadata.PackageNotFoundError:
        return None, folder


def unsupported_reason(version: Optional[str]) -> Optional[str]:
    """Why this torch can't run the benchmarks (one line), or None when it can (or its version can't be told)."""
    found = release(version)
    if found is None or found >= release(TORCH_FLOOR):
        return None
    return (f"torch {version} is older than {TORCH_FLOOR}, the oldest this project supports and tests: {INSTALL}; "
            "or run an older release of ptbench-matrix")


def environment_problem(path: Optional[list] = None) -> Optional[str]:
    """Why this interpreter's environment (`path`: these folders instead of sys.path) can't run a benchmark (one
    line), or None: no torch, or one below the floor. A torch whose version can't be read is let through (its
    children say what they find)."""
    version, folder = installed_torch(path)
    if folder is None:
        return f"torch is not installed for {sys.executable}: {INSTALL}"
    return unsupported_reason(version)


def xla_problem(torch_version: Optional[str], xla_installed: bool, xla_version: Optional[str]) -> Optional[str]:
    """Why torch-xla can't run beside this torch (not installed, or another torch's release), or None."""
    if not xla_installed:
        return (f"torch-xla is not installed in this environment (a torch-xla release pairs only with the torch of "
                f"its own major.minor, 2.9.0 with torch 2.9; this torch is {torch_version})")
    return xla_pairing_problem(torch_version, xla_version)


def xla_pairing_problem(torch_version: Optional[str], xla_version: Optional[str]) -> Optional[str]:
    """Why this torch-xla can't run beside this torch, or None: a torch-xla release pairs only with the torch of its
    own major.minor (torch-xla 2.9 with torch 2.9); either unknown: None."""
    torch_release, xla_release = release(torch_version), release(xla_version)
    if torch_release is None or xla_release is None or torch_release[:2] == xla_release[:2]:
        return None
    return (f"torch-xla {xla_version} pairs only with torch {xla_release[0]}.{xla_release[1]}, "
            f"and this environment has torch {torch_version}")
