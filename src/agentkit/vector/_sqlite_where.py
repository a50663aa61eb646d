"""A parsed ``where`` as SQLite SQL over the ``metadata`` JSON text of ``chunks``.

JSON types are kept by testing ``json_type`` before comparing ``json_extract``: a
JSON ``true`` (which ``json_extract`` reads as 1) never equals the number 1, and a
string is never ordered against a number. Every test yields 0 or 1, never NULL (``IS``
instead of ``=`` on the type), so ``NOT`` is the exact complement and ``$ne``/``$nin``
pass rows without the key. Strings compare in SQLite's BINARY collation, which on UTF-8
text is code point order, the reference evaluator's.

A key is reached by a JSON path when it is plain printable ASCII without quotes or
backslashes (the path cannot spell those); any other key through ``json_each``, which
compares the decoded label. Operands travel as bound parameters; nothing a user writes
becomes SQL text.
"""

from __future__ import annotations

from typing import Any

from agentkit.kernel.where import And, Field, Not, Where

_INT64 = 2**63


def compile_sqlite(where: Where, column: str = "metadata") -> tuple[str, list[Any]]:
    """``where`` as one SQL boolean expression on ``column``, with its parameters."""
    params: list[Any] = []
    return _node(where, column, params), params


def _node(where: Where, column: str, params: list[Any]) -> str:
    if isinstance(where, Field):
        return _field(where, column, params)
    if isinstance(where, Not):
        return f"NOT ({_node(where.part, column, params)})"
    joiner = " AND " if isinstance(where, And) else " OR "
    return "(" + joiner.join(_node(p, column, params) for p in where.parts) + ")"


def plain_key(key: str) -> bool:
    return key.isascii() and key.isprintable() and '"' not in key and "\\" not in key


class _Access:
    """The SQL for one key's JSON type and value, each use binding its own parameters."""

    def __init__(self, key: str, column: str, params: list[Any]) -> None:
        self.key, self.column, self.params = key, column, params

    def kind(self) -> str:
        if plain_key(self.key):
            self.params.append(f'$."{self.key}"')
            return f"json_type({self.column}, ?)"
        self.params.append(self.key)
        return f"(SELECT type FROM json_each({self.column}) WHERE key = ?)"

    def value(self) -> str:
        if plain_key(self.key):
            self.params.append(f'$."{self.key}"')
            return f"json_extract({self.column}, ?)"
        self.params.append(self.key)
        return f"(SELECT value FROM json_each({self.column}) WHERE key = ?)"


def _field(field: Field, column: str, params: list[Any]) -> str:
    at = _Access(field.key, column, params)
    op, value = field.op, field.value
    if op == "exists":
        return f"({at.kind()} IS {'NOT ' if value else ''}NULL)"
    if op == "ne":
        return f"NOT {_equal(at, value, params)}"
    if op == "eq":
        return _equal(at, value, params)
    if op in ("in", "nin"):
        test = _any_of(at, value, params)
        return test if op == "in" else f"NOT {test}"
    sign = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
    if isinstance(value, str):
        kind, got = at.kind(), at.value()
        params.append(value)
        return f"({kind} IS 'text' AND {got} {sign} ?)"
    kind, got = _number_kind(at), at.value()
    params.append(_number(value))
    return f"({kind} AND {got} {sign} ?)"


def _equal(at: _Access, value: Any, params: list[Any]) -> str:
    if value is None:
        return f"({at.kind()} IS 'null')"
    if value is True:
        return f"({at.kind()} IS 'true')"
    if value is False:
        return f"({at.kind()} IS 'false')"
    if isinstance(value, str):
        kind, got = at.kind(), at.value()
        params.append(value)
        return f"({kind} IS 'text' AND {got} = ?)"
    kind, got = _number_kind(at), at.value()
    params.append(_number(value))
    return f"({kind} AND {got} = ?)"


def _any_of(at: _Access, values: tuple[Any, ...], params: list[Any]) -> str:
    """One test per JSON kind present (strings and numbers each one ``IN`` list)."""
    tests: list[str] = []
    strings = [v for v in values if isinstance(v, str)]
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    kinds = sorted(
        {
            {None: "null", True: "true", False: "false"}[v]
            for v in values
            if v is None or isinstance(v, bool)
        }
    )
    if kinds:
        tests.append(f"({at.kind()} IN ({', '.join(repr(k) for k in kinds)}))")
        # IN with NULL on the left is NULL: coalesce keeps the test 0/1.
        tests[-1] = f"coalesce({tests[-1]}, 0)"
    if strings:
        kind, got = at.kind(), at.value()
        params.extend(strings)
        marks = ", ".join("?" * len(strings))
        tests.append(f"({kind} IS 'text' AND {got} IN ({marks}))")
    if numbers:
        kind, got = _number_kind(at), at.value()
        params.extend(_number(v) for v in numbers)
        marks = ", ".join("?" * len(numbers))
        tests.append(f"({kind} AND {got} IN ({marks}))")
    if not tests:
        return "(0)"
    return "(" + " OR ".join(tests) + ")"


def _number_kind(at: _Access) -> str:
    kind = at.kind()
    return f"coalesce({kind} IN ('integer', 'real'), 0)"


def _number(value: int | float) -> int | float:
    """SQLite integers are 64-bit; a wider operand is compared as a double (and such
    stored integers are read back as doubles too)."""
    if isinstance(value, int) and not -_INT64 <= value < _INT64:
        return float(value)
    return value
