"""A ``where`` evaluated over metadata columns: one numpy mask for a whole scope.

A dense search filters *inside* its product (the mask picks the rows the top-k may
come from), so its cost must stay near the unfiltered one. Per-row Python over 100k
records costs tens of milliseconds; typed columns, built once per key and kept until
the rows change, turn each test into a few vector operations.

A key's column holds, per row, the JSON kind of its value, the value as float64 when
a number, and a code into the sorted distinct strings when a str (code order is string
order, so a range on strings is a range on codes). The few rows float64 cannot hold
exactly (integers beyond 2**53) are re-judged by the reference evaluator, so the mask
always equals ``Where.matches`` row by row.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.kernel.where import And, Field, Not, Where

Mask = npt.NDArray[np.bool_]

_MISSING, _NULL, _FALSE, _TRUE, _NUMBER, _STRING, _OTHER = range(7)
_EXACT = 2**53  # float64 holds every integer up to this exactly


@dataclass(frozen=True, slots=True)
class _Column:
    kind: npt.NDArray[np.int8]
    num: npt.NDArray[np.float64]
    code: npt.NDArray[np.int32]
    strings: list[str]  # sorted, distinct
    inexact: list[int]  # rows whose number float64 cannot hold exactly

    @classmethod
    def build(cls, key: str, row: Callable[[int], Mapping[str, Any]], n: int) -> _Column:
        kind = np.zeros(n, dtype=np.int8)
        num = np.full(n, np.nan)
        text: dict[int, str] = {}
        inexact: list[int] = []
        for i in range(n):
            meta = row(i)
            if key not in meta:
                continue
            value = meta[key]
            if value is None:
                kind[i] = _NULL
            elif value is True:
                kind[i] = _TRUE
            elif value is False:
                kind[i] = _FALSE
            elif isinstance(value, str):
                kind[i] = _STRING
                text[i] = value
            elif isinstance(value, bool):  # a bool subclass instance
                kind[i] = _TRUE if value else _FALSE
            elif isinstance(value, (int, float)):
                kind[i] = _NUMBER
                if isinstance(value, int) and abs(value) > _EXACT:
                    inexact.append(i)
                else:
                    num[i] = value
            else:
                kind[i] = _OTHER
        strings = sorted(set(text.values()))
        code = np.full(n, -1, dtype=np.int32)
        if text:
            index = {s: c for c, s in enumerate(strings)}
            rows = np.fromiter(text.keys(), dtype=np.intp, count=len(text))
            code[rows] = np.fromiter((index[s] for s in text.values()), np.int32, len(text))
        return cls(kind, num, code, strings, inexact)


class WhereColumns:
    """Columns of one unchanging snapshot of rows, built per key on first use.

    ``row(i)`` is the metadata of row ``i`` (of ``n``). Safe to share between threads:
    two threads may build the same key once each, and either result is right.
    """

    def __init__(self, row: Callable[[int], Mapping[str, Any]], n: int) -> None:
        self._row = row
        self.n = n
        self._columns: dict[str, _Column] = {}
        self._lock = threading.Lock()

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

    def _column(self, key: str) -> _Column:
        column = self._columns.get(key)
        if column is None:
            column = _Column.build(key, self._row, self.n)
            with self._lock:
                self._columns.setdefault(key, column)
        return column

    def _field(self, field: Field) -> Mask:
        column = self._column(field.key)
        op, value = field.op, field.value
        if op == "exists":
            out = _mask(column.kind != _MISSING)
            return out if value else ~out
        if op in ("ne", "nin"):
            return ~self._field(Field(field.key, "eq" if op == "ne" else "in", value))
        if op == "in":
            out = np.zeros(self.n, dtype=bool)
            for option in value:
                out |= self._equal(column, option)
        elif op == "eq":
            out = self._equal(column, value)
        else:
            out = self._ordered(column, op, value)
        if column.inexact or (_big(value)):
            rows = range(self.n) if _big(value) else column.inexact
            for i in rows:
                out[i] = field.matches(self._row(i))
        return out

    def _equal(self, column: _Column, value: Any) -> Mask:
        if value is None:
            return _mask(column.kind == _NULL)
        if isinstance(value, bool):
            return _mask(column.kind == (_TRUE if value else _FALSE))
        if isinstance(value, str):
            at = bisect.bisect_left(column.strings, value)
            if at == len(column.strings) or column.strings[at] != value:
                return np.zeros(self.n, dtype=bool)
            return _mask(column.code == at)
        result: Mask = column.num == float(value)
        return result

    def _ordered(self, column: _Column, op: str, value: Any) -> Mask:
        if isinstance(value, str):
            strings = column.strings
            if op in ("gt", "lte"):
                cut = bisect.bisect_right(strings, value)
            else:
                cut = bisect.bisect_left(strings, value)
            if op in ("gt", "gte"):
                return _mask(column.code >= cut)
            return _mask((column.code < cut) & (column.code >= 0))
        number = float(value)
        with np.errstate(invalid="ignore"):
            if op == "gt":
                return _mask(column.num > number)
            if op == "gte":
                return _mask(column.num >= number)
            if op == "lt":
                return _mask(column.num < number)
            return _mask(column.num <= number)


def _mask(values: Any) -> Mask:
    out: Mask = values
    return out


def _big(value: Any) -> bool:
    """An int operand float64 would round: the column is then judged row by row."""
    if isinstance(value, tuple):
        return any(_big(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > _EXACT
