"""LlamaIndex ``MetadataFilters`` read against agentkit records.

Two halves: ``pushdown`` is the part of the filters an agentkit ``where`` states exactly
(equality and any-of under a top-level AND), so the store narrows its own search; and
``predicate`` is the whole filter with LlamaIndex's own operator semantics
(``build_metadata_filter_fn``), nested groups included, which every record is checked
against on the way out. A pushed filter may only ever let through more than the
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

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType

Predicate = Callable[[Mapping[str, Any]], bool]

__all__ = ["Predicate", "predicate", "pushdown"]


def pushdown(filters: MetadataFilters | None) -> dict[str, Any]:
    """The exact ``where`` part: ``==`` and ``in`` of a top-level AND, first per key.

    LlamaIndex compares with ``==``, under which ``True == 1``; agentkit's ``where``
    keeps bools and numbers apart, so 0 and 1 stay with the predicate.
    """
    where: dict[str, Any] = {}
    if filters is None or filters.condition not in (None, FilterCondition.AND):
        return where
    for leaf in filters.filters:
        if not isinstance(leaf, MetadataFilter) or leaf.key in where:
            continue
        value = leaf.value
        if leaf.operator == FilterOperator.EQ and _exact(value):
            where[leaf.key] = value
        elif (
            leaf.operator == FilterOperator.IN
            and isinstance(value, list)
            and value
            and all(_exact(v) for v in value)
        ):
            where[leaf.key] = list(value)
    return where


def _exact(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return False
    return not (isinstance(value, (int, float)) and value in (0, 1))


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
