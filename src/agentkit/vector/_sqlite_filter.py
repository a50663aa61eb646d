"""Which rowids of a SQLite scope a ``where`` admits, kept up to date by the change.

Dense and word search filter *inside* the search, from a scope's filter columns
(``_where_columns``): per key, the JSON kind, number and string code of every row, as
numpy arrays aligned with the scope's ascending rowids. They are held per scope and
generation, and a query whose snapshot is newer catches them up from the change log
(``_derived.changed_rowids``, the mechanism the derived indexes use): the touched rows
are dropped, the live ones re-read (``rows_of``, same snapshot) and parsed, and every
column already built is updated with vector operations. One record written elsewhere
costs one record's parsing plus a few array copies, never a re-read of the scope.

A key's column is built the first time a ``where`` names it, by SQLite: it extracts
the key from each row's JSON (only rows holding the key come back, a batch at a time),
so no per-row Python object of the scope outlives the build. A key a JSON path cannot
name (quotes, backslashes, control or non-ASCII characters; see ``plain_key``) is read
from each row's parsed metadata instead, a batch at a time. Numbers come back as their
JSON text and are read by Python, so a float or a 20-digit integer is the value the
reference evaluator sees.

When the log no longer reaches back (pruned, or a file without one), when more than a
quarter of the scope changed (a bulk load), or when the snapshot is older than what is
held, the columns are built afresh from the rows.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.kernel.where import Field, Not, Where
from agentkit.vector._derived import changed_rowids, rows_of, scope_text
from agentkit.vector._sqlite_where import plain_key
from agentkit.vector._where_columns import (
    FALSE,
    MISSING,
    NULL,
    NUMBER,
    OTHER,
    STRING,
    TRUE,
    Column,
    ColumnBuilder,
    Reshape,
    WhereColumns,
    classify,
)

_BATCH = 2_000
_ABSENT = (MISSING, math.nan, None)
_FLOATISH = frozenset(".eE")
_EXACT = 2**53  # a number's float at or past this may be an integer it rounded
_NONE = np.zeros(0, dtype=np.int64)
_log = logging.getLogger("agentkit.vector")


@dataclass
class _Held:
    """A scope's rowids at one generation and the columns built over them so far (a
    column is added once built; a held one is never changed)."""

    gen: int | None
    rowids: npt.NDArray[np.int64]
    columns: dict[str, Column] = field(default_factory=dict)


class RowFilter:
    """For dense and word search: which rowids of a scope a filter admits, from columns
    held per scope and caught up by the change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], _Held] = {}

    def admitted(
        self,
        conn: sqlite3.Connection,
        bucket: tuple[str, str],
        gen: int | None,
        where: Where,
    ) -> tuple[npt.NDArray[np.int64], int]:
        """The rowids ``where`` admits (ascending) among the scope's rows as ``conn``'s
        snapshot (at generation ``gen``) holds them, and how many rows the scope holds."""
        held = self._at(conn, bucket, gen)
        columns: dict[str, Column] = {}
        for key in _keys(where):
            column = held.columns.get(key)
            if column is None:
                column = _build(conn, bucket, held.rowids, key)
                with self._lock:
                    column = held.columns.setdefault(key, column)
            columns[key] = column
        view = WhereColumns.given(len(held.rowids), columns)
        return held.rowids[view.mask(where)], len(held.rowids)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()

    def _at(self, conn: sqlite3.Connection, bucket: tuple[str, str], gen: int | None) -> _Held:
        """The scope's rowids (and columns so far) at ``gen``: held, caught up from an
        older held generation, or read afresh."""
        if gen is None:  # a read-only file from before generations: nothing to hold
            return _Held(None, _rowids(conn, bucket))
        with self._lock:
            held = self._held.get(bucket)
        if held is not None and held.gen == gen:
            return held
        now = None
        if held is not None and held.gen is not None and held.gen < gen:
            now = _caught_up(conn, bucket, held, gen)
        if now is None:
            now = _Held(gen, _rowids(conn, bucket))
        with self._lock:
            current = self._held.get(bucket)
            if current is None or current.gen is None or current.gen < gen:
                self._held[bucket] = now
        return now


def _keys(where: Where) -> list[str]:
    """The keys ``where`` tests, each once."""
    out: dict[str, None] = {}
    stack: list[Where] = [where]
    while stack:
        node = stack.pop()
        if isinstance(node, Field):
            out[node.key] = None
        elif isinstance(node, Not):
            stack.append(node.part)
        else:
            stack.extend(node.parts)
    return list(out)


def _rowids(conn: sqlite3.Connection, bucket: tuple[str, str]) -> npt.NDArray[np.int64]:
    """The scope's rowids, ascending (one text from SQLite, parsed by numpy)."""
    (text,) = conn.execute(
        "SELECT group_concat(rowid) FROM chunks WHERE org = ? AND domain = ?", bucket
    ).fetchone()
    rowids = np.fromstring(text or "", dtype=np.int64, sep=",") if text else _NONE.copy()
    rowids.sort()
    _log.debug("filter columns of %s: %d rowids read", scope_text(bucket), len(rowids))
    return rowids


def _batches(cur: sqlite3.Cursor) -> Iterator[list[Any]]:
    while batch := cur.fetchmany(_BATCH):
        yield batch


def _caught_up(
    conn: sqlite3.Connection, bucket: tuple[str, str], held: _Held, gen: int
) -> _Held | None:
    """``held`` brought to ``gen`` by the rows changed since; None when the log no
    longer reaches back to ``held.gen`` or most of the scope changed."""
    assert held.gen is not None
    touched = changed_rowids(conn, bucket, held.gen)
    if touched is None or len(touched) > max(_BATCH, len(held.rowids) // 4):
        # Past a quarter of the scope, building afresh (a batch at a time, by SQLite)
        # is cheaper than parsing the changed rows, and holds less at once.
        return None
    columns = dict(held.columns)  # a column another thread adds meanwhile is left out
    if not touched:
        return _Held(gen, held.rowids, columns)
    live = sorted(rows_of(conn, bucket, touched, "metadata"))
    _log.debug(
        "filter columns of %s: %d changed rows read (generation %d to %d)",
        scope_text(bucket),
        len(live),
        held.gen,
        gen,
    )
    gone = np.array(touched, dtype=np.int64)
    keep = ~np.isin(held.rowids, gone, assume_unique=True)
    kept = held.rowids[keep]
    new = np.fromiter((r[0] for r in live), np.int64, len(live))
    change = Reshape(keep, np.searchsorted(kept, new))
    metas = [json.loads(r[1]) for r in live]
    for key, column in columns.items():
        values = [classify(m[key]) if key in m else _ABSENT for m in metas]
        columns[key] = column.updated(change, values)
    return _Held(gen, np.insert(kept, change.at, new), columns)


def _build(
    conn: sqlite3.Connection, bucket: tuple[str, str], rowids: npt.NDArray[np.int64], key: str
) -> Column:
    """``key``'s column over ``rowids`` (the scope's rows in ``conn``'s snapshot)."""
    builder = ColumnBuilder(len(rowids))
    if plain_key(key):
        found = _build_by_path(conn, bucket, rowids, key, builder)
    else:
        found = 0
        cur = conn.execute(
            "SELECT rowid, metadata FROM chunks WHERE org = ? AND domain = ?", bucket
        )
        for batch in _batches(cur):
            ids = np.fromiter((r[0] for r in batch), np.int64, len(batch))
            at = np.searchsorted(rowids, ids).tolist()
            for i, (_, text) in zip(at, batch, strict=True):
                meta = json.loads(text)
                if key in meta:
                    builder.add(i, *classify(meta[key]))
                    found += 1
    _log.debug(
        "filter column %r of %s built (%d of %d rows hold it)",
        key,
        scope_text(bucket),
        found,
        len(rowids),
    )
    return builder.done()


# The JSON kind as SQLite names it, as a column kind (None: the key is missing).
_KINDS: dict[str | None, int] = {
    None: MISSING,
    "null": NULL,
    "false": FALSE,
    "true": TRUE,
    "integer": NUMBER,
    "real": NUMBER,
    "text": STRING,
    "array": OTHER,
    "object": OTHER,
}
# A real comes as its JSON text (read by Python, not by SQLite's own parser); an integer
# as SQLite's int64, exact; a string decoded.
_BY_PATH = (
    "SELECT rowid, json_type(metadata, ?1), CASE json_type(metadata, ?1) "
    "WHEN 'real' THEN metadata -> ?1 ELSE json_extract(metadata, ?1) END "
    "FROM chunks WHERE org = ?2 AND domain = ?3"
)


def _build_by_path(
    conn: sqlite3.Connection,
    bucket: tuple[str, str],
    rowids: npt.NDArray[np.int64],
    key: str,
    builder: ColumnBuilder,
) -> int:
    """SQLite extracts the key from each row; a batch at a time becomes arrays. A number
    float64 may not hold exactly is classified one by one; an integer too wide for
    SQLite's int64 (which SQLite reads as a double) is re-read and parsed by Python."""
    cur = conn.execute(_BY_PATH, (f'$."{key}"', *bucket))
    found = 0
    wide: list[tuple[int, int]] = []  # (row, rowid) of integers past int64
    for batch in _batches(cur):
        ids, types, values = zip(*batch, strict=True)
        at = np.searchsorted(rowids, np.array(ids, dtype=np.int64))
        kind = np.fromiter(map(_KINDS.__getitem__, types), np.int8, len(batch))
        builder.kind[at] = kind
        found += int(np.count_nonzero(kind))
        numbers = np.flatnonzero(kind == NUMBER)
        if numbers.size:
            raw = [values[i] for i in numbers.tolist()]
            num = np.fromiter(map(float, raw), np.float64, len(raw))
            builder.num[at[numbers]] = num
            for j in np.flatnonzero(np.abs(num) >= _EXACT).tolist():
                row, value = int(at[numbers[j]]), raw[j]
                if isinstance(value, float):  # SQLite's double for a wider integer
                    wide.append((row, int(rowids[row])))
                    continue
                builder.add(row, *(_number(value) if isinstance(value, str) else classify(value)))
        strings = np.flatnonzero(kind == STRING)
        if strings.size:
            builder.add_strings(at[strings], [values[i] for i in strings.tolist()])
    if wide:
        where = dict((rowid, row) for row, rowid in wide)
        for rowid, text in rows_of(conn, bucket, sorted(where), "metadata"):
            builder.add(where[rowid], *classify(json.loads(text)[key]))
    return found


def _number(raw: str) -> tuple[int, float, Any]:
    """A JSON number's text as Python's json reads it: an int unless it has a fraction
    or an exponent."""
    return classify(float(raw) if _FLOATISH.intersection(raw) else int(raw))
