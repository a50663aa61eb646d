"""The VectorMemory / LexicalMemory contract, with PostgreSQL underneath."""

from __future__ import annotations

import functools

import pytest

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import (
    CompositeMemory,
    LexicalMemory,
    MemoryItem,
    ScopedMemory,
    VectorMemory,
    rrf_rerank,
)
from agentkit.vector.postgres import PostgresVectorStore

ACME = Ctx(Scope("acme", "support"))
GLOBEX = Ctx(Scope("globex", "support"))


def _item(content: str, **metadata: object) -> MemoryItem:
    return MemoryItem(content, "user", metadata=metadata)


async def test_write_then_query_returns_items_with_ids_and_scores(
    store: PostgresVectorStore,
) -> None:
    mem = VectorMemory(store, name="pg")
    await mem.write(
        [_item("the refund window is 30 days", topic="billing"), _item("reset your password")],
        ctx=ACME,
    )
    items = await mem.query("how long is the refund window", k=2, ctx=ACME)
    assert items[0].content == "the refund window is 30 days"
    assert items[0].source == "pg"
    assert items[0].id is not None
    assert dict(items[0].metadata) == {"topic": "billing"}
    assert isinstance(items[0].score, float)
    assert items[0].score >= items[1].score  # type: ignore[operator]


async def test_recalled_item_written_back_updates_its_row(store: PostgresVectorStore) -> None:
    mem = VectorMemory(store, name="pg")
    await mem.write([_item("draft: ship on friday", status="draft")], ctx=ACME)
    [recalled] = await mem.query("ship", k=1, ctx=ACME)
    updated = MemoryItem(
        "final: ship on monday", recalled.source, metadata={"status": "final"}, id=recalled.id
    )
    await mem.write([updated], ctx=ACME)
    assert await store.count(scope=ACME.scope) == 1
    [again] = await mem.query("ship", k=5, ctx=ACME)
    assert (again.id, again.content, dict(again.metadata)) == (
        recalled.id,
        "final: ship on monday",
        {"status": "final"},
    )


async def test_ids_from_another_source_are_not_trusted(store: PostgresVectorStore) -> None:
    mem = VectorMemory(store, name="pg")
    await mem.write([MemoryItem("precious fact", "pg", id="3")], ctx=ACME)
    # Same id, but recalled from some other backend: must not overwrite row "3".
    await mem.write([MemoryItem("journal entry three", "journal", id="3")], ctx=ACME)
    assert await store.count(scope=ACME.scope) == 2
    assert [c.text for c in await store.get(["3"], scope=ACME.scope)] == ["precious fact"]
    # metadata["id"] is an instruction: it names the row, and is not stored twice.
    await mem.write([_item("replaced fact", id="3")], ctx=ACME)
    [row] = await store.get(["3"], scope=ACME.scope)
    assert (row.text, dict(row.metadata)) == ("replaced fact", {})


async def test_where_filters_merge_over_the_default(store: PostgresVectorStore) -> None:
    mem = VectorMemory(store, where={"lang": "en"}, name="pg")
    await mem.write(
        [
            _item("hello world", lang="en", kind="greeting"),
            _item("hello again world", lang="en", kind="note"),
            _item("bonjour le monde", lang="fr", kind="greeting"),
        ],
        ctx=ACME,
    )
    assert {i.content for i in await mem.query("hello", k=5, ctx=ACME)} == {
        "hello world",
        "hello again world",
    }
    got = await mem.query("hello", k=5, ctx=ACME, where={"kind": "greeting"})
    assert [i.content for i in got] == ["hello world"]
    got = await mem.query("hello", k=5, ctx=ACME, where={"lang": ["fr"]})
    assert [i.content for i in got] == ["bonjour le monde"]


async def test_tenants_never_see_each_other(store: PostgresVectorStore) -> None:
    mem = VectorMemory(store, name="pg")
    await mem.write([MemoryItem("acme secret plan", "pg", id="plan")], ctx=ACME)
    await mem.write([MemoryItem("globex secret plan", "pg", id="plan")], ctx=GLOBEX)
    for ctx, own in ((ACME, "acme secret plan"), (GLOBEX, "globex secret plan")):
        assert [i.content for i in await mem.query("secret plan", k=10, ctx=ctx)] == [own]
        lex = await LexicalMemory(store).query("secret plan", k=10, ctx=ctx)
        assert [i.content for i in lex] == [own]
    assert await mem.query("secret plan", k=10, ctx=Ctx()) == []
    assert await mem.query("secret plan", k=10, ctx=Ctx(Scope("acme"))) == []


async def test_scoped_memory_refuses_an_incomplete_scope(store: PostgresVectorStore) -> None:
    mem = ScopedMemory(VectorMemory(store, name="pg"))
    with pytest.raises(PermissionError):
        await mem.query("anything", k=1, ctx=Ctx(Scope("acme")))
    assert await store.count() == 0


async def test_lexical_memory_reads_the_same_rows(store: PostgresVectorStore) -> None:
    mem = VectorMemory(store, name="pg")
    await mem.write(
        [_item("PostgreSQL full text search ranks with ts_rank_cd", lang="en"),
         _item("vectors live in an HNSW index", lang="en")],
        ctx=ACME,
    )
    lex = LexicalMemory(store)
    assert lex.accepts_writes is False
    got = await lex.query("full text ranking", k=5, ctx=ACME, where={"lang": "en"})
    assert [i.content for i in got] == ["PostgreSQL full text search ranks with ts_rank_cd"]
    assert got[0].source == "lexical"
    dense = await mem.query("full text ranking", k=5, ctx=ACME)
    assert got[0].id in {i.id for i in dense}  # one keyspace for both halves


async def test_hybrid_composite_over_one_postgres_store(store: PostgresVectorStore) -> None:
    dense = VectorMemory(store, name="dense")
    hybrid = CompositeMemory(
        [dense, LexicalMemory(store)], reranker=functools.partial(rrf_rerank)
    )
    await dense.write(
        [MemoryItem(f"fact number {i} about topic {i % 3}", "user") for i in range(12)],
        ctx=ACME,
    )
    got = await hybrid.query("fact number 7", k=3, ctx=ACME)
    assert got[0].content == "fact number 7 about topic 1"
    assert len({i.id for i in got}) == 3  # the two halves' copies merged by id
