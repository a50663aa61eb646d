"""A ``where`` evaluated over metadata columns: one numpy mask for a whole scope.

A dense search filters *inside* its product (the mask picks the rows the top-k may
come from), so its cost must stay near the unfiltered one. Per-row Python over 100k
records costs tens of milliseconds; typed columns, built once per key and kept until
the rows change, turn each test into a few vector operations.

A key's column holds, per row, the JSON kind of its value, the value as float64 when
a number, and a code into the sorted distinct strings when a str (code order is string
order, so a range on strings is a range on codes). The few integers float64 cannot hold
exactly (beyond 2**53) are kept exact beside the column, and an operand float64 would
round is compared exactly where it matters, so the mask always equals ``Where.matches``
row by row.

A column can be *updated* (``Column.updated``): rows dropped and rows inserted, only the
inserted ones parsed, so a store whose rows change a few at a time keeps its columns
by the change rather than rebuilding them.
"""

from __future__ import annotations

import bisect
import math
import operator
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.kernel.where import And, Field, Not, Where

Mask = npt.NDArray[np.bool_]

MISSING, NULL, FALSE, TRUE, NUMBER, STRING, OTHER = range(7)
_EXACT = 2**53  # float64 holds every integer up to this exactly
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq,
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}


def classify(value: Any) -> tuple[int, float, Any]:
    """A present value as ``(kind, float64 value or nan, exact value)``: the exact value
    is the str of a string, the int of an integer float64 cannot hold, else None."""
    if value is None:
        return NULL, math.nan, None
    if value is True:
        return TRUE, math.nan, None
    if value is False:
        return FALSE, math.nan, None
    if isinstance(value, str):
        return STRING, math.nan, value
    if isinstance(value, bool):  # a bool subclass instance
        return (TRUE if value else FALSE), math.nan, None
    if isinstance(value, (int, float)):
        if isinstance(value, int) and abs(value) > _EXACT:
            return NUMBER, math.nan, value
        return NUMBER, float(value), None
    return OTHER, math.nan, None


@dataclass(frozen=True, slots=True)
class Column:
    """One key's values over ``n`` rows; never changed once built (``updated`` makes a
    new one), so a query may go on reading it while a newer one is made."""

    kind: npt.NDArray[np.int8]
    num: npt.NDArray[np.float64]
    code: npt.NDArray[np.int32]
    strings: list[str]  # sorted, distinct
    big: dict[int, int]  # row -> an integer float64 cannot hold exactly

    @classmethod
    def build(cls, key: str, row: Callable[[int], Mapping[str, Any]], n: int) -> Column:
        """From ``row(i)``, the metadata of each of the ``n`` rows."""
        builder = ColumnBuilder(n)
        for i in range(n):
            meta = row(i)
            if key in meta:
                builder.add(i, *classify(meta[key]))
        return builder.done()

    def updated(self, change: Reshape, values: Sequence[tuple[int, float, Any]]) -> Column:
        """This column with ``change`` applied: ``values`` are the classified values of
        the inserted rows in order (kind MISSING: the row lacks the key)."""
        m = len(values)
        kinds = np.fromiter((v[0] for v in values), np.int8, m)
        nums = np.fromiter((v[1] for v in values), np.float64, m)
        texts = {j: v[2] for j, v in enumerate(values) if v[0] == STRING}
        strings = self.strings
        code = self.code[change.keep]
        fresh = sorted({s for s in texts.values() if not _holds(strings, s)})
        if fresh:
            # Each new string lands between old ones: an old code moves up by how many
            # new strings sort at or before it.
            at = np.fromiter((bisect.bisect_left(strings, s) for s in fresh), np.intp, len(fresh))
            code = np.where(code >= 0, code + np.searchsorted(at, code, side="right"), -1).astype(
                np.int32
            )
            strings = sorted([*strings, *fresh])
        codes = np.full(m, -1, dtype=np.int32)
        for j, s in texts.items():
            codes[j] = bisect.bisect_left(strings, s)
        big = {change.moved(i): v for i, v in self.big.items() if change.keep[i]}
        for j, v in enumerate(values):
            if v[0] == NUMBER and v[2] is not None:
                big[change.placed(j)] = v[2]
        return Column(
            kind=np.insert(self.kind[change.keep], change.at, kinds),
            num=np.insert(self.num[change.keep], change.at, nums),
            code=np.insert(code, change.at, codes),
            strings=strings,
            big=big,
        )


def _holds(strings: list[str], s: str) -> bool:
    at = bisect.bisect_left(strings, s)
    return at < len(strings) and strings[at] == s


class ColumnBuilder:
    """A column assembled row by row (any order), holding per row only arrays: strings
    are kept once per distinct value."""

    def __init__(self, n: int) -> None:
        self.kind = np.zeros(n, dtype=np.int8)
        self.num = np.full(n, np.nan)
        self._code = np.full(n, -1, dtype=np.int64)  # first-seen order until done
        self._seen: dict[str, int] = {}
        self.big: dict[int, int] = {}

    def add(self, i: int, kind: int, num: float, exact: Any) -> None:
        self.kind[i] = kind
        self.num[i] = num
        if kind == STRING:
            self._code[i] = self._seen.setdefault(exact, len(self._seen))
        elif kind == NUMBER and exact is not None:
            self.big[i] = exact

    def add_strings(self, rows: npt.NDArray[np.intp], strings: Sequence[str]) -> None:
        """Rows holding strings, many at once (their kind set apart)."""
        seen = self._seen
        self._code[rows] = np.fromiter(
            (seen.setdefault(s, len(seen)) for s in strings), np.int64, len(strings)
        )

    def done(self) -> Column:
        seen = list(self._seen)
        order = sorted(range(len(seen)), key=seen.__getitem__)
        rank = np.empty(len(seen) + 1, dtype=np.int32)
        rank[np.array(order, dtype=np.intp)] = np.arange(len(seen), dtype=np.int32)
        rank[-1] = -1  # code -1 (no string) stays -1
        code = rank[self._code]
        return Column(self.kind, self.num, code, [seen[i] for i in order], self.big)


@dataclass(frozen=True, slots=True)
class Reshape:
    """Rows dropped (``keep`` false) and rows inserted (before kept row ``at[j]``, ``at``
    ascending), as ``np.insert`` applies them after ``arr[keep]``."""

    keep: Mask
    at: npt.NDArray[np.intp]

    def moved(self, old: int) -> int:
        """Where a kept row ``old`` is afterwards."""
        kept = int(np.count_nonzero(self.keep[:old]))
        return kept + int(np.searchsorted(self.at, kept, side="right"))

    def placed(self, j: int) -> int:
        """Where the ``j``-th inserted row is afterwards."""
        return int(self.at[j]) + j


class WhereColumns:
    """Columns of one unchanging snapshot of ``n`` rows.

    Either built per key on first use from ``row(i)`` (the metadata of row ``i``), or
    given whole (``given``: every key a ``where`` names must be there). Safe to share
    between threads: two threads may build the same key once each, and either result is
    right.
    """

    def __init__(self, row: Callable[[int], Mapping[str, Any]] | None, n: int) -> None:
        self._row = row
        self.n = n
        self._columns: dict[str, Column] = {}
        self._lock = threading.Lock()

    @classmethod
    def given(cls, n: int, columns: Mapping[str, Column]) -> WhereColumns:
        out = cls(None, n)
        out._columns.update(columns)
        return out

    def mask(self, where: Where) -> Mask:
        """Which of the ``n`` rows ``where`` matches, exactly as ``where.matches``."""
        if isinstance(where, Field):
            return self._field(where)
        if isinstance(where, Not):
            return ~self.mask(where.part)
        parts = iter(where.parts)
        out = self.mask(next(parts)).copy()
        for part in parts:
            if isinstance(where, And):
                if not out.any():
                    return out
                out &= self.mask(part)
            else:
                out |= self.mask(part)
        return out

    def _column(self, key: str) -> Column:
        column = self._columns.get(key)
        if column is None:
            if self._row is None:
                raise KeyError(key)
            column = Column.build(key, self._row, self.n)
            with self._lock:
                self._columns.setdefault(key, column)
        return column

    def _field(self, field: Field) -> Mask:
        column = self._column(field.key)
        op, value = field.op, field.value
        if op == "exists":
            out = _mask(column.kind != MISSING)
            return out if value else ~out
        if op in ("ne", "nin"):
            return ~self._field(Field(field.key, "eq" if op == "ne" else "in", value))
        if op == "in":
            out = np.zeros(self.n, dtype=bool)
            for option in value:
                out |= self._equal(column, option)
            return out
        if op == "eq":
            return self._equal(column, value)
        if isinstance(value, str):
            return self._strings(column, op, value)
        return self._numbers(column, op, value)

    def _equal(self, column: Column, value: Any) -> Mask:
        if value is None:
            return _mask(column.kind == NULL)
        if isinstance(value, bool):
            return _mask(column.kind == (TRUE if value else FALSE))
        if isinstance(value, str):
            if not _holds(column.strings, value):
                return np.zeros(self.n, dtype=bool)
            return _mask(column.code == bisect.bisect_left(column.strings, value))
        return self._numbers(column, "eq", value)

    def _strings(self, column: Column, op: str, value: str) -> Mask:
        strings = column.strings
        if op in ("gt", "lte"):
            cut = bisect.bisect_right(strings, value)
        else:
            cut = bisect.bisect_left(strings, value)
        if op in ("gt", "gte"):
            return _mask(column.code >= cut)
        return _mask((column.code < cut) & (column.code >= 0))

    def _numbers(self, column: Column, op: str, value: int | float) -> Mask:
        """``row op value`` over the number rows, exact whatever float64 rounds."""
        try:
            near = float(value)
        except OverflowError:  # an int beyond every float: past every finite one
            near = math.inf if value > 0 else -math.inf
        compare = _COMPARE[op]
        with np.errstate(invalid="ignore"):
            out = _mask(compare(column.num, near))
        if near != value:
            # ``value`` lies within half a step of ``near``: a row holding any other
            # float compares with it as with ``near``; one holding ``near`` itself is
            # judged exactly (one comparison for all of them).
            same = column.num == near
            if same.any():
                out[same] = bool(compare(near, value))
        for i, exact in column.big.items():
            out[i] = bool(compare(exact, value))
        return out


def _mask(values: Any) -> Mask:
    out: Mask = values
    return out
