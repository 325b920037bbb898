"""The one check on every link a page makes from data (aggregate's page, history's site): pages are inert.

A results file, or a history database made from one, is untrusted: a record's `error.log` may be
`javascript:...`, ` javascript:`, `java\\tscript:`, `data:...`, `/etc/passwd` or `../../secret`. A page links only to

- a file inside the results folder, named by a relative path that stays inside it (no scheme, no leading `/`, no
  `..` that leaves, no backslash, no control character or space), written as a percent-encoded relative URL, so
  that no character of it can read as a scheme, a query or markup; or
- an http/https address that a user gave (a flag, never a record).

Anything else is shown as text, not a link."""

from __future__ import annotations

import os
import posixpath
import re
import urllib.parse
from typing import Optional

from benchmarks.results.html_style import esc

# A scheme as a browser reads one (`javascript:`, `data:`, `C:`), after it dropped leading spaces and controls.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# Characters a path we link to never holds: controls (a browser drops tabs and newlines inside a URL, so
# `java\tscript:` is `javascript:`), spaces, backslashes (a browser reads `\` as `/`, so `\\host` leaves).
_NOT_IN_A_PATH = re.compile(r"[\x00-\x20\x7f-\x9f\\\u2028\u2029]")
# Kept as they are in a URL path: RFC 3986's unreserved characters, `/` and the harmless sub-delimiters.
# Everything else (`:`, `?`, `#`, `%`, spaces, non-ASCII) is percent-encoded.
_URL_SAFE = "/=+,@!$*()'"


def inside_folder(relative) -> bool:
    """True for a record's path (like `logs/mlp/x.log`) that names a file inside its results folder."""
    if not isinstance(relative, str) or not relative or _NOT_IN_A_PATH.search(relative) or _SCHEME.match(relative):
        return False
    if relative.startswith("/") or os.path.isabs(relative):
        return False
    normal = posixpath.normpath(relative)
    return normal not in (".", "..") and not normal.startswith("../")


def web_address(url) -> Optional[str]:
    """`url` when it is an http(s) address with a host (and nothing a browser would read differently), else None.
    For addresses a user gave; a record's text is never linked as a web address."""
    if not isinstance(url, str) or _NOT_IN_A_PATH.search(url):
        return None
    parts = urllib.parse.urlsplit(url)
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def file_href(path: str, page_dir: Optional[str]) -> str:
    """The href from a page in `page_dir` (None: the page's place is unknown, `path` as it is) to the file `path`
    (a path the tool made: a results folder joined with a checked relative path, or a file it found on disk)."""
    target = os.path.relpath(path, page_dir) if page_dir else path
    href = urllib.parse.quote(target.replace(os.sep, "/"), safe=_URL_SAFE)
    # A first segment with a colon would read as a scheme; quote() already encoded every colon, this is the backstop.
    return "./" + href if _SCHEME.match(href) else href


def record_file_href(relative, results_dir: str, page_dir: Optional[str]) -> Optional[str]:
    """The href of a file a record names relative to its results folder (its `error.log`), or None where the
    record's text is not such a path."""
    if not inside_folder(relative):
        return None
    return file_href(os.path.join(results_dir, relative), page_dir)


def anchor(href: Optional[str], text: str) -> str:
    """A link to `href` showing `text` (already HTML), or the text alone where there is no checked href."""
    return f'<a href="{esc(href)}">{text}</a>' if href else text
