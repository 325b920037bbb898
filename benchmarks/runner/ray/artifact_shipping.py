"""Files a config writes on a Ray node come home to the driver's output directory (docs/parallel.md,
"Artifacts come home").

On the node, the child writes under a scratch output directory of its own; when it ends, `pack` lists every
regular file there: small ones travel with the task's result, bigger ones through --artifacts-uri (a
directory every node mounts, or an object store, through fsspec), up to --artifacts-max-size per config.
A file that can't travel stays on the node and is named, with where it is, in the record
(`environment.executor.artifacts_left_behind`). On the driver, `unpack` writes each file at the same
relative path, through `safe_paths.inside`: nothing shipped ever lands outside the output directory.
"""

from __future__ import annotations

import os
import shutil
from typing import Optional

from benchmarks.plumbing.safe_paths import PathEscapes, inside, safe_name

INLINE_LIMIT = 8 * 2**20  # bytes: a file up to this size returns with the task's result


def _files(root: str) -> list:
    """(relative path, size) of every regular file under `root`, by path (links are not followed nor shipped)."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append((os.path.relpath(path, root), os.path.getsize(path)))
    return sorted(found)


def sweep_remote_root(uri: str, sweep_id: str) -> str:
    return "/".join([uri.rstrip("/"), safe_name(sweep_id)])


def remote_root(uri: str, sweep_id: str, attempt_id: str) -> str:
    return "/".join([sweep_remote_root(uri, sweep_id), safe_name(attempt_id)])


def check_uri(uri: str) -> Optional[str]:
    """Why --artifacts-uri can't be used from here (no fsspec, a protocol it doesn't know), or None."""
    try:
        import fsspec

        fsspec.core.url_to_fs(uri)
    except ImportError as exc:
        return f"--artifacts-uri needs fsspec (pip install -e '.[ray]') and the package of its protocol: {exc}"
    except ValueError as exc:
        return f"--artifacts-uri {uri}: {exc}"
    return None


def pack(root: str, max_bytes: int, uri: Optional[str], remote_dir: str, where: str) -> dict:
    """What the driver needs to rebuild `root`'s files: {"inline": {rel: bytes}, "remote": {rel: url},
    "left_behind": [{path, bytes, where, why}]}; the files that travelled are removed from `root`."""
    shipment = {"inline": {}, "remote": {}, "left_behind": []}
    budget = max_bytes
    fs = None
    for rel, size in _files(root):
        path = os.path.join(root, rel)
        why = None
        if size > budget:
            why = f"past the config's --artifacts-max-size ({max_bytes} bytes)"
        elif size <= INLINE_LIMIT:
            with open(path, "rb") as handle:
                shipment["inline"][rel] = handle.read()
        elif uri:
            try:
                if fs is None:
                    import fsspec

                    fs, base = fsspec.core.url_to_fs(remote_dir)
                target = base + "/" + rel.replace(os.sep, "/")
                fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
                fs.put_file(path, target)
                shipment["remote"][rel] = target
            except Exception as exc:  # ImportError, permissions, the store unreachable: it stays here, said so
                why = f"could not be put in --artifacts-uri: {type(exc).__name__}: {exc}"
        else:
            why = f"bigger than {INLINE_LIMIT} bytes and no --artifacts-uri to send it through"
        if why:
            shipment["left_behind"].append({"path": rel, "bytes": size, "where": f"{where}:{path}", "why": why})
            continue
        budget -= size
        os.remove(path)
    return shipment


def unpack(shipment: dict, output_dir: str, uri: Optional[str]) -> list:
    """Write the shipped files under `output_dir`; returns the record's left-behind notes (the node's, plus
    any file that could not be written or fetched here)."""
    left = list(shipment.get("left_behind", []))
    for rel, data in shipment.get("inline", {}).items():
        try:
            path = inside(output_dir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
        except (PathEscapes, OSError) as exc:  # a full disk, a directory in the way: that file only, said so
            left.append({"path": rel, "bytes": len(data), "where": None, "why": f"{type(exc).__name__}: {exc}"})
    remote = shipment.get("remote", {})
    if remote:
        import fsspec

        fs, _ = fsspec.core.url_to_fs(uri)
        for rel, target in remote.items():
            try:
                path = inside(output_dir, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fs.get_file(target, path)
                fs.rm(target)
            except (PathEscapes, OSError) as exc:
                left.append({"path": rel, "bytes": None, "where": target, "why": f"{type(exc).__name__}: {exc}"})
    return left


def prune_remote(uri: str, directory: str) -> bool:
    """Remove `directory` under --artifacts-uri (a config's, or the sweep's) when no file is left in it: the
    directories its fetched files were in. A file still there (a lost task's, one that could not be
    fetched and is named in its record) keeps it. Whether it was removed."""
    try:
        import fsspec

        fs, path = fsspec.core.url_to_fs(directory)
        if not fs.exists(path) or fs.find(path):
            return False
        fs.rm(path, recursive=True)
        return True
    except Exception as exc:  # the store unreachable: empty directories stay, nothing else depends on them
        import logging

        logging.getLogger(__name__).debug("--artifacts-uri %s: %s", uri, exc)
        return False


def clean(root: str) -> None:
    """Remove the node's scratch directory if nothing was left in it (a left-behind file keeps it)."""
    if not _files(root):
        shutil.rmtree(root, ignore_errors=True)
