"""Writing the site incrementally: a page whose text is what the last build wrote is left alone, and a page the
last build wrote that this one doesn't (a config no longer in the database) is removed. The state (each
page's digest, and the change points found per series: significance.py's cache) is a JSON file in the site.

The site's folder is a jail. The state file is data, not orders (a site comes from a cache or a colleague): a
page it lists is removed only when its name is one this writer makes (index.html, suite/*.html, config/*.html,
assets/<file>) and it resolves inside the site; any other entry is left alone with a warning. Every write
resolves inside the site, symlinks included (the site's own folder may be a link the user named: it is resolved
once), or the build stops with one line (UsageError, exit 2) before that write. The state file is read as a regular
file only (plumbing/safe_reads.py): a FIFO or a folder there stops the build with one line rather than hang it, and
a state that is not JSON (nested past what the parser takes, too big) is a damaged one: warned of, and rebuilt.
A state is a claim, not a fact (docs/architecture.md, "The rule for state"): its change points can't be checked
without finding them again, so a state without this user's seal (plumbing/state_seal.py: a site handed over, an
entry planted to hide a slowdown) is ignored as a whole: every change is found again, every page written again,
and no page of it removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re

from benchmarks.plumbing import disk_writes, safe_reads, state_seal
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.plumbing.safe_paths import PathEscapes, inside

log = logging.getLogger(__name__)

STATE_FILE = ".history-site.json"
STATE_VERSION = 1
# The folders the site writes its pages in, and the names of what this writer makes: the only files a state
# file's entry may remove.
FOLDERS = ("assets", "suite", "config")
_NAME = r"[A-Za-z0-9_=-][A-Za-z0-9._=-]*"  # safe_name's characters, no leading dot (never `.` or `..`)
_OUR_PAGE = re.compile(rf"index\.html|(?:suite|config)/{_NAME}\.html|assets/{_NAME}")


def write_text(path: str, text: str) -> None:
    """The one place the site writes a file: whole or not at all (a full disk leaves the last build's page)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    disk_writes.write_text(path, text)


def canonical(state: dict) -> bytes:
    return json.dumps({k: v for k, v in state.items() if k != "seal"}, sort_keys=True).encode("utf-8", "surrogatepass")


def _ours(state: dict) -> bool:
    """Whether this user's build wrote `state` (its seal checks): else it is ignored, not obeyed."""
    return state_seal.sealed(canonical(state), state.get("seal"))


def _is_shift(item) -> bool:
    """A cached change point as significance.Detector stores it: [before row, after row, p-value, ratio]."""
    return (isinstance(item, list) and len(item) == 4 and all(type(v) is int for v in item[:2])
            and all(type(v) in (int, float) and math.isfinite(v) for v in item[2:]))


def _valid_detections(cache) -> dict:
    """The state's change point cache, less any entry not shaped as the detector writes it (tested again)."""
    if not isinstance(cache, dict):
        return {}
    return {key: found for key, found in cache.items()
            if isinstance(found, list) and all(_is_shift(item) for item in found)}


class SiteWriter:
    def __init__(self, directory: str):
        self.given = directory
        self.directory = os.path.realpath(directory)  # the site's own folder may be a link: resolved once
        for folder in FOLDERS + (STATE_FILE,):  # a page folder that leads out stops the build before any write
            self._inside(folder)
        self.state_path = os.path.join(self.directory, STATE_FILE)
        try:
            state = safe_reads.load_json(self.state_path)
        except safe_reads.NotRegularFile as exc:  # a FIFO would hang the build; a folder can't be replaced
            raise UsageError(f"-o {self.given}: {exc}; remove it to build the site") from None
        except safe_reads.DamagedFile as exc:
            log.warning("%s; every page is written again", exc)
            state = {}
        except (OSError, ValueError):
            state = {}  # no site yet, or a damaged state: everything is written again
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION or not _ours(state):
            state = {}
        pages, detections = state.get("pages"), state.get("detections")
        self.old_pages = {k: v for k, v in pages.items() if isinstance(v, str)} if isinstance(pages, dict) else {}
        self.pages: dict = {}
        self.detections = _valid_detections(detections)
        self.written = self.unchanged = self.removed = 0

    def _inside(self, relative: str) -> str:
        """The resolved path of `relative` in the site, or UsageError (one line) where it would lead outside."""
        try:
            return inside(self.directory, relative)
        except PathEscapes as escape:
            raise UsageError(f"-o {self.given}: {relative} leads outside the site (to {escape.resolved}); "
                             "nothing is written there") from None

    def write(self, relative: str, text: str) -> None:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self.pages[relative] = digest
        path = self._inside(relative)
        if self.old_pages.get(relative) == digest and os.path.isfile(path):
            self.unchanged += 1
            return
        write_text(path, text)
        self.written += 1

    def finish(self, detections: dict) -> None:
        for relative in sorted(set(self.old_pages) - set(self.pages)):
            path = self._removable(relative)
            if path and os.path.isfile(path):
                os.remove(path)
                self.removed += 1
        state = {"version": STATE_VERSION, "pages": self.pages, "detections": detections}
        state["seal"] = state_seal.seal(canonical(state))
        write_text(self._inside(STATE_FILE), json.dumps(state, separators=(",", ":")))

    def _removable(self, relative: str):
        """The path of a page the last build wrote and this one did not, or None (with a warning) where the state
        file names something that is not one of the site's pages or that leads outside."""
        if _OUR_PAGE.fullmatch(relative):
            try:
                inside(self.directory, relative)
                return os.path.join(self.directory, relative)  # a link itself is removed, never what it names
            except PathEscapes:
                pass
        log.warning("%s lists %r, not a page of this site: left alone", os.path.join(self.given, STATE_FILE),
                    relative)
        return None

    def summary(self) -> str:
        return (f"{self.written} page(s) written, {self.unchanged} unchanged"
                + (f", {self.removed} removed" if self.removed else ""))
