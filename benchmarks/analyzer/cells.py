"""result_analyzer.py's cells: one CSV cell per value, a report's rows joined from pieces (in C when the
compiled reader is built), and the statistics cells of a range's rows, formatted a column at a time."""

from __future__ import annotations

import collections
import itertools

import numpy as np
import orjson

from benchmarks.analyzer import compiled_reader


def cell(value) -> str:
    """One CSV cell: empty for null, Python's spelling of numbers and booleans, one line of text, quoted
    only when it must be."""
    if value is None:
        return ""
    kind = type(value)
    if kind is str:
        text = value
    elif kind is bool:
        return "True" if value else "False"
    elif kind is int or kind is float:
        return repr(value)
    elif isinstance(value, str):  # a status as a type (results/str_enum.py): its value
        text = str(value)
    else:  # a list or object where a scalar belongs: its JSON text
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    if "\n" in text or "\r" in text:
        text = " ".join(text.split())
    if "," in text or '"' in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def cells(values) -> str:
    return ",".join(map(cell, values))


def header_bytes(columns) -> bytes:
    return (cells(columns) + "\n").encode("utf-8")


def numbers_piece(matrix: np.ndarray):
    """A float matrix as a piece of join_rows: orjson's text of it (NaN cells empty), or its rows one by one
    when it holds an infinity (orjson writes null for it, and it must stay visible)."""
    if not matrix.shape[1]:
        return b""
    text = orjson.dumps(np.ascontiguousarray(matrix), option=orjson.OPT_SERIALIZE_NUMPY)
    infinite = np.isinf(matrix).any(axis=1)
    if not infinite.any():
        return (text,)
    rows = _matrix_rows(text)
    for r in np.flatnonzero(infinite).tolist():
        rows[r] = ",".join("" if v != v else repr(v) for v in matrix[r].tolist()).encode()
    return rows


def _matrix_rows(text: bytes) -> list:
    """The rows of orjson's text of a float matrix, as CSV cells (null empty)."""
    return text[2:-2].replace(b"null", b"").split(b"],[")


def join_rows(pieces: list, n_rows: int, as_list: bool, compiled: bool):
    """Each row: its pieces joined by commas. A piece is bytes (in every row), a list (a cell per row),
    (orjson's text of a float matrix,) or (cells, int32 index of each row's cell). as_list: a list of rows;
    else the rows as one text, each ending with a newline. The compiled module does it without the
    intermediate objects; same result."""
    if compiled:
        return compiled_reader.module.join_rows(pieces, n_rows, as_list)
    columns = [itertools.repeat(piece, n_rows) if type(piece) is bytes else
               piece if type(piece) is list else _matrix_rows(piece[0]) if len(piece) == 1 else
               list(map(piece[0].__getitem__, np.asarray(piece[1]).tolist())) for piece in pieces]
    rows = list(map(b",".join, zip(*columns)))
    if as_list:
        return rows
    rows.append(b"")
    return b"\n".join(rows)


def combinations(columns: list, sizes: list) -> tuple:
    """The distinct combinations of index columns (column k's values below sizes[k]): (one row of indexes per
    combination, each row's combination as int32). Mixed-radix keys, made dense again before they could
    overflow: one sort of integers (np.unique over rows would sort tuples, ten times slower)."""
    key, size = np.zeros(len(columns[0]), dtype=np.int64), 1
    for column, cardinality in zip(columns, sizes):
        if size * cardinality >= 1 << 62:
            distinct, key = np.unique(key, return_inverse=True)
            key, size = key.ravel().astype(np.int64), len(distinct)
        key = key * cardinality + column
        size *= cardinality
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return np.stack(columns, axis=1)[first], inverse.ravel().astype(np.int32)


def statistics_cells(n_rows: int, units: list, compiled: bool) -> list:
    """The statistics cells of each row (bytes, every unit's columns, empty where a row lacks the unit).

    Rows are grouped by the units they have. In a group, each run of units it has is formatted in one call
    (a table two metrics share, in one call for both), and each run it lacks is commas: formatting NaN and
    removing it would cost more."""
    presence = np.zeros((n_rows, len(units)), dtype=bool)
    position = np.zeros((n_rows, len(units)), dtype=np.intp)  # a row's index in a unit's table
    for u, (_, rows, _) in enumerate(units):
        presence[rows, u] = True
        position[rows, u] = np.arange(len(rows))
    _, group_of_row = combinations(list(presence.T.astype(np.int64)), [2] * len(units))
    order = np.argsort(group_of_row, kind="stable")
    bounds = np.flatnonzero(np.diff(group_of_row[order])) + 1
    uses = collections.Counter(id(table) for _, _, table in units)
    out = np.empty(n_rows, dtype=object)
    for members in np.split(order, bounds):
        has = presence[members[0]]
        pieces, run, shared = [], [], {}

        def close_run() -> None:
            if run:
                tables = [units[i][2][position[members, i]] for i in run]
                pieces.append(numbers_piece(tables[0] if len(tables) == 1 else np.hstack(tables)))
                run.clear()

        for u, (names, _, table) in enumerate(units):
            if not has[u]:
                close_run()
                pieces.append(b"," * (len(names) - 1))
            elif uses[id(table)] > 1:  # formatted once for every unit that has it
                close_run()
                piece = shared.get(id(table))
                if piece is None:
                    piece = shared[id(table)] = numbers_piece(table[position[members, u]])
                pieces.append(piece)
            else:
                run.append(u)
        close_run()
        out[members] = join_rows(pieces, len(members), True, compiled)
    return out.tolist()
