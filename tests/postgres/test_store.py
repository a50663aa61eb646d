"""PostgresVectorStore on a real server: the VectorPort and LexicalPort contracts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest
from psycopg import sql

from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, InvalidFilter, StoreError
from agentkit.vector import Chunk, HashingEmbedder, LexicalPort, VectorPort
from agentkit.vector.postgres import COPY_THRESHOLD, PostgresVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")

DOCS = [
    Chunk("c1", "the cat sat on the warm mat", {"lang": "en", "n": 1}),
    Chunk("c2", "dogs chase cats around the garden", {"lang": "en", "n": 2}),
    Chunk("c3", "postgres stores vectors in tables", {"lang": "fr", "n": 3, "flag": True}),
    Chunk("c4", "hnsw graphs answer nearest neighbour queries", {"lang": "de", "n": 1.0}),
]


async def test_is_a_vector_and_lexical_port(store: PostgresVectorStore) -> None:
    assert isinstance(store, VectorPort)
    assert isinstance(store, LexicalPort)


async def test_search_returns_cosine_similarity_best_first(store: PostgresVectorStore) -> None:
    await store.upsert(DOCS, scope=ACME)
    hits = await store.search("postgres stores vectors in tables", k=4, scope=ACME)
    assert hits[0][1].id == "c3"
    scores = [s for s, _ in hits]
    assert all(type(s) is float for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(1.0, abs=1e-4)
    assert all(-1.0 - 1e-6 <= s <= 1.0 + 1e-6 for s in scores)
    assert hits[0][1] == DOCS[2]  # text and metadata come back exactly


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"lang": "en"}, {"c1", "c2"}),
        ({"lang": ["fr", "de"]}, {"c3", "c4"}),
        ({"lang": ("en",), "n": 2}, {"c2"}),
        ({"n": 1}, {"c1", "c4"}),  # 1 == 1.0, as in Python
        ({"flag": True}, {"c3"}),
        ({"flag": 1}, set()),  # a bool never equals an int
        ({"missing": None}, set()),  # absence never matches
        ({"lang": []}, set()),
        ({"lang": {"$in": ["fr", "de"]}, "n": {"$lte": 1}}, {"c4"}),
        ({"$or": [{"flag": True}, {"n": {"$lt": 1.5}}]}, {"c1", "c3", "c4"}),
    ],
)
async def test_where_filters(
    store: PostgresVectorStore, where: dict[str, object], expected: set[str]
) -> None:
    await store.upsert(DOCS, scope=ACME)
    dense = await store.search("cats and vectors", k=10, scope=ACME, where=where)
    assert {c.id for _, c in dense} == expected
    lexical = await store.lexical_search(
        "cat cats dogs postgres hnsw", k=10, scope=ACME, where=where
    )
    assert {c.id for _, c in lexical} == expected


@pytest.mark.parametrize("where", [{"lang": {"not": "an operator"}}, {"lang": ["en", {"o": 1}]}])
async def test_a_dict_value_is_an_operator_dict_or_refused(
    store: PostgresVectorStore, where: dict[str, object]
) -> None:
    with pytest.raises(InvalidFilter, match="'lang'"):
        await store.search("cats", k=10, scope=ACME, where=where)


async def test_filtered_search_fills_k_when_matches_are_rare(store: PostgresVectorStore) -> None:
    chunks = [
        Chunk(f"r{i}", f"record number {i} about topic {i % 7}", {"rare": i % 50 == 0})
        for i in range(600)
    ]
    await store.upsert(chunks, scope=ACME)
    hits = await store.search("record about topic", k=12, scope=ACME, where={"rare": True})
    assert {c.id for _, c in hits} == {f"r{i}" for i in range(0, 600, 50)}


async def test_lexical_search_is_or_of_words_ranked_best_first(
    store: PostgresVectorStore,
) -> None:
    await store.upsert(DOCS, scope=ACME)
    hits = await store.lexical_search("cats garden", k=10, scope=ACME)
    assert hits[0][1].id == "c2"  # both words
    assert {c.id for _, c in hits} == {"c1", "c2"}  # "cat" matches by stem
    assert all(type(s) is float and s > 0 for s, _ in hits)
    assert [s for s, _ in hits] == sorted((s for s, _ in hits), reverse=True)


@pytest.mark.parametrize(
    "query", ["cat & !dog", "'cat' | (", "cat:* <-> dog", "cat\\' ; DROP TABLE x; --", "cat\x00"]
)
async def test_lexical_query_syntax_is_never_interpreted(
    store: PostgresVectorStore, query: str
) -> None:
    await store.upsert(DOCS, scope=ACME)
    hits = await store.lexical_search(query, k=10, scope=ACME)
    assert "c1" in {c.id for _, c in hits}


@pytest.mark.parametrize("query", ["", "   ", "?!.,", "the and of"])
async def test_lexical_without_words_finds_nothing(store: PostgresVectorStore, query: str) -> None:
    await store.upsert(DOCS, scope=ACME)
    assert await store.lexical_search(query, k=5, scope=ACME) == []


async def test_copy_path_bulk_ingest_is_idempotent(store: PostgresVectorStore) -> None:
    n = COPY_THRESHOLD * 3 + 7
    chunks = [Chunk(f"b{i}", f"bulk text {i}", {"i": i}) for i in range(n)]
    await store.upsert(chunks, scope=ACME)
    await store.upsert(chunks, scope=ACME)
    assert await store.count(scope=ACME) == n
    hits = await store.search("bulk text 42", k=1, scope=ACME, where={"i": 42})
    assert hits[0][1] == chunks[42]


@pytest.mark.parametrize("size", [3, COPY_THRESHOLD + 1])
async def test_a_failing_batch_lands_nothing(
    store: PostgresVectorStore, pg_url: str, collection: str, size: int
) -> None:
    await store.upsert([Chunk("keep", "stored before", {"v": 1})], scope=ACME)
    # Failure injection on the server side: a trigger refuses one row mid-batch.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "CREATE OR REPLACE FUNCTION agentkit_poison() RETURNS trigger AS $$"
            " BEGIN IF NEW.id = 'poison' THEN RAISE EXCEPTION 'poisoned row'; END IF;"
            " RETURN NEW; END $$ LANGUAGE plpgsql"
        )
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER poison BEFORE INSERT OR UPDATE ON {} FOR EACH ROW"
                " EXECUTE FUNCTION agentkit_poison()"
            ).format(sql.Identifier(collection))
        )
    batch = [Chunk(f"n{i}", f"new {i}") for i in range(size - 2)]
    batch += [Chunk("keep", "overwritten?", {"v": 2}), Chunk("poison", "boom")]
    with pytest.raises(StoreError, match="poisoned row"):
        await store.upsert(batch, scope=ACME)
    with pytest.raises(StoreError, match="poisoned row"):
        await store.bulk_upsert(batch, scope=ACME, rebuild_index=True)
    assert await store.count(scope=ACME) == 1
    hits = await store.search("stored before", k=1, scope=ACME)
    assert hits[0][1] == Chunk("keep", "stored before", {"v": 1})


class _Wrong:
    """An embedder of another width, for the schema registry check."""

    dim = 32

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return await HashingEmbedder(dim=32).embed(texts)


async def test_schema_records_dim_and_embedder(
    store: PostgresVectorStore, make_store: Callable[..., PostgresVectorStore]
) -> None:
    await store.upsert(DOCS, scope=ACME)
    other = make_store(embedder=_Wrong())
    with pytest.raises(StoreError, match="64-dimensional"):
        await other.search("cat", k=1, scope=ACME)
    with pytest.raises(StoreError, match="64-dimensional"):
        await other.upsert([Chunk("z", "z")], scope=ACME)
    # Words, counts and deletes do not need vectors, so they still work.
    assert [c.id for _, c in await other.lexical_search("mat", k=1, scope=ACME)] == ["c1"]
    assert await other.count(scope=ACME) == 4

    class Renamed(HashingEmbedder):
        model_name = "someone-elses-model"

    renamed = make_store(embedder=Renamed(dim=64))
    with pytest.raises(StoreError, match="someone-elses-model"):
        await renamed.search("cat", k=1, scope=ACME)


async def test_newer_schema_version_is_refused(
    store: PostgresVectorStore,
    make_store: Callable[..., PostgresVectorStore],
    pg_url: str,
    collection: str,
) -> None:
    await store.count()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE agentkit_schema SET version = 99 WHERE collection = %s", (collection,))
    with pytest.raises(StoreError, match="schema version 99"):
        await make_store().count()


async def test_schema_survives_concurrent_first_use(
    make_store: Callable[..., PostgresVectorStore],
) -> None:
    import asyncio

    stores = [make_store() for _ in range(4)]
    assert await asyncio.gather(*(s.count() for s in stores)) == [0, 0, 0, 0]


async def test_bad_input_is_refused_before_anything_is_touched(
    embedder: HashingEmbedder,
) -> None:
    # An unreachable server: only validation can produce these errors.
    s = PostgresVectorStore("postgresql://nobody@127.0.0.1:1/none", embedder=embedder)
    with pytest.raises(InvalidArgument, match="k"):
        await s.search("q", k=0, scope=ACME)
    with pytest.raises(InvalidArgumentType, match="k"):
        await s.search("q", k=True, scope=ACME)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType, match="query"):
        await s.lexical_search(b"q", k=1, scope=ACME)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType, match="where"):
        await s.search("q", k=1, scope=ACME, where=[("a", 1)])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType, match="scope"):
        await s.search("q", k=1, scope=("acme", "x"))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType, match="ids"):
        await s.delete("abc", scope=ACME)
    with pytest.raises(InvalidArgumentType, match="Chunk"):
        await s.upsert(["text"], scope=ACME)  # type: ignore[list-item]
    with pytest.raises(InvalidArgument, match="NUL"):
        await s.upsert([Chunk("a", "nul\x00byte")], scope=ACME)
    with pytest.raises(InvalidArgument, match="JSON"):
        await s.upsert([Chunk("a", "x", {"when": object()})], scope=ACME)
    with pytest.raises(InvalidArgument, match="collection"):
        PostgresVectorStore("postgresql://x/y", embedder=embedder, collection="Robert'); --")
    with pytest.raises(InvalidArgument, match="max_size"):
        PostgresVectorStore("postgresql://x/y", embedder=embedder, min_size=5, max_size=2)
    with pytest.raises(StoreError, match="cannot connect"):
        await s.count()
    await s.close()


async def test_closed_store_refuses_and_context_manager_closes(
    make_store: Callable[..., PostgresVectorStore],
) -> None:
    async with make_store() as s:
        await s.upsert(DOCS[:1], scope=ACME)
        assert await s.count() == 1
    with pytest.raises(StoreError, match="closed"):
        await s.count()
    await s.close()  # idempotent


async def test_an_empty_collection_adopts_a_new_embedder(
    store: PostgresVectorStore, make_store: Callable[..., PostgresVectorStore]
) -> None:
    await store.upsert(DOCS[:1], scope=ACME)
    await store.delete(["c1"], scope=ACME)
    other = make_store(embedder=_Wrong())
    await other.upsert(DOCS, scope=ACME)
    assert (await other.search("warm mat", k=1, scope=ACME))[0][1].id == "c1"


async def test_without_an_embedder_words_still_work(
    store: PostgresVectorStore, make_store: Callable[..., PostgresVectorStore]
) -> None:
    await store.upsert(DOCS, scope=ACME)
    reader = make_store(embedder=None, create=False)
    assert [c.id for _, c in await reader.lexical_search("mat", k=3, scope=ACME)] == ["c1"]
    assert await reader.get(["c4", "nope", "c1"], scope=ACME) == [DOCS[3], DOCS[0]]
    assert await reader.get(["c1"], scope=GLOBEX) == []
    with pytest.raises(StoreError, match="needs an embedder"):
        await reader.search("mat", k=1, scope=ACME)


async def test_a_missing_collection_is_not_created_by_readers(
    make_store: Callable[..., PostgresVectorStore],
) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        await make_store(embedder=None).count()
    with pytest.raises(StoreError, match="does not exist"):
        await make_store(create=False).lexical_search("x", k=1, scope=ACME)
    assert await make_store().count() == 0  # a writer creates it


async def test_bulk_upsert_with_rebuild_keeps_the_index_and_its_settings(
    make_store: Callable[..., PostgresVectorStore], pg_url: str, collection: str
) -> None:
    store = make_store(hnsw_m=8, hnsw_ef_construction=32)
    await store.upsert(DOCS, scope=ACME)

    def index_def() -> str:
        with psycopg.connect(pg_url) as conn:
            row = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (f"{collection}_hnsw",)
            ).fetchone()
        assert row is not None
        return str(row[0])

    before = index_def()
    assert "m='8'" in before and "ef_construction='32'" in before
    chunks = [Chunk(f"b{i}", f"bulk loaded text {i}", {"i": i}) for i in range(300)]
    await store.bulk_upsert(chunks, scope=ACME, rebuild_index=True)
    await store.bulk_upsert(chunks[:3], scope=GLOBEX)  # small batch, still COPY
    assert index_def() == before
    assert await store.count(scope=ACME) == 304
    assert await store.count(scope=GLOBEX) == 3
    hits = await store.search("bulk loaded text 7", k=1, scope=ACME, where={"i": 7})
    assert hits[0][1] == chunks[7]


async def test_recorded_embedder_names_what_wrote_the_vectors(
    store: PostgresVectorStore, pg_url: str, collection: str
) -> None:
    from agentkit.vector.postgres import embedder_name, recorded_embedder

    assert await recorded_embedder(pg_url, collection) is None  # nothing there yet
    await store.count()
    assert await recorded_embedder(pg_url, collection) is None  # created, still empty
    await store.upsert(DOCS[:1], scope=ACME)
    assert await recorded_embedder(pg_url, collection) == (
        embedder_name(HashingEmbedder(dim=64)),
        64,
    )
    with pytest.raises(StoreError, match="cannot connect"):
        await recorded_embedder("postgresql://nobody@127.0.0.1:1/none", collection)


async def test_a_store_follows_sequential_event_loops(
    make_store: Callable[..., PostgresVectorStore],
) -> None:
    import asyncio
    import threading

    store = make_store()

    async def write_and_count(i: int) -> int:
        await store.upsert([Chunk(f"x{i}", f"loop {i}")], scope=ACME)
        return await store.count(scope=ACME)

    # Two asyncio.run calls, one after the other, as a script or notebook makes them.
    first = await asyncio.to_thread(asyncio.run, write_and_count(1))
    second = await asyncio.to_thread(asyncio.run, write_and_count(2))
    assert (first, second) == (1, 2)

    # A loop that is still running elsewhere keeps its pool: sharing it is refused.
    ready, release = threading.Event(), threading.Event()

    def hold() -> None:
        async def keep() -> None:
            await store.count()
            ready.set()
            await asyncio.to_thread(release.wait)
            await store.close()

        asyncio.run(keep())

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        await asyncio.to_thread(ready.wait)
        with pytest.raises(StoreError, match="another running event loop"):
            await store.count()
    finally:
        release.set()
        await asyncio.to_thread(holder.join)


async def test_indexed_keys_serve_range_filters(
    make_store: Any, pg_url: str, collection: str
) -> None:
    """``indexed_keys`` keeps a btree on ``metadata -> key``; the compiled range filter
    is that very expression, so the planner reads the index instead of every row."""
    import psycopg

    store = make_store(indexed_keys=["year"])
    chunks = [Chunk(f"r{i}", f"note {i}", {"year": 1900 + i % 200}) for i in range(2000)]
    await store.upsert(chunks, scope=ACME)
    hits = await store.search("note", k=5, scope=ACME, where={"year": {"$lt": 1901}})
    assert len(hits) == 5 and all(c.metadata["year"] == 1900 for _, c in hits)
    from psycopg import sql

    from agentkit.kernel.where import parse_where
    from agentkit.vector._pg_sql import where_clause

    clause, params = where_clause(parse_where({"year": {"$lt": 1901}, "x": {"$exists": True}}))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(collection)))
        conn.execute("SET enable_seqscan = off")
        stmt = sql.SQL(
            "EXPLAIN SELECT id FROM {t} WHERE org_id = 'acme' AND domain_id = 'support'{w}"
        ).format(t=sql.Identifier(collection), w=clause)
        plan = "\n".join(r[0] for r in conn.execute(stmt, params))
        names = [r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s", (collection,)
        )]
    index = next(n for n in names if "_mk_" in n)
    assert index in plan, plan


async def test_indexed_keys_are_checked(make_store: Any) -> None:
    for bad in ("year", [""], [3], ["a\x00b"]):
        with pytest.raises((InvalidArgument, InvalidArgumentType)):
            make_store(indexed_keys=bad)
