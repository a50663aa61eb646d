"""agentkit ``where`` -> LlamaIndex ``MetadataFilters``, as far as it safely goes.

A pushed-down filter only narrows what the backend returns; every result is still
re-checked with ``matches_where`` afterwards. So a key that cannot be expressed
(bool, None, dict, mixed lists: LlamaIndex's filter values refuse them) is simply
left out of the pushdown rather than approximated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.schema import QueryBundle
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def has_empty_any_of(where: Mapping[str, Any] | None) -> bool:
    """An empty any-of list matches nothing, so the backend need not be asked at all."""
    return bool(where) and any(
        isinstance(v, (list, tuple, set, frozenset)) and not v for v in (where or {}).values()
    )


def where_filters(where: Mapping[str, Any] | None) -> tuple[list[MetadataFilter], bool]:
    """The pushable part of ``where`` as flat filters, and whether that was all of it."""
    filters: list[MetadataFilter] = []
    complete = True
    for key, value in (where or {}).items():
        if _scalar(value):
            filters.append(MetadataFilter(key=key, value=value, operator=FilterOperator.EQ))
            continue
        if isinstance(value, (list, tuple, set, frozenset)) and value:
            values = list(value)
            kinds = {type(v) for v in values}
            if len(kinds) == 1 and kinds <= {str, int, float}:
                filters.append(MetadataFilter(key=key, value=values, operator=FilterOperator.IN))
                continue
        complete = False
    return filters, complete


def merge_filters(
    existing: MetadataFilters | None, extra: list[MetadataFilter]
) -> tuple[MetadataFilters | None, bool]:
    """AND ``extra`` onto the user's filters, keeping one flat list.

    The simple vector store rejects nested groups, so an OR or nested user filter is
    kept as is and ``extra`` is not pushed (second value False).
    """
    if not extra:
        return existing, True
    if existing is None or not existing.filters:
        return MetadataFilters(filters=list(extra), condition=FilterCondition.AND), True
    flat = all(isinstance(f, MetadataFilter) for f in existing.filters)
    if existing.condition not in (None, FilterCondition.AND) or not flat:
        return existing, False
    merged = MetadataFilters(filters=[*existing.filters, *extra], condition=FilterCondition.AND)
    return merged, True


def query_bundle(query: str) -> QueryBundle:
    """A bundle that still gets embedded when the query is empty.

    LlamaIndex embeds nothing for ``""`` and its vector retriever then fails on a
    missing embedding; an empty query is a valid agentkit query, so embed it as is.
    """
    return QueryBundle(query_str=query, custom_embedding_strs=[query] if not query else None)
