"""The ``where`` language: what a filter means, what is refused, and the column mask.

Every store evaluates or compiles the one parsed tree; these tests pin the meaning the
stores are compared against (tests/test_where_stores.py compares them).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit.kernel import Ctx, InvalidArgumentType, InvalidFilter, Scope
from agentkit.kernel.where import MAX_WHERE_DEPTH, MAX_WHERE_TERMS, merge_where, parse_where
from agentkit.state.memory import VectorMemory
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, matches_where
from agentkit.vector._where_columns import WhereColumns

A = Scope("acme", "support")


@pytest.mark.parametrize(
    ("meta", "where", "expected"),
    [
        ({"a": 1}, {"a": 1}, True),
        ({"a": 1}, {"a": True}, False),  # True is not 1
        ({"a": True}, {"a": 1}, False),
        ({"a": 1.0}, {"a": 1}, True),  # both JSON numbers
        ({"a": "1"}, {"a": 1}, False),
        ({"a": None}, {"a": None}, True),
        ({}, {"a": None}, False),  # missing is not null
        ({"a": "x"}, {"a": ["y", "x"]}, True),  # a plain list is any-of, as before
        ({"a": "x"}, {"a": []}, False),
        ({"y": 2021}, {"y": {"$gte": 2020, "$lt": 2025}}, True),
        ({"y": 2025}, {"y": {"$gte": 2020, "$lt": 2025}}, False),
        ({"y": "2021"}, {"y": {"$gte": 2020}}, False),  # a string is never ordered vs a number
        ({"y": 5}, {"y": {"$gt": "a"}}, False),
        ({"y": True}, {"y": {"$gt": 0}}, False),  # a bool is not a number
        ({"s": "b"}, {"s": {"$gt": "a"}}, True),
        ({"s": "é"}, {"s": {"$gt": "z"}}, True),  # code point order
        ({}, {"a": {"$ne": 1}}, True),  # $ne and $nin pass a record without the key
        ({}, {"a": {"$nin": [1]}}, True),
        ({"a": 1}, {"a": {"$nin": [1, 2]}}, False),
        ({"a": True}, {"a": {"$ne": 1}}, True),
        ({}, {"a": {"$gt": 0}}, False),  # every other operator needs the key
        ({}, {"a": {"$in": [None]}}, False),
        ({}, {"a": {"$exists": False}}, True),
        ({"a": None}, {"a": {"$exists": True}}, True),
        ({"a": [1, 2]}, {"a": 1}, False),  # stored lists equal no scalar
        ({"a": [1, 2]}, {"a": {"$exists": True, "$ne": 1}}, True),
        ({"t": "a"}, {"$or": [{"t": "a"}, {"t": "b"}]}, True),
        ({"t": "c"}, {"$or": [{"t": "a"}, {"t": "b"}]}, False),
        ({"t": "a", "y": 1}, {"$and": [{"t": "a"}, {"y": {"$lte": 1}}]}, True),
        ({}, {"$not": {"t": "a"}}, True),
        ({"t": "a"}, {"$not": {"t": "a"}}, False),
        ({"t": "a", "u": 1}, {"t": "a", "$or": [{"u": 2}, {"u": {"$exists": False}}]}, False),
    ],
)
def test_the_reference_meaning(meta: dict[str, Any], where: dict[str, Any], expected: bool) -> None:
    assert matches_where(meta, where) is expected
    tree = parse_where(where)
    assert tree is not None
    assert tree.matches(meta) is expected
    assert matches_where(meta, tree) is expected  # a parsed filter is accepted as is


@pytest.mark.parametrize(
    ("where", "names"),
    [
        ({"a": {"$in": 3}}, ("'a'", "$in", "list")),
        ({"a": {"$nin": "xy"}}, ("'a'", "$nin")),
        ({"a": {"$gt": {"b": 1}}}, ("'a'", "$gt", "dict")),
        ({"a": {"$gt": None}}, ("'a'", "$gt")),
        ({"a": {"$lte": True}}, ("'a'", "$lte")),
        ({"a": {"$gt": float("nan")}}, ("'a'", "$gt")),
        ({"a": {"$exists": 1}}, ("'a'", "$exists")),
        ({"a": {"$regex": "x"}}, ("'a'", "$regex")),
        ({"a": {"b": 1}}, ("'a'", "'b'", "operator dict")),  # not a literal any more
        ({"a": {}}, ("'a'",)),
        ({"a": {"$eq": [1]}}, ("'a'", "$eq")),
        ({"a": {"$in": [1, {"x": 1}]}}, ("'a'", "$in")),
        ({"a": [1, [2]]}, ("'a'", "any-of")),
        ({"$gt": 1}, ("$gt", "inside a key")),
        ({"$foo": []}, ("$foo",)),
        ({"$or": []}, ("$or", "at least one")),
        ({"$and": {"a": 1}}, ("$and", "list")),
        ({"$or": [1]}, ("$or",)),
        ({"$not": [{"a": 1}]}, ("$not",)),
        ({"$or": [{"a": 1}, {"b": {"$in": 2}}]}, ("where['$or'][1]['b']['$in']",)),
    ],
)
def test_bad_filters_are_refused_naming_key_and_operator(
    where: dict[str, Any], names: tuple[str, ...]
) -> None:
    with pytest.raises(InvalidFilter) as info:
        parse_where(where)
    for name in names:
        assert name in str(info.value), (name, str(info.value))
    assert isinstance(info.value, ValueError)


def test_error_carries_key_operator_and_path() -> None:
    with pytest.raises(InvalidFilter) as info:
        parse_where({"$and": [{"year": {"$gt": {}}}]})
    assert info.value.key == "year"
    assert info.value.operator == "$gt"
    assert info.value.path == "where['$and'][0]['year']['$gt']"


def _nested(depth: int) -> dict[str, Any]:
    where: dict[str, Any] = {"k": 1}
    for _ in range(depth - 1):
        where = {"$or": [where, {"k": 2}]}
    return where


def test_depth_limit_is_documented_and_enforced() -> None:
    assert parse_where(_nested(MAX_WHERE_DEPTH)) is not None
    with pytest.raises(InvalidFilter, match=f"deeper than {MAX_WHERE_DEPTH}"):
        parse_where(_nested(MAX_WHERE_DEPTH + 1))
    # A hostile depth is refused by the limit, never by a RecursionError.
    with pytest.raises(InvalidFilter):
        parse_where(_nested(5000))


def test_size_limit_counts_tests_and_values() -> None:
    assert parse_where({"k": {"$in": list(range(MAX_WHERE_TERMS - 1))}}) is not None
    with pytest.raises(InvalidFilter, match=str(MAX_WHERE_TERMS)):
        parse_where({"k": {"$in": list(range(MAX_WHERE_TERMS))}})
    many = {f"k{i}": i for i in range(MAX_WHERE_TERMS + 1)}
    with pytest.raises(InvalidFilter, match="more than"):
        parse_where(many)


def test_empty_where_filters_nothing() -> None:
    assert parse_where(None) is None
    assert parse_where({}) is None
    assert matches_where({"a": 1}, {})


def test_merge_rule_by_top_level_key_operator_keys_included() -> None:
    default = {"tenant_tag": "x", "$or": [{"t": "a"}, {"t": "b"}]}
    assert merge_where(default, {"$or": [{"t": "c"}]}) == {
        "tenant_tag": "x",
        "$or": [{"t": "c"}],
    }
    assert merge_where(default, {"tenant_tag": {"$ne": "x"}})["tenant_tag"] == {"$ne": "x"}
    assert merge_where(None, None) is None
    assert merge_where({"a": 1}, {"$and": [{"b": 2}]}) == {"a": 1, "$and": [{"b": 2}]}


async def test_vector_memory_merges_operator_keys_as_the_spec_says() -> None:
    store = InMemoryVectorStore(HashingEmbedder(dim=32))
    mem = VectorMemory(store, where={"$or": [{"t": "a"}, {"t": "b"}]})
    ctx = Ctx(A)
    await store.upsert(
        [
            Chunk("1", "one", {"t": "a"}),
            Chunk("2", "two", {"t": "b"}),
            Chunk("3", "three", {"t": "c"}),
        ],
        scope=A,
    )
    ids = {i.id for i in await mem.query("x", k=10, ctx=ctx)}
    assert ids == {"1", "2"}
    # the call's $or replaces the default's
    assert {i.id for i in await mem.query("x", k=10, ctx=ctx, where={"$or": [{"t": "c"}]})} == {"3"}
    # a plain key ANDs with the default $or
    assert {i.id for i in await mem.query("x", k=10, ctx=ctx, where={"t": {"$ne": "a"}})} == {"2"}


async def test_forget_deletes_what_query_finds_under_the_same_merge() -> None:
    """forget merges its where over the default exactly as query does, operator keys
    included, so it deletes what the same call-time where finds, nothing the default
    keeps out."""
    store = InMemoryVectorStore(HashingEmbedder(dim=32))
    mem = VectorMemory(store, where={"$or": [{"t": "a"}, {"t": "b"}]})
    ctx = Ctx(A)
    await store.upsert(
        [Chunk(str(i), f"note {i}", {"t": "abc"[i % 3], "n": i}) for i in range(9)], scope=A
    )
    where = {"n": {"$gte": 3}, "$not": {"n": 7}}
    found = {i.id for i in await mem.query("note", k=20, ctx=ctx, where=where)}
    assert found == {"3", "4", "6"}  # t c (5, 8) kept out by the default $or; 7 by $not
    assert await mem.forget(where, ctx=ctx) == len(found)
    left = {c.id for c in await store.scan(scope=A)}
    assert left == {str(i) for i in range(9)} - found
    # a call's $or replaces the default's, for forget as for query
    swap = {"$or": [{"t": "c"}]}
    found = {i.id for i in await mem.query("note", k=20, ctx=ctx, where=swap)}
    assert found == {"2", "5", "8"}
    assert await mem.forget(swap, ctx=ctx) == 3


async def test_bad_filter_is_refused_before_the_store_is_touched() -> None:
    class Spy:
        calls = 0

        async def search(self, *a: Any, **kw: Any) -> list[Any]:
            Spy.calls += 1
            return []

        async def delete_where(self, *a: Any, **kw: Any) -> int:
            Spy.calls += 1
            return 0

    mem = VectorMemory(Spy())
    ctx = Ctx(A)
    with pytest.raises(InvalidFilter, match=r"\$gt"):
        await mem.query("x", k=1, ctx=ctx, where={"y": {"$gt": [1]}})
    with pytest.raises(InvalidFilter, match=r"\$bogus"):
        await mem.forget({"y": {"$bogus": 1}}, ctx=ctx)
    with pytest.raises(InvalidFilter):
        VectorMemory(Spy(), where={"$or": "nope"})
    with pytest.raises(InvalidArgumentType):
        await mem.query("x", k=1, ctx=ctx, where=[("a", 1)])  # type: ignore[arg-type]
    assert Spy.calls == 0


# --- the column mask equals the reference evaluator, row by row ---------------------

KEYS = ["a", "b", "c"]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from(
        [0.0, 1.0, 1.5, -2.5, 2**53 + 1, -(2**60), 1e300, 2**53, float(2**53), 10**400]
    ),
    st.sampled_from(["", "a", "b", "ab", "é", "Z", "1"]),
)
STORED = st.one_of(SCALARS, st.just([1, 2]), st.just({"x": 1}), st.just(float("nan")))
RECORDS = st.lists(
    st.dictionaries(st.sampled_from(KEYS), STORED, max_size=3), min_size=0, max_size=25
)
ORDERED = st.one_of(
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([0.5, 2**53 + 1, -1e300, float(2**53), -(10**400)]),
    st.sampled_from(["", "a", "ab", "b", "é"]),
)


def _field() -> st.SearchStrategy[dict[str, Any]]:
    key = st.sampled_from(KEYS)
    op = st.one_of(
        SCALARS,
        st.lists(SCALARS, max_size=3),
        st.fixed_dictionaries({"$eq": SCALARS}),
        st.fixed_dictionaries({"$ne": SCALARS}),
        st.fixed_dictionaries({"$in": st.lists(SCALARS, max_size=3)}),
        st.fixed_dictionaries({"$nin": st.lists(SCALARS, max_size=3)}),
        st.fixed_dictionaries({"$exists": st.booleans()}),
        st.dictionaries(
            st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), ORDERED, min_size=1, max_size=2
        ),
    )
    return st.builds(lambda k, v: {k: v}, key, op)


FILTERS: st.SearchStrategy[dict[str, Any]] = st.recursive(
    _field(),
    lambda inner: st.one_of(
        st.builds(lambda xs: {"$and": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: {"$or": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda x: {"$not": x}, inner),
        st.builds(lambda x, y: {**x, **y}, inner, inner),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(records=RECORDS, where=FILTERS)
def test_column_mask_equals_reference(records: list[dict[str, Any]], where: dict[str, Any]) -> None:
    try:
        tree = parse_where(where)
    except InvalidFilter:  # e.g. a merged dict that nests too deep; refused alike
        return
    assert tree is not None
    columns = WhereColumns(lambda i: records[i], len(records))
    got = columns.mask(tree).tolist()
    assert got == [tree.matches(r) for r in records], where
    again = columns.mask(tree).tolist()  # columns reused: same answer
    assert again == got


def test_column_mask_is_exact_where_float64_rounds() -> None:
    """Integers past 2**53 (stored or asked for) compare exactly, as Python compares
    them: 2**53 + 1 is not 2**53, though float64 holds both as 2.0**53."""
    edge = [2**53, float(2**53), 2**53 + 1, 2**53 + 2, -(2**53) - 1, 10**400, -(10**400), 1.5]
    records: list[dict[str, Any]] = [{"a": v} for v in edge] + [{"a": "x"}, {}]
    columns = WhereColumns(lambda i: records[i], len(records))
    for operand in edge:
        for op in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"):
            where = {"a": {op: [operand] if op in ("$in", "$nin") else operand}}
            tree = parse_where(where)
            assert tree is not None
            assert columns.mask(tree).tolist() == [tree.matches(r) for r in records], where
