"""Forgetting on PostgreSQL: exact counts, gone from dense and word search in one commit,
seen by another pool at once, other scopes untouched; scan pages; stats."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.state.memory import CachedMemory, VectorMemory
from agentkit.vector import Chunk
from agentkit.vector.postgres import PostgresVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


def corpus() -> list[Chunk]:
    return [
        Chunk(f"c{i:02d}", f"walrus note {i} about tusks", {"doc_id": f"d{i % 3}", "i": i})
        for i in range(12)
    ]


async def fill(store: PostgresVectorStore) -> None:
    await store.upsert(corpus(), scope=ACME)
    await store.upsert(corpus(), scope=GLOBEX)


async def visible(store: PostgresVectorStore, scope: Scope) -> tuple[set[str], set[str]]:
    dense = {c.id for _, c in await store.search("walrus tusks", k=100, scope=scope)}
    words = {c.id for _, c in await store.lexical_search("walrus", k=100, scope=scope)}
    return dense, words


async def test_delete_counts_and_clears_both_indexes(store: PostgresVectorStore) -> None:
    await fill(store)
    assert await store.delete(["c00", "c01", "c01", "nope"], scope=ACME) == 2
    assert await store.delete(["c00"], scope=ACME) == 0
    dense, words = await visible(store, ACME)
    assert "c00" not in dense | words and "c01" not in dense | words
    assert len(dense) == len(words) == 10
    assert await store.count(scope=GLOBEX) == 12  # same ids, other tenant: untouched


async def test_delete_where_rechecks_every_row(store: PostgresVectorStore) -> None:
    await fill(store)
    await store.upsert(
        [Chunk("flag", "walrus flag", {"doc_id": True}), Chunk("one", "walrus one", {"doc_id": 1})],
        scope=ACME,
    )
    assert await store.delete_where({"doc_id": ["d1", 1]}, scope=ACME) == 5
    left = {c.id for c in await store.scan(scope=ACME)}
    assert "one" not in left and "flag" in left  # True is not 1
    assert not any(c.metadata.get("doc_id") == "d1" for c in await store.scan(scope=ACME))
    dense, words = await visible(store, ACME)
    assert dense == words == left
    assert await store.count(scope=GLOBEX) == 12
    with pytest.raises(InvalidArgument, match="delete_scope"):
        await store.delete_where({}, scope=ACME)
    assert await store.count(scope=ACME) == len(left)


async def test_delete_scope_leaves_other_scopes(store: PostgresVectorStore) -> None:
    await fill(store)
    assert await store.delete_scope(scope=ACME) == 12
    assert await store.delete_scope(scope=ACME) == 0
    assert await visible(store, ACME) == (set(), set())
    assert await store.count(scope=GLOBEX) == 12
    assert len((await visible(store, GLOBEX))[1]) == 12


async def test_another_pool_sees_the_delete_at_once(
    make_store: Callable[..., PostgresVectorStore],
) -> None:
    writer, reader = make_store(), make_store()
    await fill(writer)
    assert "c05" in (await visible(reader, ACME))[0]
    await writer.delete_where({"i": 5}, scope=ACME)
    dense, words = await visible(reader, ACME)
    assert "c05" not in dense and "c05" not in words


async def test_scan_pages_cover_every_record_once(store: PostgresVectorStore) -> None:
    await fill(store)
    seen: list[str] = []
    after = None
    while page := await store.scan(scope=ACME, after=after, limit=5):
        seen.extend(c.id for c in page)
        after = page[-1].id
    assert seen == sorted(c.id for c in corpus())
    filtered = await store.scan(scope=ACME, where={"doc_id": "d2"}, limit=2)
    assert [c.id for c in filtered] == ["c02", "c05"]
    rest = await store.scan(scope=ACME, where={"doc_id": "d2"}, after="c05")
    assert [c.id for c in rest] == ["c08", "c11"]
    assert rest[0].text == "walrus note 8 about tusks" and rest[0].metadata["i"] == 8


async def test_stats_per_scope(store: PostgresVectorStore) -> None:
    before = time.time()
    await fill(store)
    await store.upsert([Chunk("loose", "no document key")], scope=ACME)
    stats = await store.stats()
    assert stats.kind == "postgres" and stats.dim == 64
    assert stats.embedder is not None and "HashingEmbedder" in stats.embedder
    assert stats.bytes_on_disk is not None and stats.bytes_on_disk > 0
    by_scope = {s.scope: s for s in stats.scopes}
    assert (by_scope[ACME].records, by_scope[ACME].documents) == (13, 4)
    assert (by_scope[GLOBEX].records, by_scope[GLOBEX].documents) == (12, 3)
    assert by_scope[ACME].last_write is not None and by_scope[ACME].last_write >= before - 5
    first = by_scope[GLOBEX].last_write
    assert first is not None
    await store.delete_scope(scope=GLOBEX)
    emptied = {s.scope: s for s in (await store.stats()).scopes}[GLOBEX]
    assert emptied.records == 0 and emptied.last_write is not None
    assert emptied.last_write >= first


async def test_cached_memory_forgets_on_postgres(store: PostgresVectorStore) -> None:
    await fill(store)
    cached = CachedMemory(VectorMemory(store))
    ctx = Ctx(scope=ACME)
    assert "c03" in {i.id for i in await cached.query("walrus tusks", k=20, ctx=ctx)}
    assert await cached.forget({"i": 3}, ctx=ctx) == 1
    assert "c03" not in {i.id for i in await cached.query("walrus tusks", k=20, ctx=ctx)}
