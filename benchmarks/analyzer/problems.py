"""result_analyzer.py's problems found in one results file (bad lines, odd values), each kind reported once:
its first lines and how many there were."""

from __future__ import annotations

import logging


class Problems:
    """Problems found in one file, each kind reported once: its first lines and how many there were."""

    MAX_LINES = 5

    def __init__(self):
        self.found = {}  # key -> [message, lines, count, level]

    def add(self, key, line: int, message: str, level: int = logging.WARNING) -> None:
        entry = self.found.get(key)
        if entry is None:
            self.found[key] = [message, [line], 1, level]
        else:
            entry[2] += 1
            if len(entry[1]) < self.MAX_LINES:
                entry[1].append(line)

    def merge(self, other: "Problems", line_offset: int) -> None:
        for key, (message, lines, count, level) in other.found.items():
            entry = self.found.get(key)
            lines = [line + line_offset for line in lines]
            if entry is None:
                self.found[key] = [message, lines[: self.MAX_LINES], count, level]
            else:
                entry[2] += count
                entry[1].extend(lines[: self.MAX_LINES - len(entry[1])])

    def lines(self, path: str) -> list:
        """(level, text) per kind, in the order of their first line: `path:line: message (also ...)`."""
        out = []
        for message, lines, count, level in sorted(self.found.values(), key=lambda entry: entry[1][0]):
            text = f"{path}:{lines[0]}: {message}"
            if count > 1:
                more = count - len(lines)
                text += f" (also line{'s' if count > 2 else ''} {', '.join(map(str, lines[1:]))}"
                text += f" and {more} more)" if more else ")"
            out.append((level, text))
        return out

    def __len__(self) -> int:
        return sum(entry[2] for entry in self.found.values() if entry[3] >= logging.WARNING)
