"""One walk of a folder for every reader that searches one (aggregate, compare, history ingest: results files
below a directory). A folder is entered once, by its device and inode: a link to a folder already seen (`a -> .`,
`b -> .`, a loop through a parent) is not followed again, and the walk goes at most MAX_DEPTH folders down, so a
folder full of links to itself ends at once instead of visiting 2^depth paths. A link to a folder not seen yet is
followed (`latest -> runs/0412` finds that run's files). Hidden names are skipped, as glob does. Standard library only."""

from __future__ import annotations

import os
import stat

MAX_DEPTH = 32


def files_below(root: str, suffix: str, max_depth: int = MAX_DEPTH) -> list:
    """The regular files under `root` whose name ends with `suffix`, sorted, each folder visited once."""
    seen: set = set()
    found: list = []
    pending = [(root, 0)]
    while pending:
        folder, depth = pending.pop()
        try:
            info = os.stat(folder)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):  # what glob skips too: hidden files and folders
                continue
            try:
                mode = os.stat(entry.path).st_mode
            except OSError:  # a dangling link
                continue
            if stat.S_ISDIR(mode):
                if depth < max_depth:
                    pending.append((entry.path, depth + 1))
            elif stat.S_ISREG(mode) and entry.name.endswith(suffix):
                found.append(entry.path)
    return sorted(found)
