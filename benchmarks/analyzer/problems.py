"""result_analyzer.py's problems found in one results file (bad lines, odd values), each kind reported once:
its first lines and how many there were."""

from __future__ import annotations

import bisect
import logging


class Problems:
    """Problems found in one file, each kind reported once: its first lines and how many there were.

    A kind's lines are kept in order, whatever the order they were found in (the two readers find them in
    different orders), and its message is its first line's. Kinds are reported in the order of their first
    line, those of one line in the order they were found on it (the record's order)."""

    MAX_LINES = 5

    def __init__(self):
        self.found = {}  # key -> [message, lines, count, level, when its first line was found]
        self.added = 0

    def add(self, key, line: int, message: str, level: int = logging.WARNING) -> None:
        entry = self.found.get(key)
        self.added += 1
        if entry is None:
            self.found[key] = [message, [line], 1, level, self.added]
        else:
            entry[2] += 1
            lines = entry[1]
            if line < lines[0]:
                entry[0], entry[4] = message, self.added
            if len(lines) < self.MAX_LINES or line < lines[-1]:
                bisect.insort(lines, line)
                del lines[self.MAX_LINES:]

    def merge(self, other: "Problems", line_offset: int) -> None:
        """Add the problems of the range that follows the ones added so far (its lines after theirs)."""
        for key, (message, lines, count, level, found) in other.found.items():
            entry = self.found.get(key)
            lines = [line + line_offset for line in lines]
            if entry is None:
                self.found[key] = [message, lines[: self.MAX_LINES], count, level, found]
            else:
                entry[2] += count
                entry[1].extend(lines[: self.MAX_LINES - len(entry[1])])

    def lines(self, path: str) -> list:
        """(level, text) per kind, in the order of their first line: `path:line: message (also ...)`."""
        out = []
        for message, lines, count, level, _ in sorted(self.found.values(), key=lambda entry: (entry[1][0], entry[4])):
            text = f"{path}:{lines[0]}: {message}"
            if count > 1:
                more = count - len(lines)
                text += f" (also line{'s' if count > 2 else ''} {', '.join(map(str, lines[1:]))}"
                text += f" and {more} more)" if more else ")"
            out.append((level, text))
        return out

    def first(self):
        """(line, message) of the first warning by line (the one a refused file names), or None."""
        warnings = [(entry[1][0], entry[0]) for entry in self.found.values() if entry[3] >= logging.WARNING]
        return min(warnings, key=lambda item: item[0]) if warnings else None

    def __len__(self) -> int:
        return sum(entry[2] for entry in self.found.values() if entry[3] >= logging.WARNING)
