"""StrEnum: the base of the record's statuses and codes as types (results/accuracy_status.py, results/records.py) and
of compare's and history's words (results/change_words.py).

A member is a `str` equal to its value, so a record's JSON keeps the same strings (json and orjson write the value)
and a member compares, hashes and sorts as its value: records read back from a file hold plain strings, and a status
read back equals its member. str(), format() and f-strings give the value on every Python the package supports
(3.10's Enum gives the member's name). One difference: orjson refuses a member as a dict key (json takes it).
"""

from __future__ import annotations

import enum


class StrEnum(str, enum.Enum):
    __hash__ = str.__hash__  # Python 3.10's Enum hashes the name: a member must find its plain string in a dict

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
