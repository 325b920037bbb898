#!/usr/bin/env python3
"""`make env TORCH=...`: a virtual environment on a torch of your choice (README.md, "Your own torch"), with the lock's
other packages (requirements.txt) and this project installed in it. Standard library only: it runs before any venv.

TORCH is one of
- a release on the registry: `2.14.1` (or any requirement on torch: `torch==2.15.0.dev20261001`);
- a wheel file: `/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl`;
- the Python of an environment whose torch to use (or that environment's folder): `/opt/conda/envs/nightly/bin/python`.
  Nothing is installed there: the new venv is made with that Python's base interpreter and reads the environment's
  packages through a .pth file, behind its own.
torchvision is the release that pairs with that torch (pip's choice under the constraint torch==<that version>), or
TORCHVISION's requirement, or none (`--torchvision none`). torch-xla and TorchAO are left out (the lock's pair only with
torch 2.9): their configs are dropped or skipped with that reason.

Every pip call after torch's runs under the constraint torch==<the version installed>, and the project goes in last
with `pip install -e .` (its ranges, with dependencies): the build fails if anything replaced that torch.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The lock's packages a chosen torch does not get: torch and its pairs (torch-xla 2.9 and TorchAO 0.14 are the torch
# 2.9 line; a torchvision is chosen to pair with the torch).
LEFT_OUT = {"torch", "torchvision", "torch-xla", "torch_xla", "torchao"}
PTH_NAME = "ptbench-torch-from.pth"
ASK_ENV = ("import json, os, sys, sysconfig, torch; print(json.dumps({'torch': torch.__version__, "
           "'site': os.path.dirname(os.path.dirname(torch.__file__)), 'python': '%d.%d' % sys.version_info[:2], "
           "'base': getattr(sys, '_base_executable', sys.executable)}))")


class Refused(Exception):
    """What the user asked for can't be built: one line, exit 2."""


def run(*argv, capture=False) -> str:
    print("+", shlex.join(map(str, argv)), flush=True)
    done = subprocess.run([str(a) for a in argv], text=True, stdout=subprocess.PIPE if capture else None)
    if done.returncode:
        raise SystemExit(f"make_venv: {' '.join(map(str, argv[:4]))} ... failed (exit {done.returncode})")
    return done.stdout or ""


def named_environment(spec: str):
    """The interpreter of an environment named by its Python or its folder, or None when `spec` names none."""
    path = Path(spec).expanduser()
    if path.is_dir():
        path = path / "bin" / "python"
    return path if path.is_file() and os.access(path, os.X_OK) and not path.name.endswith(".whl") else None


def torch_requirement(spec: str) -> str:
    """A release (2.14.1) -> torch==2.14.1; a wheel's path or a requirement stays as it is."""
    if spec.endswith(".whl"):
        if not Path(spec).is_file():
            raise Refused(f"TORCH={spec}: no such wheel")
        return str(Path(spec).resolve())
    if re.fullmatch(r"\d+(\.\d+)*([a-z0-9.+-]*)", spec):
        return f"torch=={spec}"
    if spec.startswith("torch"):
        return spec
    raise Refused(f"TORCH={spec}: not a release (2.14.1), a requirement (torch==...), a wheel file, or the Python or "
                  "folder of an environment")


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def torch_version(python: Path) -> str:
    """The installed torch's version as pip knows it (its metadata: 2.14.1 where torch.__version__ is 2.14.1+cu130)."""
    return run(python, "-c", "from importlib import metadata; print(metadata.version('torch'))",
               capture=True).strip().splitlines()[-1]


def lock_without_torch(lock: Path, out: Path) -> None:
    kept = []
    for line in lock.read_text(encoding="utf-8").splitlines():
        name = re.split(r"[=<>!~;\[ ]", line.strip(), maxsplit=1)[0].lower()
        if name and not line.lstrip().startswith("#") and name in LEFT_OUT:
            continue
        kept.append(line)
    out.write_text("\n".join(kept) + "\n", encoding="utf-8")


def build(venv: Path, spec: str, torchvision: str, lock: Path, boot: str) -> str:
    pip_flags = ["--quiet", "--disable-pip-version-check"]
    env_python = named_environment(spec)
    if env_python is not None:  # the torch of an environment the user names
        try:
            facts = json.loads(run(env_python, "-c", ASK_ENV, capture=True).strip().splitlines()[-1])
        except SystemExit:
            raise Refused(f"TORCH={spec}: that Python cannot import torch") from None
        run(facts["base"], "-m", "venv", "--clear", venv)
        site = Path(run(venv_python(venv), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                        capture=True).strip())
        (site / PTH_NAME).write_text(facts["site"] + "\n", encoding="utf-8")
        print(f"make_venv: torch {facts['torch']} from {facts['site']} (read through {site / PTH_NAME})")
    else:
        requirement = torch_requirement(spec)
        run(boot, "-m", "venv", "--clear", venv)
        run(venv_python(venv), "-m", "pip", "install", *pip_flags, requirement)
    python = venv_python(venv)
    version = torch_version(python)
    with tempfile.TemporaryDirectory() as scratch:
        constraint = Path(scratch) / "torch.txt"
        constraint.write_text(f"torch=={version}\n", encoding="utf-8")
        if torchvision != "none":  # the release that pairs with this torch, unless one is named
            run(python, "-m", "pip", "install", *pip_flags, "-c", constraint, torchvision or "torchvision")
        others = Path(scratch) / "requirements.txt"
        lock_without_torch(lock, others)
        run(python, "-m", "pip", "install", *pip_flags, "-c", constraint, "-r", others)
    run(python, "-m", "pip", "install", *pip_flags, "-e", ROOT)  # the package's own ranges, with dependencies
    after = torch_version(python)
    if after != version:
        raise SystemExit(f"make_venv: installing the project replaced torch {version} with {after}")
    print(f"make_venv: {venv} has torch {version}; torch-xla and torchao are not installed (the lock's pair only "
          "with torch 2.9): their configs are dropped or skipped with that reason")
    return version


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--venv", required=True, type=Path)
    parser.add_argument("--torch", required=True, help="a release, a requirement, a wheel, or an environment's Python")
    parser.add_argument("--torchvision", default="", help="a requirement on torchvision, or none (default: the "
                        "release that pairs with the torch)")
    parser.add_argument("--lock", type=Path, default=ROOT / "requirements.txt")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that makes the venv")
    args = parser.parse_args(argv)
    try:
        build(args.venv, args.torch.strip(), args.torchvision.strip(), args.lock, args.python)
    except Refused as exc:
        print(f"make_venv: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
