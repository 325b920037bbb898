"""metric_report.csv's columns that are kept: a range's rows leave out every column of ours that is empty in each of
them (the report's header is then every range's kept columns, report_files.OrderedReport realigning the ranges that
differ); upstream PyTorch/XLA's 20 columns stay, empty or not, so that its readers find them by name and place. A
piece of a row (rows.RangeRows.csv_rows) is named by its columns: each distinct value's cells and each row's index
into them; a piece of several columns is made again from its values without the empty ones."""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from benchmarks.analyzer.cells import cells
from benchmarks.analyzer.columns import UPSTREAM_COLUMNS

_ALWAYS = frozenset(UPSTREAM_COLUMNS)


class Piece(NamedTuple):
    """Columns of a row: their names, the piece rows.join_rows joins, and, for an indexed piece of several columns,
    each distinct value's values (to make its cells again without the empty ones); None where it is not needed."""

    names: tuple
    piece: object
    values: Optional[list] = None


def _used(ids) -> list:
    return np.unique(np.asarray(ids)).tolist()


def _kept_of(piece: Piece) -> tuple:
    """(whether each of the piece's columns is kept) for an indexed piece; all True for any other."""
    names = piece.names
    if all(name in _ALWAYS for name in names) or not (isinstance(piece.piece, tuple) and len(piece.piece) == 2):
        return (True,) * len(names)
    texts, ids = piece.piece
    used = _used(ids)
    if len(names) == 1:
        return (any(texts[u] for u in used),)
    values = piece.values
    return tuple(name in _ALWAYS or any(values[u] is not None and values[u][j] not in (None, "") for u in used)
                 for j, name in enumerate(names))


def prune(pieces: list) -> list:
    """The pieces without the columns of ours that no row has a value in: a single-column piece left out, a piece of
    several made again from its values."""
    out = []
    for piece in pieces:
        kept = _kept_of(piece)
        if all(kept):
            out.append(piece)
        elif any(kept):
            texts, ids = piece.piece
            remade = [b"" if value is None else cells([v for v, keep in zip(value, kept) if keep]).encode()
                      for value in piece.values]
            out.append(Piece(tuple(n for n, keep in zip(piece.names, kept) if keep), (remade, ids)))
    return out
