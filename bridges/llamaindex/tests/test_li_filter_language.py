"""LlamaIndex ``MetadataFilters`` on ``AgentkitVectorStore``: every operator and nested
condition, answered as LlamaIndex's own filter function answers, with the part agentkit
can state pushed into the store's search.

Generated filters and records; the oracle is LlamaIndex's ``build_metadata_filter_fn``
(through the bridge's ``predicate``, which adds nesting the way LlamaIndex's stores do).
"""

from __future__ import annotations

from typing import Any

import pytest
from agentkit_llamaindex import AgentkitVectorStore
from agentkit_llamaindex._node_filters import predicate, pushdown
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from agentkit.vector import HashingEmbedder, InMemoryVectorStore, matches_where

KEYS = ["a", "b"]
STORED = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([0.0, 1.0, 1.5]),
    st.sampled_from(["", "x", "y", "xy"]), st.just(["x", "y"]),
)
RECORDS = st.lists(st.dictionaries(st.sampled_from(KEYS), STORED, max_size=2), min_size=1,
                   max_size=10)
OPERAND = st.one_of(st.integers(-2, 2), st.sampled_from([0.0, 1.0, 1.5]),
                    st.sampled_from(["", "x", "y"]))
LISTS = st.one_of(st.lists(st.integers(-2, 2), max_size=3),
                  st.lists(st.sampled_from(["x", "y", ""]), max_size=3))


def _leaf() -> st.SearchStrategy[MetadataFilter]:
    scalar_ops = st.sampled_from([FilterOperator.EQ, FilterOperator.NE, FilterOperator.GT,
                                  FilterOperator.GTE, FilterOperator.LT, FilterOperator.LTE])
    list_ops = st.sampled_from([FilterOperator.IN, FilterOperator.NIN, FilterOperator.ANY,
                                FilterOperator.ALL])
    return st.one_of(
        st.builds(lambda k, op, v: MetadataFilter(key=k, operator=op, value=v),
                  st.sampled_from(KEYS), scalar_ops, OPERAND),
        st.builds(lambda k, op, v: MetadataFilter(key=k, operator=op, value=v),
                  st.sampled_from(KEYS), list_ops, LISTS),
        st.builds(lambda k, v: MetadataFilter(key=k, operator=FilterOperator.CONTAINS, value=v),
                  st.sampled_from(KEYS), st.sampled_from(["x", "y"])),
        st.builds(lambda k, v: MetadataFilter(key=k, operator=FilterOperator.TEXT_MATCH,
                                              value=v), st.sampled_from(KEYS), st.just("x")),
        st.builds(lambda k: MetadataFilter(key=k, operator=FilterOperator.IS_EMPTY, value=None),
                  st.sampled_from(KEYS)),
    )


FILTERS: st.SearchStrategy[MetadataFilters] = st.recursive(
    st.builds(lambda leaves, c: MetadataFilters(filters=leaves, condition=c),
              st.lists(_leaf(), min_size=1, max_size=3), st.sampled_from(list(FilterCondition))),
    lambda inner: st.builds(
        lambda parts, c: MetadataFilters(filters=parts, condition=c),
        st.lists(st.one_of(inner, _leaf()), min_size=1, max_size=3),
        st.sampled_from(list(FilterCondition)),
    ),
    max_leaves=4,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=RECORDS, filters=FILTERS)
def test_answers_as_llamaindex_and_pushes_what_agentkit_can_state(
    records: list[dict[str, Any]], filters: MetadataFilters
) -> None:
    passes = predicate(filters)
    expected = {f"n{i}" for i, meta in enumerate(records) if passes(meta)}
    where = pushdown(filters)
    # the pushed filter never drops a record LlamaIndex keeps
    for i, meta in enumerate(records):
        if f"n{i}" in expected:
            assert matches_where(meta, where), (meta, where)
    store = AgentkitVectorStore(InMemoryVectorStore(HashingEmbedder(dim=32)))
    store.add([TextNode(id_=f"n{i}", text=f"note {i}", metadata=meta)
               for i, meta in enumerate(records)])
    result = store.query(VectorStoreQuery(query_str="note", similarity_top_k=len(records),
                                          filters=filters))
    assert set(result.ids or []) == expected


@pytest.mark.parametrize(
    ("leaf", "records", "pushed"),
    [
        (MetadataFilter(key="n", value=1), [{"n": True}, {"n": 1.0}, {"n": "1"}], {0, 1}),
        (MetadataFilter(key="n", value=0, operator=FilterOperator.GT),
         [{"n": True}, {"n": False}, {"n": 2}], {0, 2}),
        (MetadataFilter(key="n", value=[1, 5], operator=FilterOperator.NIN),
         [{}, {"n": None}, {"n": True}, {"n": 5}, {"n": 3}], {0, 1, 4}),
        (MetadataFilter(key="s", value="b", operator=FilterOperator.LTE),
         [{"s": "a"}, {"s": "c"}, {"s": 1}], {0}),
    ],
)
def test_every_comparison_is_pushed_exactly(
    leaf: MetadataFilter, records: list[dict[str, Any]], pushed: set[int]
) -> None:
    """Comparisons reach the store as a where that admits exactly LlamaIndex's answer
    (bool twins of 0 and 1, a null passing only != and nin)."""
    for condition in (FilterCondition.AND, FilterCondition.NOT):
        filters = MetadataFilters(filters=[leaf], condition=condition)
        where = pushdown(filters)
        assert where, "pushed down, not left to a post-filter"
        want = pushed if condition == FilterCondition.AND else set(range(len(records))) - pushed
        assert {i for i, m in enumerate(records) if matches_where(m, where)} == want
        assert {i for i, m in enumerate(records) if predicate(filters)(m)} == want
