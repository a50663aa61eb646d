"""LlamaIndex ``MetadataFilters`` read against agentkit records.

Two halves: ``pushdown`` is the filters as an agentkit ``where`` (every operator and
group the language can state with LlamaIndex's meaning), so the store filters inside
its own search; and ``predicate`` is the whole filter with LlamaIndex's own operator
semantics (``build_metadata_filter_fn``), nested groups included, which every record is
checked against on the way out. A pushed filter may only ever let through more than the
predicate, never less, so anything not stated exactly stays with the predicate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from llama_index.core.vector_stores.utils import build_metadata_filter_fn

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, InvalidFilter
from agentkit.kernel.where import parse_where

Predicate = Callable[[Mapping[str, Any]], bool]

__all__ = ["Predicate", "predicate", "pushdown"]


def pushdown(filters: MetadataFilters | None) -> dict[str, Any]:
    """``filters`` as an agentkit ``where`` the store evaluates inside its search.

    Every operator agentkit's language can state with LlamaIndex's meaning is
    translated, nested AND/OR/NOT groups included: ``==``/``!=``/``in``/``nin`` carry
    the bool twin of 0 and 1 (LlamaIndex compares with ``==``, under which ``True ==
    1``), orderings on numbers add the bools Python would order alike, a missing or
    null value passes only ``!=``/``nin`` as in LlamaIndex. What it cannot state
    (``any``, ``all``, ``contains``, text matches, ``is_empty``, a list compared with
    ``==``) is left out where that only widens the filter (under AND) and drops its
    whole group otherwise, so the pushed filter never lets through less than
    ``predicate``, which still judges every record.
    """
    if filters is None:
        return {}
    where, _exact = _group_where(filters)
    if where is None:
        return {}
    try:
        parse_where(where)
    except InvalidFilter:  # deeper or larger than agentkit takes: the predicate alone
        return {}
    return where


Translated = tuple[dict[str, Any] | None, bool]
"""(the where, None for "everything"; whether it is exactly the LlamaIndex filter)"""


def _group_where(filters: MetadataFilters) -> Translated:
    parts = [
        _group_where(leaf) if isinstance(leaf, MetadataFilters) else _leaf_where(leaf)
        for leaf in filters.filters
    ]
    if not parts:
        return None, True
    exact = all(e for _, e in parts)
    wheres = [w for w, _ in parts]
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        kept = [w for w in wheres if w is not None]
        return (_join("$and", kept) if kept else None), exact
    if any(w is None for w in wheres):
        return None, False  # one branch is "anything": so is the group (or its NOT is unknown)
    either = _join("$or", [w for w in wheres if w is not None])
    if condition == FilterCondition.OR:
        return either, exact
    if condition == FilterCondition.NOT and exact:
        return {"$not": either}, True
    return None, False


def _join(op: str, wheres: list[dict[str, Any]]) -> dict[str, Any]:
    return wheres[0] if len(wheres) == 1 else {op: wheres}


def _twins(values: list[Any]) -> list[Any]:
    """``values`` plus the bools LlamaIndex's ``==`` equates with them (0/1 and back),
    without None (a null value passes no ``==`` and every ``!=`` in LlamaIndex)."""
    out: list[Any] = []
    for v in values:
        if v is None:
            continue
        out.append(v)
        if isinstance(v, bool):
            out.append(int(v))
        elif isinstance(v, (int, float)) and v in (0, 1):
            out.append(bool(v))
    return out


def _leaf_where(leaf: MetadataFilter) -> Translated:
    key, op, value = leaf.key, leaf.operator, leaf.value
    if op in (FilterOperator.EQ, FilterOperator.NE):
        if isinstance(value, list):
            return None, False  # a list compared whole: agentkit has no list values
        twins = _twins([value])
        if op == FilterOperator.EQ:
            return {key: {"$in": twins}}, True
        return {key: {"$nin": twins}}, True
    if op in (FilterOperator.IN, FilterOperator.NIN):
        if not isinstance(value, list):
            return None, False  # ``x in "text"`` is a substring test
        twins = _twins(value)
        return {key: {"$in" if op == FilterOperator.IN else "$nin": twins}}, True
    sign = _ORDER.get(op)
    if sign is not None:
        if value is None or isinstance(value, list):
            return ({key: {"$in": []}} if value is None else None), value is None
        if isinstance(value, str):
            return {key: {sign: value}}, True
        bools = [b for b in (False, True) if _ORDERS[sign](int(b), value)]
        ordered: dict[str, Any] = {key: {sign: value}}
        if bools:
            return {"$or": [ordered, {key: {"$in": bools}}]}, True
        return ordered, True
    return None, False  # any, all, contains, text_match(_insensitive), is_empty


_ORDER = {
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
}
_ORDERS: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda a, b: bool(a > b),
    "$gte": lambda a, b: bool(a >= b),
    "$lt": lambda a, b: bool(a < b),
    "$lte": lambda a, b: bool(a <= b),
}


def predicate(filters: MetadataFilters | None) -> Predicate:
    """Whether a record's metadata passes ``filters`` (None or empty: everything does)."""
    if filters is None:
        return lambda _metadata: True
    if not isinstance(filters, MetadataFilters):
        raise InvalidArgumentType(
            f"filters must be LlamaIndex MetadataFilters, got {type(filters).__name__}"
        )
    return _group(filters)


def _group(filters: MetadataFilters) -> Predicate:
    parts = [
        _group(leaf) if isinstance(leaf, MetadataFilters) else _leaf(leaf)
        for leaf in filters.filters
    ]
    if not parts:
        return lambda _metadata: True
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        return lambda metadata: all(part(metadata) for part in parts)
    if condition == FilterCondition.OR:
        return lambda metadata: any(part(metadata) for part in parts)
    if condition == FilterCondition.NOT:
        return lambda metadata: not any(part(metadata) for part in parts)
    raise InvalidArgument(f"unknown filter condition {condition!r}")


def _leaf(leaf: MetadataFilter) -> Predicate:
    current: list[Mapping[str, Any]] = [{}]
    check = build_metadata_filter_fn(lambda _id: current[0], MetadataFilters(filters=[leaf]))

    def run(metadata: Mapping[str, Any]) -> bool:
        current[0] = metadata
        try:
            return bool(check(""))
        except TypeError:
            return False  # e.g. ">" between a str and a number: not a match

    return run
