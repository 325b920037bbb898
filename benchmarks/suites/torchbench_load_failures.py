"""TorchBench load failures that mean "not installed here", not "broken": a missing package, input data or files
TorchBench's install.py fetches, pretrained weights missing from the local cache (never downloaded:
never_download stands in for torch.hub's download), a Hugging Face hub file, a download while building. Each
is a skip reason naming the file and the command that fetches it."""

from __future__ import annotations

import os
import re
from typing import Optional

from benchmarks.suites.torchbench_checkout import MODEL_FOLDERS, PACKAGE


def missing_dependency(exc: ImportError, name: str) -> Optional[str]:
    """A skip reason for an ImportError of the model's requirements; None if TorchBench itself is broken."""
    module = getattr(exc, "name", None) or ""
    if module == PACKAGE or module.startswith(PACKAGE + "."):
        return None
    what = f"the Python module {module!r}" if module else "a Python module"
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return (f"needs {what}, which is missing here ({detail}); install the model's requirements "
            f"(python install.py {name} in the TorchBench checkout)")


class MissingCheckpoint(Exception):
    """Raised instead of a download: the pretrained weights a model wants are not in the local cache."""

    def __init__(self, url: str, path: str):
        super().__init__(f"{path} (from {url})")
        self.url, self.path = url, path


def never_download(url, dst, *args, **kwargs):
    """Stands in for torch.hub.download_url_to_file in the child: torch.hub calls it only when the file is not
    in $TORCH_HOME/hub/checkpoints, and a sweep never downloads."""
    raise MissingCheckpoint(url, dst)


def missing_checkpoint_reason(item: MissingCheckpoint, name: str) -> str:
    # Kept short: record messages hold 400 characters, and the path and address are long.
    return (f"pretrained weights missing from the local cache: {item.path}; fetch them with python install.py {name} "
            f"(TorchBench checkout) or, with the same TORCH_HOME, python -c \"import torch.hub; "
            f"torch.hub.load_state_dict_from_url('{item.url}')\"")


def hub_cache_reason(item: BaseException, name: str) -> str:
    try:
        from huggingface_hub import constants

        cache = constants.HF_HUB_CACHE
    except ImportError:
        cache = os.path.join(os.environ.get("HF_HOME", os.path.join("~", ".cache", "huggingface")), "hub")
    repo = re.search(r"['\"]([\w.-]+/[\w.-]+)['\"]", str(item))
    fetch = f"hf download {repo.group(1)}" if repo else f"python install.py {name} (TorchBench checkout)"
    # Kept short: record messages hold 400 characters.
    return (f"needs files from the Hugging Face hub that are not in the local cache {cache} "
            f"({type(item).__name__}); fetch them with {fetch}; a sweep never downloads (HF_HUB_OFFLINE=1)")


def missing_file_reason(filename: str, root: str, name: str) -> Optional[str]:
    """A file the checkout lacks (input data or a model's batch): TorchBench's install.py fetches it."""
    package = os.path.join(root, PACKAGE)
    path = os.path.abspath(str(filename))
    if not path.startswith(package + os.sep):
        return None
    names = [name]
    parts = os.path.relpath(path, package).split(os.sep)
    if len(parts) > 2 and parts[0] in MODEL_FOLDERS and parts[1] != name:
        names.append(parts[1])  # a file kept in another model's folder (functorch_maml_omniglot: maml_omniglot)
    what = "input data" if parts[0] == "data" else "a file"
    return (f"needs TorchBench's {what}, which is not installed ({filename}); "
            f"run python install.py {' '.join(names)} in the TorchBench checkout")


def load_failure_skip(exc: BaseException, root: str, name: str) -> Optional[str]:
    """A skip reason for load failures that mean "not installed here", not "broken"."""
    chain, seen = [], set()
    while exc is not None and id(exc) not in seen:  # the exception and its causes
        seen.add(id(exc))
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    for item in chain:
        if isinstance(item, MissingCheckpoint):
            return missing_checkpoint_reason(item, name)
        if isinstance(item, ImportError):
            return missing_dependency(item, name)
        filename = getattr(item, "filename", None)
        if isinstance(item, FileNotFoundError) and filename:
            reason = missing_file_reason(filename, root, name)
            if reason:
                return reason
    import socket
    import urllib.error

    for item in chain:
        kind = type(item).__name__
        if kind in ("OfflineModeIsEnabled", "LocalEntryNotFoundError"):
            return hub_cache_reason(item, name)
        if isinstance(item, (urllib.error.URLError, socket.gaierror, ConnectionError)):
            return f"needs a download while it is built, which cannot happen here ({kind}: {str(item)[:200]})"
    return None
