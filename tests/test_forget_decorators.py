"""Forgetting through SequentialMemory, CompactedMemory and PerScopeMemory.

The other decorators and CompositeMemory are covered in test_forget.py; these three
must forward the same way, so a forgotten record is gone whichever wrapper the user
put around the store, and a composite holding one of them can forget at all.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentkit.capabilities import TruncatingCompactor
from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import (
    CompositeWriteError,
    InvalidArgument,
    InvalidArgumentType,
    ScopeViolation,
    StoreError,
)
from agentkit.state.memory import (
    CachedMemory,
    CompactedMemory,
    CompositeMemory,
    MemoryItem,
    PerScopeMemory,
    ReadOnlyMemory,
    SequentialMemory,
    VectorMemory,
)
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")
DIM = 64


def corpus() -> list[Chunk]:
    return [
        Chunk(f"c{i:02d}", f"walrus note {i} about tusks", {"doc_id": f"d{i % 3}", "i": i})
        for i in range(12)
    ]


async def filled() -> InMemoryVectorStore:
    store = InMemoryVectorStore(HashingEmbedder(DIM))
    for scope in (ACME, GLOBEX):
        await store.upsert(corpus(), scope=scope)
    return store


def ids(items: list[MemoryItem]) -> set[str]:
    return {i.id for i in items if i.id is not None}


def forgot(ctx: Ctx) -> list[tuple[str, int]]:
    return [(o.data["source"], o.data["n"]) for o in ctx.timeline if o.kind == "memory.forgot"]


class Notes:
    """A third-party source: keeps what it is given, cannot delete."""

    name = "notes"

    def __init__(self) -> None:
        self.kept: list[MemoryItem] = []

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None) -> list[MemoryItem]:
        return self.kept[:k]

    async def write(self, items: Any, *, ctx: Ctx) -> None:
        self.kept.extend(items)


# --- CompactedMemory ---------------------------------------------------------------


async def test_compacted_memory_forwards_delete_and_forget() -> None:
    store = await filled()
    compacted = CompactedMemory(VectorMemory(store), TruncatingCompactor(max_chars=12))
    ctx = Ctx(scope=ACME)
    assert compacted.forgets
    assert await compacted.delete(["c00", "nope"], ctx=ctx) == 1
    assert await compacted.forget({"doc_id": "d1"}, ctx=ctx) == 4
    left = ids(await compacted.query("walrus tusks", k=50, ctx=ctx))
    assert left == {f"c{i:02d}" for i in range(12) if i != 0 and i % 3 != 1}
    with pytest.raises(InvalidArgument, match="all=True"):
        await compacted.forget(ctx=ctx)
    assert await compacted.forget(ctx=ctx, all=True) == 7
    assert await compacted.query("walrus tusks", k=50, ctx=ctx) == []
    assert await store.count(scope=GLOBEX) == 12


async def test_compacted_memory_says_what_its_inner_source_can() -> None:
    store = await filled()
    guarded = CompactedMemory(ReadOnlyMemory(VectorMemory(store)), TruncatingCompactor(10))
    assert not guarded.forgets
    notes = CompactedMemory(Notes(), TruncatingCompactor(10))
    assert not notes.forgets
    with pytest.raises(StoreError, match="cannot delete or forget"):
        await notes.forget(ctx=Ctx(scope=ACME), all=True)


async def test_a_composite_holding_a_compacted_source_forgets_through_it() -> None:
    durable, fast = await filled(), await filled()
    composite = CompositeMemory(
        [
            CompactedMemory(VectorMemory(durable, name="durable"), TruncatingCompactor(20)),
            CachedMemory(VectorMemory(fast, name="fast")),
        ]
    )
    ctx = Ctx(scope=ACME)
    assert await composite.forget({"doc_id": "d0"}, ctx=ctx) == 8
    assert forgot(ctx) == [("durable", 4), ("fast", 4)]
    assert await durable.count(scope=ACME) == await fast.count(scope=ACME) == 8
    assert await durable.count(scope=GLOBEX) == 12


# --- SequentialMemory --------------------------------------------------------------


async def test_sequential_forgets_in_every_tier_so_no_tier_serves_the_record() -> None:
    cheap, durable = await filled(), await filled()
    chain = SequentialMemory(
        [VectorMemory(cheap, name="cheap"), VectorMemory(durable, name="durable")]
    )
    ctx = Ctx(scope=ACME)
    assert chain.forgets
    assert await chain.delete(["c00", "c00", "c01"], ctx=ctx) == 4
    # Had only the first tier forgotten, the walk would backfill c00 from the second.
    assert not {"c00", "c01"} & ids(await chain.query("walrus tusks", k=50, ctx=ctx))
    assert await chain.forget({"doc_id": "d2"}, ctx=ctx) == 8
    assert forgot(ctx) == [("cheap", 2), ("durable", 2), ("cheap", 4), ("durable", 4)]
    assert await chain.forget(ctx=ctx, all=True) == 12
    assert await chain.query("walrus tusks", k=50, ctx=ctx) == []
    assert await cheap.count(scope=GLOBEX) == await durable.count(scope=GLOBEX) == 12
    assert await chain.delete([], ctx=ctx) == 0


async def test_sequential_skips_read_only_tiers_and_reports_writable_ones_that_cannot() -> None:
    cheap, mirror = await filled(), await filled()
    chain = SequentialMemory(
        [
            VectorMemory(cheap, name="cheap"),
            ReadOnlyMemory(VectorMemory(mirror, name="mirror"), on_write="ignore"),
        ]
    )
    ctx = Ctx(scope=ACME)
    assert await chain.forget({"i": 3}, ctx=ctx) == 1
    assert await mirror.count(scope=ACME) == 12  # read-only: untouched, not an error

    notes = Notes()
    reporting = SequentialMemory([VectorMemory(cheap, name="cheap"), notes])
    with pytest.raises(CompositeWriteError) as caught:
        await reporting.forget({"i": 4}, ctx=ctx)
    assert caught.value.accepted == ["cheap"] and list(caught.value.failed) == ["notes"]
    assert await cheap.count(scope=ACME) == 10  # the tier that could, did


async def test_sequential_refuses_bad_arguments_before_any_tier_is_touched() -> None:
    store = await filled()
    chain = SequentialMemory([VectorMemory(store)])
    ctx = Ctx(scope=ACME)
    with pytest.raises(InvalidArgument, match="not both"):
        await chain.forget({"i": 1}, ctx=ctx, all=True)
    with pytest.raises(InvalidArgumentType):
        await chain.delete("c00", ctx=ctx)  # type: ignore[arg-type]
    assert await store.count(scope=ACME) == 12
    assert not SequentialMemory([]).forgets
    assert await SequentialMemory([]).forget(ctx=ctx, all=True) == 0


async def test_a_composite_holding_a_sequential_chain_forgets_through_it() -> None:
    cheap, durable = await filled(), await filled()
    composite = CompositeMemory(
        [SequentialMemory([VectorMemory(cheap, name="cheap"), VectorMemory(durable)])]
    )
    ctx = Ctx(scope=ACME)
    assert await composite.delete(["c05"], ctx=ctx) == 2
    assert await cheap.count(scope=ACME) == await durable.count(scope=ACME) == 11


# --- PerScopeMemory ----------------------------------------------------------------


async def test_per_scope_forgets_in_the_tenants_own_source_only() -> None:
    built: dict[Scope, InMemoryVectorStore] = {}

    async def factory(scope: Scope) -> VectorMemory:
        built[scope] = store = InMemoryVectorStore(HashingEmbedder(DIM))
        return VectorMemory(store)

    tenants = PerScopeMemory(factory)
    assert tenants.forgets  # nothing built yet: the factory's sources are trusted
    items = [MemoryItem(c.text, "vector", metadata=c.metadata, id=c.id) for c in corpus()]
    for scope in (ACME, GLOBEX):
        await tenants.write(items, ctx=Ctx(scope=scope))
    acme = Ctx(scope=ACME)
    assert await tenants.delete(["c00", "c01"], ctx=acme) == 2
    assert await tenants.forget({"doc_id": "d2"}, ctx=acme) == 4
    assert ids(await tenants.query("walrus tusks", k=50, ctx=acme)) == {
        f"c{i:02d}" for i in range(2, 12) if i % 3 != 2
    }
    assert await built[GLOBEX].count(scope=GLOBEX) == 12
    assert await tenants.forget(ctx=acme, all=True) == 6
    assert await built[ACME].count(scope=ACME) == 0
    assert await built[GLOBEX].count(scope=GLOBEX) == 12


async def test_per_scope_refuses_an_incomplete_scope_and_builds_nothing_to_forget() -> None:
    calls: list[Scope] = []

    def factory(scope: Scope) -> VectorMemory:
        calls.append(scope)
        return VectorMemory(InMemoryVectorStore(HashingEmbedder(DIM)))

    tenants = PerScopeMemory(factory, exists=lambda scope: False)
    with pytest.raises(ScopeViolation):
        await tenants.delete(["c00"], ctx=Ctx(scope=Scope("acme", None)))
    with pytest.raises(ScopeViolation):
        await tenants.forget(ctx=Ctx(scope=Scope(None, None)), all=True)
    # A tenant with nothing stored: nothing to forget, and no source is created for it.
    assert await tenants.delete(["c00"], ctx=Ctx(scope=ACME)) == 0
    assert await tenants.forget({"i": 1}, ctx=Ctx(scope=ACME)) == 0
    assert await tenants.forget(ctx=Ctx(scope=ACME), all=True) == 0
    assert calls == [] and tenants.scopes == []
    with pytest.raises(InvalidArgument):
        await tenants.forget(ctx=Ctx(scope=ACME))  # bad arguments still fail loudly


async def test_per_scope_names_a_built_source_that_cannot_forget() -> None:
    tenants = PerScopeMemory(lambda scope: Notes(), name="notes-per-tenant")
    await tenants.write([MemoryItem("kept", "x", id="k")], ctx=Ctx(scope=ACME))
    assert not tenants.forgets
    with pytest.raises(StoreError, match="notes-per-tenant"):
        await tenants.delete(["k"], ctx=Ctx(scope=ACME))


async def test_a_composite_holding_per_scope_memory_forgets_through_it() -> None:
    stores: dict[Scope, InMemoryVectorStore] = {}

    def factory(scope: Scope) -> VectorMemory:
        stores[scope] = InMemoryVectorStore(HashingEmbedder(DIM))
        return VectorMemory(stores[scope], name="tenant")

    composite = CompositeMemory([PerScopeMemory(factory)])
    ctx = Ctx(scope=ACME)
    await composite.write([MemoryItem("walrus", "x", metadata={"t": 1}, id="w")], ctx=ctx)
    assert await composite.forget({"t": 1}, ctx=ctx) == 1
    assert await stores[ACME].count(scope=ACME) == 0
