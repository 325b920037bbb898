#!/usr/bin/env python3
"""`make gpu-harness`: the part of a TorchBench checkout that PyTorch's dynamo harness needs for `make gpu-check`'s
and `make gpu-slice`'s models, small enough to travel to a lent GPU machine with the tree (a whole checkout is
hundreds of MB).

Copies, from --torchbench (a checkout of pytorch/benchmark), into --out:
- userbenchmark/dynamo/dynamobench/ (the harness: common.py, torchbench.py, timm_models.py, huggingface.py, yamls);
- the `torchbenchmark` package without its models (its utilities, components and package files), and the models
  named by --models (TorchBench's own directories; timm and Hugging Face models need none);
- utils/ (the checkout's top-level helpers that `torchbenchmark` imports).

The result is a TorchBench layout: `make gpu-check HARNESS_DIR=<out>` and `make gpu-slice HARNESS_DIR=<out>` find
the harness in it as in a checkout.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from scripts.gpu.slice_plan import TORCHBENCH_MODELS
from scripts.parity.harness import LAYOUTS

HARNESS = dict(LAYOUTS)["torchbench"]
PACKAGE = Path("torchbenchmark")
MODEL_FOLDERS = ("models", "canary_models", "e2e_models")  # only their package files, and the models asked for
TOP_LEVEL = (Path("utils"),)
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".git")


def copy_subset(torchbench: Path, out: Path, models: list) -> list:
    """Copy the harness's part of `torchbench` into `out`; returns the paths copied (relative). Raises
    FileNotFoundError with one line naming what is missing."""
    if not (torchbench / HARNESS / "common.py").is_file():
        raise FileNotFoundError(f"{torchbench} is not a TorchBench checkout (no {HARNESS / 'common.py'})")
    missing = [m for m in models if not (torchbench / PACKAGE / "models" / m).is_dir()]
    if missing:
        raise FileNotFoundError(f"{torchbench / PACKAGE / 'models'} has no {', '.join(missing)}")
    copied = []

    def copy(relative: Path) -> None:
        source, target = torchbench / relative, out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=SKIP, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)
        copied.append(str(relative))

    copy(HARNESS)
    for entry in sorted((torchbench / PACKAGE).iterdir()):
        relative = PACKAGE / entry.name
        if entry.name in MODEL_FOLDERS:
            for package_file in sorted(entry.glob("*.py")):
                copy(relative / package_file.name)
        elif entry.name != "__pycache__":
            copy(relative)
    for model in models:
        copy(PACKAGE / "models" / model)
    for relative in TOP_LEVEL:
        if (torchbench / relative).exists():
            copy(relative)
    return copied


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    parser.add_argument("--torchbench", required=True, help="a checkout of pytorch/benchmark")
    parser.add_argument("--out", default="output/gpu-harness", help="where the subset goes (default %(default)s)")
    parser.add_argument("--models", default=",".join(TORCHBENCH_MODELS), help="TorchBench models to take, "
                        "comma-separated (default: gpu-check's and gpu-slice's, %(default)s)")
    options = parser.parse_args(argv)
    models = [m.strip() for m in options.models.split(",") if m.strip()]
    out = Path(options.out)
    try:
        copy_subset(Path(options.torchbench), out, models)
    except (FileNotFoundError, OSError) as exc:
        print(f"gpu-harness: {exc}", file=sys.stderr)
        return 2
    print(f"the dynamo harness and {', '.join(models) or 'no TorchBench model'} in {out} "
          f"({size_of(out) / 2**20:.1f} MiB): carry it with the tree and give make gpu-check or gpu-slice "
          f"HARNESS_DIR={out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
