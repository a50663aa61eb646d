"""One ``where``, every store: generated filters and records, each store against the
reference evaluator (``Where.matches``), for dense search, word search, scan and
delete_where, with another scope holding the same records beside them.

In-memory, SQLite and PostgreSQL each evaluate the filter their own way (numpy columns,
SQL over JSON text, jsonb SQL); this is where they are held to one meaning. It lives
beside the PostgreSQL fixtures so the session's real server is one of the three.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from agentkit.kernel import InvalidFilter, Scope
from agentkit.kernel.where import parse_where
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore
from agentkit.vector.postgres import PostgresVectorStore

DIM = 32
# Keys a JSON path cannot spell plainly ride along with the usual ones.
KEYS = ["a", "b", "a.b", 'q"k', "é", "back\\slash", ""]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([0.0, 1.0, 1.5, -2.5, 2**53 + 1, -(2**60), 1e300]),
    st.sampled_from(["", "a", "b", "ab", "é", "Z", "1", "\U0001f40b", "日本"]),
)
STORED = st.one_of(SCALARS, st.just([1, 2]), st.just({"x": 1}), st.just(["a"]))
RECORDS = st.lists(
    st.dictionaries(st.sampled_from(KEYS), STORED, max_size=3), min_size=1, max_size=12
)
ORDERED = st.one_of(
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([0.5, 2**53, 2**53 + 1, -1e300]),
    st.sampled_from(["", "a", "ab", "b", "é", "\U0001f40b"]),
)


def _field() -> st.SearchStrategy[dict[str, Any]]:
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
    return st.builds(lambda k, v: {k: v}, st.sampled_from(KEYS), op)


FILTERS: st.SearchStrategy[dict[str, Any]] = st.recursive(
    _field(),
    lambda inner: st.one_of(
        st.builds(lambda xs: {"$and": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: {"$or": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda x: {"$not": x}, inner),
        st.builds(lambda x, y: {**x, **y}, inner, inner),
    ),
    max_leaves=5,
)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    runner = asyncio.Runner()
    yield runner.get_loop()
    runner.close()


@pytest.fixture(scope="module")
def stores(
    loop: asyncio.AbstractEventLoop, pg_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    embedder = HashingEmbedder(dim=DIM)
    collection = f"where_{uuid.uuid4().hex[:12]}"
    path: Path = tmp_path_factory.mktemp("where") / "m.db"
    made: dict[str, Any] = {
        "memory": InMemoryVectorStore(embedder),
        "sqlite": SQLiteVectorStore(path, embedder=embedder),
        "postgres": PostgresVectorStore(pg_url, embedder=embedder, collection=collection),
    }
    yield made
    for name in ("sqlite", "postgres"):
        loop.run_until_complete(made[name].close())
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(collection)))
        conn.execute("DELETE FROM agentkit_schema WHERE collection = %s", (collection,))


def _ids(hits: list[Any]) -> set[str]:
    return {(h[1] if isinstance(h, tuple) else h).id for h in hits}


async def _one_store(
    store: Any, records: list[dict[str, Any]], where: dict[str, Any], expected: set[str]
) -> None:
    scope = Scope(f"o{uuid.uuid4().hex[:8]}", "d")
    decoy = Scope(scope.org_id, "other")
    chunks = [Chunk(f"r{i}", f"walrus number {i}", meta) for i, meta in enumerate(records)]
    await store.upsert(chunks, scope=scope)
    await store.upsert(chunks, scope=decoy)
    n = len(chunks)

    dense = await store.search("walrus", k=n + 3, scope=scope, where=where)
    assert _ids(dense) == expected, "dense"
    # filtered inside the search: k matches when they exist, never a short answer
    few = await store.search("walrus number 3", k=2, scope=scope, where=where)
    assert len(few) == min(2, len(expected)) and _ids(few) <= expected, "dense k"
    if hasattr(store, "lexical_search"):  # the in-memory store ranks by vectors only
        words = await store.lexical_search("walrus", k=n + 3, scope=scope, where=where)
        assert _ids(words) == expected, "lexical"
        few = await store.lexical_search("walrus", k=2, scope=scope, where=where)
        assert len(few) == min(2, len(expected)) and _ids(few) <= expected, "lexical k"
    assert _ids(await store.scan(scope=scope, where=where)) == expected, "scan"
    if where:
        # the filter that deletes is the filter that finds
        assert await store.delete_where(where, scope=scope) == len(expected)
        left = _ids(await store.scan(scope=scope))
        assert left == {c.id for c in chunks} - expected, "delete_where"
    assert await store.count(scope=decoy) == n  # the other scope never moves
    await store.delete_scope(scope=scope)
    await store.delete_scope(scope=decoy)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(records=RECORDS, where=FILTERS)
def test_every_store_agrees_with_the_reference(
    loop: asyncio.AbstractEventLoop,
    stores: dict[str, Any],
    records: list[dict[str, Any]],
    where: dict[str, Any],
) -> None:
    try:
        tree = parse_where(where)
    except InvalidFilter:
        return  # refused alike everywhere (a merged filter too deep)
    assert tree is not None
    expected = {f"r{i}" for i, meta in enumerate(records) if tree.matches(meta)}
    for name, store in stores.items():
        try:
            loop.run_until_complete(_one_store(store, records, where, expected))
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc} (where={where!r})") from exc


# Tenancy is outside the language: no key or operator reaches another scope.
SPOOFS: list[dict[str, Any]] = [
    {"org_id": "globex"},
    {"$or": [{"org_id": "globex"}, {"org_id": {"$exists": False}}]},
    {"$not": {"org_id": "acme"}},
    {"org": {"$ne": "acme"}},
    {"domain_id": {"$in": ["support", "sales", ""]}},
    {"$or": [{"t": {"$exists": True}}, {"t": {"$exists": False}}]},
    {"agentkit_org_id": {"$ne": "x"}},
    {"scope": {"$nin": ["acme"]}},
]


@pytest.mark.parametrize("where", SPOOFS)
def test_no_filter_reaches_another_scope(
    loop: asyncio.AbstractEventLoop, stores: dict[str, Any], where: dict[str, Any]
) -> None:
    async def run(store: Any) -> None:
        mine = Scope(f"acme{uuid.uuid4().hex[:6]}", "support")
        theirs = Scope(f"globex{uuid.uuid4().hex[:6]}", "support")
        await store.upsert(
            [Chunk("m1", "walrus mine", {"t": "x"}), Chunk("m2", "walrus mine too", {})],
            scope=mine,
        )
        await store.upsert(
            [
                Chunk(
                    "g1",
                    "walrus theirs",
                    {
                        "org_id": "globex",
                        "t": "x",
                        "org": "globex",
                        "domain_id": "sales",
                        "scope": "globex",
                    },
                )
            ],
            scope=theirs,
        )
        found = [
            await store.search("walrus", k=10, scope=mine, where=where),
            await store.scan(scope=mine, where=where),
        ]
        if hasattr(store, "lexical_search"):
            found.append(await store.lexical_search("walrus", k=10, scope=mine, where=where))
        for hits in found:
            assert _ids(hits) <= {"m1", "m2"}
        await store.delete_where(where, scope=mine)
        assert await store.count(scope=theirs) == 1
        await store.delete_scope(scope=mine)
        await store.delete_scope(scope=theirs)

    for name, store in stores.items():
        try:
            loop.run_until_complete(run(store))
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from exc
