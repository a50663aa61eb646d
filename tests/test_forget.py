"""Forgetting: every agentkit store, the memory layer and its decorators.

A forgotten record must be gone from dense and word search, from caches in this process
and from another process's next read; counts must be exact; other scopes untouched.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import (
    CompositeWriteError,
    InvalidArgument,
    InvalidArgumentType,
    MemoryWriteRefused,
    ScopeViolation,
    StoreError,
)
from agentkit.state.memory import (
    CachedMemory,
    CompositeMemory,
    LexicalMemory,
    MemoryItem,
    ReadOnlyMemory,
    ScopedMemory,
    VectorMemory,
)
from agentkit.vector import Chunk, ForgettingPort, HashingEmbedder, InMemoryVectorStore
from agentkit.vector.sqlite import SQLiteVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")
DIM = 64


def corpus() -> list[Chunk]:
    return [
        Chunk(f"c{i:02d}", f"walrus note {i} about tusks", {"doc_id": f"d{i % 3}", "i": i})
        for i in range(12)
    ]


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemoryVectorStore(HashingEmbedder(DIM))
        return
    async with SQLiteVectorStore(tmp_path / "m.db", embedder=HashingEmbedder(DIM)) as s:
        yield s


async def fill(store: Any) -> None:
    await store.upsert(corpus(), scope=ACME)
    await store.upsert(corpus(), scope=GLOBEX)


async def visible(store: Any, scope: Scope) -> set[str]:
    """Ids any index still shows: dense, and word search where the store has one."""
    found = {c.id for _, c in await store.search("walrus tusks", k=100, scope=scope)}
    if hasattr(store, "lexical_search"):
        words = {c.id for _, c in await store.lexical_search("walrus", k=100, scope=scope)}
        assert words == found, "dense and word indexes disagree"
    return found


# --- stores ------------------------------------------------------------------------


async def test_every_store_is_a_forgetting_port(store: Any) -> None:
    assert isinstance(store, ForgettingPort)


async def test_delete_where_judges_every_row_of_a_scope(tmp_path: Path) -> None:
    """The SQLite store judges the scope's rows in SQL: every match goes, ids beyond
    ASCII included, and another scope's rows (which share the index) never count."""
    ids = [f"c{i:02d}" for i in range(8)] + ["é1", "z9", "\U0001f40b", "日本"]
    chunks = [
        Chunk(cid, f"walrus {n}", {"doc_id": "d1" if n % 2 else "d0", "n": n})
        for n, cid in enumerate(ids)
    ]
    async with SQLiteVectorStore(tmp_path / "m.db", embedder=HashingEmbedder(DIM)) as store:
        await store.upsert(chunks, scope=ACME)
        await store.upsert(chunks, scope=GLOBEX)
        assert await store.delete_where({"doc_id": "d1"}, scope=ACME) == 6
        left = {c.id for c in await store.get(ids, scope=ACME)}
        assert left == {c.id for c in chunks if c.metadata["doc_id"] == "d0"}
        assert await store.count(scope=GLOBEX) == len(ids)
        assert await store.delete_where({"doc_id": "d0"}, scope=ACME) == 6
        assert await store.count(scope=ACME) == 0


# Ids holding every LIKE and GLOB wildcard: a prefix must match them as plain text.
PREFIX_IDS = ["a%c", "a_c", "ab", "abc", "a*c", "a?c", "a[b]c", "b", "é1", "é2"]


async def test_ids_with_prefix_is_literal_and_stays_in_its_scope(store: Any) -> None:
    await store.upsert([Chunk(i, f"text {i}") for i in PREFIX_IDS], scope=ACME)
    await store.upsert([Chunk("a%z", "the other tenant's")], scope=GLOBEX)

    async def find(prefix: str, scope: Scope = ACME, **kw: Any) -> list[str]:
        found: list[str] = await store.ids_with_prefix(prefix, scope=scope, **kw)
        return found

    for prefix, expected in [
        ("a%", ["a%c"]), ("a_", ["a_c"]), ("a*", ["a*c"]), ("a?", ["a?c"]),
        ("a[", ["a[b]c"]), ("ab", ["ab", "abc"]), ("é", ["é1", "é2"]), ("abc", ["abc"]),
        ("a%z", []), ("%", []), ("_", []), ("*", []), ("zz", []),
    ]:
        assert sorted(await find(prefix)) == expected, prefix
    everything_a = [i for i in PREFIX_IDS if i.startswith("a")]
    assert await find("a") == sorted(everything_a)
    assert await find("a", limit=2) == sorted(everything_a)[:2]
    assert await find("a", GLOBEX) == ["a%z"]
    assert await find("a", Scope("nobody", "here")) == []
    with pytest.raises(InvalidArgument):
        await find("")
    with pytest.raises(InvalidArgument):
        await find("a", limit=0)
    with pytest.raises(InvalidArgumentType):
        await store.ids_with_prefix(5, scope=ACME)


async def test_stats_counts_records_documents_and_last_write(store: Any) -> None:
    before = time.time()
    await fill(store)
    await store.upsert([Chunk("loose", "no document key")], scope=ACME)
    stats = await store.stats()
    assert stats.dim == DIM and stats.embedder is not None
    assert "HashingEmbedder" in stats.embedder
    by_scope = {s.scope: s for s in stats.scopes}
    assert (by_scope[ACME].records, by_scope[ACME].documents) == (13, 4)
    assert (by_scope[GLOBEX].records, by_scope[GLOBEX].documents) == (12, 3)
    written = by_scope[GLOBEX].last_write
    assert written is not None and before - 1 <= written <= time.time() + 1
    await asyncio.sleep(0.01)
    await store.delete_scope(scope=GLOBEX)
    emptied = {s.scope: s for s in (await store.stats()).scopes}[GLOBEX]
    assert (emptied.records, emptied.documents) == (0, 0)
    assert emptied.last_write is not None and emptied.last_write > written


# --- SQLite: other connections and processes -----------------------------------------


async def test_sqlite_other_store_object_sees_the_delete(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    async with (
        SQLiteVectorStore(path, embedder=HashingEmbedder(DIM)) as a,
        SQLiteVectorStore(path, embedder=HashingEmbedder(DIM)) as b,
    ):
        await fill(a)
        assert "c03" in await visible(b, ACME)  # b's scope cache is now warm
        assert await a.delete_where({"i": 3}, scope=ACME) == 1
        assert "c03" not in await visible(b, ACME)
        assert await b.delete_scope(scope=ACME) == 11
        assert await visible(a, ACME) == set()
        assert await a.count(scope=GLOBEX) == 12


_CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from agentkit.kernel import Scope
    from agentkit.vector import HashingEmbedder, SQLiteVectorStore

    async def main():
        async with SQLiteVectorStore(sys.argv[1], embedder=HashingEmbedder(64),
                                     create=False) as store:
            op = sys.argv[2]
            scope = Scope("acme", "support")
            if op == "forget":
                n = await store.delete_where({"doc_id": "d0"}, scope=scope)
            else:
                n = sorted(c.id for _, c in await store.search("walrus", k=100, scope=scope))
            print(json.dumps(n))

    asyncio.run(main())
    """
)


def _child(path: Path, op: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), op],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


async def test_sqlite_another_process_sees_the_delete_and_makes_one(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(DIM)) as store:
        await fill(store)
        await visible(store, ACME)  # warm this process's cache
        assert await asyncio.to_thread(_child, path, "forget") == 4  # another process forgets
        left = await visible(store, ACME)
        assert len(left) == 8 and not {"c00", "c03", "c06", "c09"} & left
        assert await store.delete(["c01"], scope=ACME) == 1
        assert await asyncio.to_thread(_child, path, "read") == sorted(left - {"c01"})
        assert await store.count(scope=GLOBEX) == 12


async def test_sqlite_read_only_store_refuses_to_forget(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(DIM)) as store:
        await fill(store)
    async with SQLiteVectorStore(path, embedder=None, read_only=True) as ro:
        for attempt in (
            ro.delete(["c00"], scope=ACME),
            ro.delete_where({"i": 1}, scope=ACME),
            ro.delete_scope(scope=ACME),
        ):
            with pytest.raises(StoreError, match="read_only"):
                await attempt
        assert await ro.count(scope=ACME) == 12
        assert len(await ro.scan(scope=ACME)) == 12
        stats = await ro.stats()
        assert stats.bytes_on_disk is not None and stats.bytes_on_disk > 0


# --- the memory layer ----------------------------------------------------------------


def ids(items: list[MemoryItem]) -> set[str]:
    return {i.id for i in items if i.id is not None}


@pytest.fixture
async def memory_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(HashingEmbedder(DIM))
    await fill(store)
    return store


async def test_vector_memory_delete_and_forget(memory_store: InMemoryVectorStore) -> None:
    memory = VectorMemory(memory_store)
    ctx = Ctx(scope=ACME)
    assert await memory.delete(["c00", "nope"], ctx=ctx) == 1
    assert await memory.forget({"doc_id": "d1"}, ctx=ctx) == 4
    assert ids(await memory.query("walrus", k=50, ctx=ctx)) == {
        f"c{i:02d}" for i in range(12) if i % 3 != 1 and i != 0
    }
    with pytest.raises(InvalidArgument, match="all=True"):
        await memory.forget(None, ctx=ctx)
    with pytest.raises(InvalidArgument, match="all=True"):
        await memory.forget({}, ctx=ctx)
    with pytest.raises(InvalidArgument, match="not both"):
        await memory.forget({"i": 2}, ctx=ctx, all=True)
    assert await memory.forget(ctx=ctx, all=True) == 7
    assert await memory.query("walrus", k=50, ctx=ctx) == []
    assert len(await memory.query("walrus", k=50, ctx=Ctx(scope=GLOBEX))) == 12


async def test_vector_memory_forget_stays_inside_its_default_where(
    memory_store: InMemoryVectorStore,
) -> None:
    memory = VectorMemory(memory_store, where={"doc_id": "d2"})
    assert await memory.forget(ctx=Ctx(scope=ACME), all=True) == 4
    assert await memory_store.count(scope=ACME) == 8


async def test_vector_memory_names_a_port_that_cannot_forget() -> None:
    class Bare:
        async def delete(self, ids: Any, *, scope: Scope) -> None:
            return None

    memory = VectorMemory(Bare())
    assert await memory.delete(["a", "b", "a"], ctx=Ctx(scope=ACME)) == 2
    with pytest.raises(StoreError, match="delete_where"):
        await memory.forget({"k": 1}, ctx=Ctx(scope=ACME))
    with pytest.raises(StoreError, match="delete_scope"):
        await memory.forget(ctx=Ctx(scope=ACME), all=True)


async def test_cached_memory_never_serves_a_forgotten_record(
    memory_store: InMemoryVectorStore,
) -> None:
    cached = CachedMemory(VectorMemory(memory_store), ttl_seconds=3600)
    ctx = Ctx(scope=ACME)
    assert "c04" in ids(await cached.query("walrus tusks", k=20, ctx=ctx))
    # Behind the cache's back the record goes, and the cache still serves it: this is
    # what delete/forget through the cache must prevent.
    await memory_store.delete(["c04"], scope=ACME)
    assert "c04" in ids(await cached.query("walrus tusks", k=20, ctx=ctx))
    assert await cached.delete(["c05"], ctx=ctx) == 1
    after_delete = ids(await cached.query("walrus tusks", k=20, ctx=ctx))
    assert "c05" not in after_delete and "c04" not in after_delete
    assert "c06" in ids(await cached.query("walrus tusks", k=20, ctx=ctx))
    assert await cached.forget({"i": 6}, ctx=ctx) == 1
    assert "c06" not in ids(await cached.query("walrus tusks", k=20, ctx=ctx))
    assert await cached.forget(ctx=ctx, all=True) == 9
    assert await cached.query("walrus tusks", k=20, ctx=ctx) == []


async def test_cached_memory_invalidates_even_when_the_forget_fails(
    memory_store: InMemoryVectorStore,
) -> None:
    cached = CachedMemory(VectorMemory(memory_store))
    ctx = Ctx(scope=ACME)
    await cached.query("walrus", k=5, ctx=ctx)
    assert len(cached) == 1
    with pytest.raises(InvalidArgument):
        await cached.forget({}, ctx=ctx)
    assert len(cached) == 0


async def test_scoped_memory_checks_the_tenant_before_forgetting(
    memory_store: InMemoryVectorStore,
) -> None:
    scoped = ScopedMemory(VectorMemory(memory_store))
    unset = Ctx(scope=Scope("acme", None))
    with pytest.raises(ScopeViolation):
        await scoped.delete(["c00"], ctx=unset)
    with pytest.raises(ScopeViolation):
        await scoped.forget(ctx=unset, all=True)
    assert await memory_store.count(scope=ACME) == 12
    assert await scoped.forget({"i": [1, 2]}, ctx=Ctx(scope=ACME)) == 2
    assert await scoped.delete(["c03"], ctx=Ctx(scope=ACME)) == 1
    assert await memory_store.count(scope=ACME) == 9
    assert scoped.forgets


async def test_read_only_memory_refuses_to_forget(memory_store: InMemoryVectorStore) -> None:
    guarded = ReadOnlyMemory(VectorMemory(memory_store))
    ctx = Ctx(scope=ACME)
    with pytest.raises(MemoryWriteRefused):
        await guarded.delete(["c00"], ctx=ctx)
    with pytest.raises(MemoryWriteRefused):
        await guarded.forget(ctx=ctx, all=True)
    ignoring = ReadOnlyMemory(VectorMemory(memory_store), on_write="ignore")
    assert await ignoring.forget(ctx=ctx, all=True) == 0
    assert ignoring.refused_writes == 1 and not ignoring.forgets
    assert await memory_store.count(scope=ACME) == 12


async def test_composite_forgets_in_every_member_and_totals(tmp_path: Path) -> None:
    durable = SQLiteVectorStore(tmp_path / "c.db", embedder=HashingEmbedder(DIM))
    fast = InMemoryVectorStore(HashingEmbedder(DIM))
    async with durable:
        for s in (durable, fast):
            await fill(s)
        composite = CompositeMemory(
            [
                VectorMemory(durable, name="durable"),
                LexicalMemory(durable),  # reads the same rows: nothing of its own to forget
                CachedMemory(VectorMemory(fast, name="fast")),
                ReadOnlyMemory(VectorMemory(fast, name="mirror"), on_write="ignore"),
            ]
        )
        ctx = Ctx(scope=ACME)
        assert composite.forgets
        assert await composite.forget({"doc_id": "d0"}, ctx=ctx) == 8
        assert [
            (o.data["source"], o.data["n"]) for o in ctx.timeline if o.kind == "memory.forgot"
        ] == [("durable", 4), ("fast", 4)]
        assert await composite.delete(["c01"], ctx=ctx) == 2
        hits = ids(await composite.query("walrus tusks", k=50, ctx=ctx))
        assert hits and not {"c00", "c01", "c03"} & hits
        assert await composite.forget(ctx=ctx, all=True) == 14
        assert await composite.query("walrus tusks", k=50, ctx=ctx) == []
        assert await durable.count(scope=GLOBEX) == await fast.count(scope=GLOBEX) == 12


async def test_composite_reports_a_writable_member_that_cannot_forget(
    memory_store: InMemoryVectorStore,
) -> None:
    class Notes:  # a third-party source: keeps what it is given, cannot delete
        name = "notes"

        def __init__(self) -> None:
            self.kept: list[MemoryItem] = []

        async def query(
            self, query: str, *, k: int, ctx: Ctx, where: Any = None
        ) -> list[MemoryItem]:
            return self.kept[:k]

        async def write(self, items: Any, *, ctx: Ctx) -> None:
            self.kept.extend(items)

    composite = CompositeMemory([VectorMemory(memory_store), Notes()])
    ctx = Ctx(scope=ACME)
    with pytest.raises(CompositeWriteError) as caught:
        await composite.forget({"i": 0}, ctx=ctx)
    assert caught.value.accepted == ["vector"]
    assert list(caught.value.failed) == ["notes"]
    assert "cannot forget" in str(caught.value)
    assert await memory_store.count(scope=ACME) == 11  # the member that could, did
