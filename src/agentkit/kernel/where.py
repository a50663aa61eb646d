"""The ``where`` language: one metadata filter, parsed once, meaning the same everywhere.

A ``where`` is a mapping. A plain key tests one metadata key: a scalar value means
"equals", a list (tuple, set) means "equals one of". A value may instead be an operator
dict, ``{"year": {"$gte": 2020, "$lt": 2025}}`` (several operators all hold):
``$eq $ne $gt $gte $lt $lte $in $nin $exists``. The top level may also hold ``$and``
and ``$or`` (a non-empty list of filters) and ``$not`` (one filter); several top-level
entries all hold. This is the operator set of LangChain's Chroma and PGVector dialects
and of LangGraph's store filters, so a user's filter dict works unchanged.

Values compare as JSON types, in every store alike:

- ``True`` is not ``1``; ``1`` equals ``1.0`` (both JSON numbers); ``None`` is JSON null.
- ``$gt``/``$gte``/``$lt``/``$lte`` take a number or a str and hold only for a stored
  value of the same kind: a string is never ordered against a number, and strings
  order by code point (what SQLite's BINARY and PostgreSQL's "C" collation do).
- A missing key matches nothing, except ``{"$exists": False}`` and the negations:
  ``$ne`` and ``$nin`` are exactly "not ``$eq``" and "not ``$in``", so a record without
  the key passes them, and ``$not`` is the complement of its filter. That is Chroma's,
  LangGraph's and MongoDB's reading; a user who wants "has k and k != v" writes
  ``{"k": {"$exists": True, "$ne": v}}``.
- Stored lists and objects equal no operand (operands are scalars): they are seen only
  by ``$exists``, ``$ne`` and ``$nin``.

A filter is refused before any store is touched (:class:`InvalidFilter`, naming where
in the filter, the key and the operator) for: an unknown operator, an operand of the
wrong type (``$in`` with a scalar, ``$gt`` with a dict, a non-finite number), an empty
``$and``/``$or``, an operator dict mixed with plain keys, nesting deeper than
``MAX_WHERE_DEPTH``, or more than ``MAX_WHERE_TERMS`` tests and values in all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agentkit.kernel.errors import InvalidFilter

__all__ = [
    "MAX_WHERE_DEPTH",
    "MAX_WHERE_TERMS",
    "And",
    "Field",
    "Not",
    "Op",
    "Or",
    "Scalar",
    "Where",
    "json_kind",
    "merge_where",
    "parse_where",
]

MAX_WHERE_DEPTH = 8
"""How deeply ``$and``/``$or``/``$not`` may nest (the top level is depth 1)."""
MAX_WHERE_TERMS = 1024
"""How many key tests plus ``$in``/``$nin``/any-of values a filter may hold in all."""

Scalar = str | int | float | bool | None
Op = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "exists"]
_FIELD_OPS: dict[str, Op] = {
    "$eq": "eq",
    "$ne": "ne",
    "$gt": "gt",
    "$gte": "gte",
    "$lt": "lt",
    "$lte": "lte",
    "$in": "in",
    "$nin": "nin",
    "$exists": "exists",
}
_LOGIC = ("$and", "$or", "$not")
_ANY_OF = (list, tuple, set, frozenset)
Kind = Literal["null", "bool", "number", "string", "other"]


def json_kind(value: object) -> Kind:
    """The JSON type ``value`` is stored as: what every comparison first agrees on."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


@dataclass(frozen=True, slots=True)
class Field:
    """One test of one metadata key.

    ``value`` is a scalar for ``eq``/``ne``, a number or str for the orderings, a tuple
    of scalars for ``in``/``nin`` and a bool for ``exists``.
    """

    key: str
    op: Op
    value: Any

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        """The reference evaluation of this test on one record's metadata."""
        op = self.op
        if op == "exists":
            return (self.key in metadata) is self.value
        if op == "ne":
            return self.key not in metadata or not _equal(metadata[self.key], self.value)
        if op == "nin":
            if self.key not in metadata:
                return True
            got = metadata[self.key]
            return not any(_equal(got, v) for v in self.value)
        if self.key not in metadata:
            return False
        got = metadata[self.key]
        if op == "eq":
            return _equal(got, self.value)
        if op == "in":
            return any(_equal(got, v) for v in self.value)
        return _ordered(got, op, self.value)


@dataclass(frozen=True, slots=True)
class And:
    """Every part holds."""

    parts: tuple[Where, ...]

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        return all(p.matches(metadata) for p in self.parts)


@dataclass(frozen=True, slots=True)
class Or:
    """At least one part holds."""

    parts: tuple[Where, ...]

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        return any(p.matches(metadata) for p in self.parts)


@dataclass(frozen=True, slots=True)
class Not:
    """The part does not hold (a record missing its keys included)."""

    part: Where

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        return not self.part.matches(metadata)


Where = Field | And | Or | Not
"""A parsed filter: the one tree every store evaluates or compiles."""


def parse_where(where: Mapping[str, Any] | None) -> Where | None:
    """Parse and validate a ``where``; None (or ``{}``) filters nothing.

    Raises:
        InvalidFilter: Anything the module docstring lists as refused, naming the
            place in the filter, the key and the operator.
    """
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise InvalidFilter(f"where must be a mapping or None, got {type(where).__name__}")
    if not where:
        return None
    budget = [MAX_WHERE_TERMS]
    return _filter(where, "where", 1, budget)


def merge_where(
    default: Mapping[str, Any] | None, call: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """A source's default ``where`` with a call's over it: top-level keys of the call
    replace the default's of the same name, operator keys (``$and``, ``$or``, ``$not``)
    included, and every other entry of either still holds. So a wired-in filter can be
    widened or overridden per call, as memory.md says; to add to a default ``$or``
    rather than replace it, wrap the call's in ``$and``."""
    merged = {**(default or {}), **(call or {})}
    return merged or None


# --- parsing ---------------------------------------------------------------------------


def _filter(where: Mapping[str, Any], at: str, depth: int, budget: list[int]) -> Where:
    if depth > MAX_WHERE_DEPTH:
        raise InvalidFilter(
            f"{at}: filter nests deeper than {MAX_WHERE_DEPTH} levels of $and/$or/$not",
            path=at,
        )
    parts: list[Where] = []
    for key, value in where.items():
        if not isinstance(key, str):
            raise InvalidFilter(f"{at}: keys must be str, got {type(key).__name__}", path=at)
        here = f"{at}[{key!r}]"
        if key in _LOGIC:
            parts.append(_logic(key, value, here, depth, budget))
        elif key.startswith("$"):
            hint = (
                " (key operators go inside a key: {'k': {'$gt': 1}})" if (key in _FIELD_OPS) else ""
            )
            raise InvalidFilter(
                f"{here}: unknown top-level operator {key!r}; expected a metadata key or "
                f"one of $and, $or, $not{hint}",
                key=None,
                operator=key,
                path=here,
            )
        else:
            parts.append(_key_tests(key, value, here, budget))
    if not parts:
        raise InvalidFilter(f"{at}: an empty filter inside $and/$or/$not tests nothing", path=at)
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def _logic(op: str, value: Any, at: str, depth: int, budget: list[int]) -> Where:
    if op == "$not":
        if not isinstance(value, Mapping):
            raise InvalidFilter(
                f"{at}: $not takes one filter (a mapping), got {type(value).__name__}",
                operator=op,
                path=at,
            )
        return Not(_filter(value, at, depth + 1, budget))
    if not isinstance(value, (list, tuple)):
        raise InvalidFilter(
            f"{at}: {op} takes a list of filters, got {type(value).__name__}",
            operator=op,
            path=at,
        )
    if not value:
        raise InvalidFilter(f"{at}: {op} needs at least one filter", operator=op, path=at)
    parts: list[Where] = []
    for i, sub in enumerate(value):
        if not isinstance(sub, Mapping):
            raise InvalidFilter(
                f"{at}[{i}]: each {op} entry must be a filter (a mapping), got "
                f"{type(sub).__name__}",
                operator=op,
                path=f"{at}[{i}]",
            )
        parts.append(_filter(sub, f"{at}[{i}]", depth + 1, budget))
    if len(parts) == 1:
        return parts[0]
    return And(tuple(parts)) if op == "$and" else Or(tuple(parts))


def _key_tests(key: str, value: Any, at: str, budget: list[int]) -> Where:
    if isinstance(value, Mapping):
        if not value:
            raise InvalidFilter(
                f"{at}: an empty operator dict for key {key!r}; give an operator such as "
                "{'$eq': value}",
                key=key,
                path=at,
            )
        tests: list[Where] = []
        for name, operand in value.items():
            op = _FIELD_OPS.get(name) if isinstance(name, str) else None
            if op is None:
                raise InvalidFilter(
                    f"{at}: unknown operator {name!r} for key {key!r}; expected one of "
                    f"{', '.join(_FIELD_OPS)} (a dict value must be an operator dict)",
                    key=key,
                    operator=str(name),
                    path=at,
                )
            tests.append(_field(key, op, name, operand, f"{at}[{name!r}]", budget))
        return tests[0] if len(tests) == 1 else And(tuple(tests))
    if isinstance(value, _ANY_OF):
        return _field(key, "in", None, value, at, budget)
    return _field(key, "eq", None, value, at, budget)


def _field(key: str, op: Op, name: str | None, operand: Any, at: str, budget: list[int]) -> Field:
    spelt = name or ("any-of list" if op == "in" else "equality")
    _spend(budget, 1, at)
    if "\x00" in key or (isinstance(operand, str) and "\x00" in operand) or (
        isinstance(operand, _ANY_OF) and any(isinstance(v, str) and "\x00" in v for v in operand)
    ):
        raise InvalidFilter(
            f"{at}: {spelt} on key {key!r} holds a NUL character, which no durable store "
            "keeps in metadata",
            key=key, operator=name, path=at,
        )

    def wrong(expected: str) -> InvalidFilter:
        return InvalidFilter(
            f"{at}: {spelt} on key {key!r} expects {expected}, got "
            f"{type(operand).__name__} {_short(operand)}",
            key=key,
            operator=name,
            path=at,
        )

    if op == "exists":
        if not isinstance(operand, bool):
            raise wrong("True or False")
        return Field(key, op, operand)
    if op in ("in", "nin"):
        if not isinstance(operand, _ANY_OF):
            raise wrong("a list of str, number, bool or None")
        values = tuple(operand)
        _spend(budget, len(values), at)
        for v in values:
            if not _scalar(v):
                raise InvalidFilter(
                    f"{at}: {spelt} on key {key!r} holds {type(v).__name__} {_short(v)}; "
                    "its values must be str, finite numbers, bools or None",
                    key=key,
                    operator=name,
                    path=at,
                )
        return Field(key, op, values)
    if op in ("eq", "ne"):
        if not _scalar(operand):
            raise wrong("a str, a finite number, a bool or None")
        return Field(key, op, operand)
    if isinstance(operand, bool) or not (
        isinstance(operand, str) or (isinstance(operand, (int, float)) and _scalar(operand))
    ):
        raise wrong("a finite number or a str (only those are ordered)")
    return Field(key, op, operand)


def _spend(budget: list[int], n: int, at: str) -> None:
    budget[0] -= n
    if budget[0] < 0:
        raise InvalidFilter(
            f"{at}: filter holds more than {MAX_WHERE_TERMS} tests and values in all",
            path=at,
        )


def _scalar(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (str, int, bool))


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- evaluation --------------------------------------------------------------------------


def _equal(got: Any, wanted: Any) -> bool:
    kind = json_kind(wanted)
    if json_kind(got) != kind:
        return False
    if kind == "null":
        return True
    return bool(got == wanted)


def _ordered(got: Any, op: Op, wanted: Any) -> bool:
    if json_kind(got) != json_kind(wanted):
        return False
    if isinstance(got, float) and math.isnan(got):
        return False
    if op == "gt":
        return bool(got > wanted)
    if op == "gte":
        return bool(got >= wanted)
    if op == "lt":
        return bool(got < wanted)
    return bool(got <= wanted)
