"""Finding TorchBench without importing it: --torchbench-dir; an importable `torchbenchmark` package; a
`torchbenchmark`, `torchbench` or `benchmark` checkout in `.`, `..` or `../..`; its model folders
(`torchbenchmark/models/`, `models/fb/`, `canary_models/`) listed from the file system."""

from __future__ import annotations

import os
from typing import Optional

PACKAGE = "torchbenchmark"
CHECKOUT_NAMES = ("torchbenchmark", "torchbench", "benchmark")
SEARCH_BASES = (".", "..", os.path.join("..", ".."))
MODEL_FOLDERS = ("models", "canary_models")
NOT_FOUND = ("TorchBench not found: pass --torchbench-dir=DIR (a checkout of https://github.com/pytorch/benchmark, "
             "with `python install.py` run for the models you want), install its torchbenchmark package, or put "
             "the checkout in ., .. or ../.. as torchbenchmark, torchbench or benchmark")


def is_package_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "__init__.py")) and os.path.isdir(os.path.join(path, "models"))


def checkout_root(path: str) -> Optional[str]:
    """The folder that holds the torchbenchmark package, given a checkout or the package folder itself."""
    path = os.path.abspath(path)
    if is_package_dir(os.path.join(path, PACKAGE)):
        return path
    if os.path.basename(path) == PACKAGE and is_package_dir(path):
        return os.path.dirname(path)
    return None


def importable_root() -> Optional[str]:
    """Where an installed (or PYTHONPATH) torchbenchmark lives; find_spec does not run the package."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        if is_package_dir(location):
            return os.path.dirname(os.path.abspath(location))
    return None


def find_root(torchbench_dir: Optional[str]) -> tuple:
    """(root, how it was found) or (None, why not)."""
    if torchbench_dir:
        root = checkout_root(torchbench_dir)
        if root is None:
            return None, (f"--torchbench-dir {torchbench_dir} holds no TorchBench checkout "
                          f"(expected {os.path.join(torchbench_dir, PACKAGE, 'models')}/)")
        return root, "--torchbench-dir"
    root = importable_root()
    if root:
        return root, "importable torchbenchmark package"
    for base in SEARCH_BASES:
        for name in CHECKOUT_NAMES:
            root = checkout_root(os.path.join(base, name))
            if root:
                return root, f"found at {os.path.join(base, name)}"
    return None, NOT_FOUND


def list_model_dirs(root: str) -> list:
    """(name, folder) for every model folder with an __init__.py: models/, models/fb/, canary_models/."""
    found, seen = [], set()
    package = os.path.join(root, PACKAGE)
    for folder in (os.path.join(package, "models"), os.path.join(package, "models", "fb"),
                   os.path.join(package, "canary_models")):
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name == "fb" or name.startswith((".", "_")) or name in seen:
                continue
            if os.path.isfile(os.path.join(path, "__init__.py")):
                seen.add(name)
                found.append((name, path))
    return found


def module_name(root: str, name: str) -> Optional[str]:
    package = os.path.join(root, PACKAGE)
    for dotted, folder in ((f"{PACKAGE}.models.{name}", os.path.join(package, "models", name)),
                           (f"{PACKAGE}.models.fb.{name}", os.path.join(package, "models", "fb", name)),
                           (f"{PACKAGE}.canary_models.{name}", os.path.join(package, "canary_models", name))):
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return dotted
    return None
