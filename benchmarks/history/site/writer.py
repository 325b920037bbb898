"""Writing the site incrementally: a page whose text is what the last build wrote is left alone, and a page the
last build wrote that this one doesn't (a config no longer in the database) is removed. The state (each
page's digest, and the change points found per series: significance.py's cache) is a JSON file in the site.
"""

from __future__ import annotations

import hashlib
import json
import os

from benchmarks.plumbing import disk_writes

STATE_FILE = ".history-site.json"
STATE_VERSION = 1


def write_text(path: str, text: str) -> None:
    """The one place the site writes a file: whole or not at all (a full disk leaves the last build's page)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    disk_writes.write_text(path, text)


class SiteWriter:
    def __init__(self, directory: str):
        self.directory = directory
        self.state_path = os.path.join(directory, STATE_FILE)
        try:
            with open(self.state_path, encoding="utf-8") as found:
                state = json.load(found)
            if state.get("version") != STATE_VERSION:
                state = {}
        except (OSError, ValueError):
            state = {}  # no site yet, or a damaged state: everything is written again
        self.old_pages = state.get("pages", {})
        self.pages: dict = {}
        self.detections = state.get("detections", {})
        self.written = self.unchanged = self.removed = 0

    def write(self, relative: str, text: str) -> None:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self.pages[relative] = digest
        path = os.path.join(self.directory, relative)
        if self.old_pages.get(relative) == digest and os.path.isfile(path):
            self.unchanged += 1
            return
        write_text(path, text)
        self.written += 1

    def finish(self, detections: dict) -> None:
        for relative in set(self.old_pages) - set(self.pages):
            path = os.path.join(self.directory, relative)
            if os.path.isfile(path):
                os.remove(path)
                self.removed += 1
        write_text(self.state_path, json.dumps({"version": STATE_VERSION, "pages": self.pages,
                                                "detections": detections}, separators=(",", ":")))

    def summary(self) -> str:
        return (f"{self.written} page(s) written, {self.unchanged} unchanged"
                + (f", {self.removed} removed" if self.removed else ""))
