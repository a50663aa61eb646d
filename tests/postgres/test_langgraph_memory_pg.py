"""LangGraphStoreMemory over LangGraph's own PostgresStore (pgvector index, fake embedding).

A team's existing Postgres-held agent memories join a CompositeMemory beside a
VectorMemory; k, where and tenants behave as on the in-process stores.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from agentkit_langchain import LangGraphStoreMemory
from agentkit_langchain.langgraph_memory import NAMESPACE_KEY
from langgraph.store.base import Op, Result
from langgraph.store.postgres import PostgresStore

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import CompositeMemory, MemoryItem, VectorMemory
from agentkit.vector import HashingEmbedder, InMemoryVectorStore

DIM = 64
_HASH = HashingEmbedder(dim=DIM)


def fake_embed(texts: Iterable[str]) -> list[list[float]]:
    return [[float(x) for x in row] for row in _HASH.embed_sync(list(texts))]


class _ThreadPostgresStore(PostgresStore):
    """Notes the threads its sync batches ran on."""

    threads: list[int]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        self.threads.append(threading.get_ident())
        return super().batch(ops)


@pytest.fixture
def pg_store(db_url: str) -> Iterator[_ThreadPostgresStore]:
    index: Any = {"dims": DIM, "embed": fake_embed, "fields": ["text"]}
    with _ThreadPostgresStore.from_conn_string(db_url, index=index) as store:
        store.setup()
        store.threads = []
        store.put(("memories",), "cat-1", {"text": "the cat sat on the mat", "topic": "cats"})
        store.put(("memories",), "dog-1", {"text": "dogs bark at the mailman", "topic": "dogs"})
        store.put(("memories", "u1"), "cat-2", {"text": "a cat chased the mouse", "topic": "cats"})
        store.put(("memories",), "fish", {"text": "goldfish swim in circles", "topic": "fish"})
        yield store  # type: ignore[misc]


async def test_recall_k_and_where_on_postgres(pg_store: _ThreadPostgresStore) -> None:
    mem = LangGraphStoreMemory(pg_store, ("memories",))
    items = await mem.query("cat", k=2, ctx=Ctx())
    direct = pg_store.search(("memories",), query="cat", limit=2)
    assert [i.id for i in items] == [hit.key for hit in direct] and len(items) == 2
    assert {i.id for i in items} == {"cat-1", "cat-2"}
    assert [i.score for i in items] == [hit.score for hit in direct]
    by_id = {i.id: i for i in items}
    assert by_id["cat-1"].content == "the cat sat on the mat"
    assert dict(by_id["cat-2"].metadata) == {
        "topic": "cats",
        NAMESPACE_KEY: ("memories", "u1"),
    }
    assert len(await mem.query("cat", k=1, ctx=Ctx())) == 1
    assert [i.id for i in await mem.query("cat", k=5, ctx=Ctx(), where={"topic": "dogs"})] == [
        "dog-1"
    ]
    some = await mem.query("cat", k=5, ctx=Ctx(), where={"topic": ["dogs", "fish"]})
    assert sorted(i.id for i in some) == ["dog-1", "fish"]
    # The sync driver runs on the interop pool, never on this event loop's thread.
    pg_store.threads = []
    await mem.query("cat", k=2, ctx=Ctx())
    assert pg_store.threads and threading.get_ident() not in pg_store.threads


async def test_write_back_and_tenants_on_postgres(pg_store: _ThreadPostgresStore) -> None:
    mem = LangGraphStoreMemory(pg_store, ("memories",))
    (item,) = await mem.query("mailman", k=1, ctx=Ctx(), where={"topic": "dogs"})
    await mem.write(
        [
            MemoryItem(
                "dogs bark at the postman", item.source, item.score, item.metadata, id=item.id
            )
        ],
        ctx=Ctx(),
    )
    updated = pg_store.get(("memories",), "dog-1")
    assert updated is not None and updated.value == {
        "text": "dogs bark at the postman",
        "topic": "dogs",
    }
    assert len(pg_store.search(("memories",), limit=100)) == 4

    acme, sales = Ctx(Scope("acme", "support")), Ctx(Scope("acme", "sales"))
    await asyncio.gather(
        mem.write([MemoryItem("support's cat rota", "x", None, {"id": "rota"})], ctx=acme),
        mem.write([MemoryItem("sales' cat rota", "x", None, {"id": "rota"})], ctx=sales),
    )
    assert [i.content for i in await mem.query("cat rota", k=10, ctx=acme)] == [
        "support's cat rota"
    ]
    assert [i.content for i in await mem.query("cat rota", k=10, ctx=sales)] == ["sales' cat rota"]
    assert "rota" not in {i.id for i in await mem.query("cat rota", k=50, ctx=Ctx())}


async def test_postgres_memories_join_a_composite(pg_store: _ThreadPostgresStore) -> None:
    ctx = Ctx(Scope("acme", "support"))
    lg = LangGraphStoreMemory(pg_store, ("memories",), name="team-memories")
    vector = VectorMemory(InMemoryVectorStore(HashingEmbedder(dim=DIM)))
    await vector.write([MemoryItem("the cat prefers the sofa", "seed")], ctx=ctx)
    await lg.write([MemoryItem("the cat hides under the bed", "seed")], ctx=ctx)
    composite = CompositeMemory([lg, vector])
    items = await composite.query("cat", k=5, ctx=ctx)
    assert {(i.source, i.content) for i in items} == {
        ("team-memories", "the cat hides under the bed"),
        ("vector", "the cat prefers the sofa"),
    }
    await composite.write([MemoryItem("the cat naps at noon", "agent")], ctx=ctx)
    assert "the cat naps at noon" in [i.content for i in await lg.query("naps", k=5, ctx=ctx)]
    assert "the cat naps at noon" in [i.content for i in await vector.query("naps", k=5, ctx=ctx)]
