"""VectorMemory over a real InMemoryVectorStore (and a recorder to see port calls)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agentkit.kernel import Ctx, InvalidArgument, InvalidArgumentType, Scope
from agentkit.state.memory import CompositeMemory, MemoryItem, MemorySource, VectorMemory
from agentkit.vector import Chunk, InMemoryVectorStore


def ctx(org: str | None = "acme", domain: str | None = "support") -> Ctx:
    return Ctx(Scope(org, domain))


class RecordingPort:
    """A VectorPort that records calls and answers from a fixed list."""

    def __init__(self, hits: list[tuple[float, Chunk]] | None = None) -> None:
        self.hits = hits or []
        self.searches: list[dict[str, Any]] = []
        self.upserts: list[tuple[list[Chunk], Scope]] = []

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        self.upserts.append((list(chunks), scope))

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        self.searches.append({"query": query, "k": k, "scope": scope, "where": where})
        return list(self.hits)

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> None:
        pass


async def seeded() -> tuple[VectorMemory, InMemoryVectorStore]:
    store = InMemoryVectorStore()
    memory = VectorMemory(store)
    await memory.write(
        [
            MemoryItem("refunds take 30 days", "user", metadata={"id": "r1", "topic": "billing"}),
            MemoryItem("shipping takes 5 days", "user", metadata={"id": "s1", "topic": "shipping"}),
        ],
        ctx=ctx(),
    )
    return memory, store


def test_defaults_and_protocol() -> None:
    memory = VectorMemory(InMemoryVectorStore())
    assert memory.name == "vector"
    assert memory.where is None
    assert isinstance(memory, MemorySource)


async def test_query_adapts_chunks_to_items_with_ids_and_float_scores() -> None:
    memory, _ = await seeded()
    items = await memory.query("refunds", k=1, ctx=ctx())
    assert len(items) == 1
    item = items[0]
    assert item.content == "refunds take 30 days"
    assert item.source == "vector"
    assert item.id == "r1"
    assert type(item.score) is float
    assert item.metadata == {"topic": "billing"}  # metadata["id"] never survives into storage


async def test_source_is_stamped_with_the_instance_name() -> None:
    port = RecordingPort([(0.5, Chunk("c", "text"))])
    items = await VectorMemory(port, name="kb").query("q", k=3, ctx=ctx())
    assert [i.source for i in items] == ["kb"]


async def test_call_where_merges_over_constructor_where_and_wins() -> None:
    port = RecordingPort()
    vm = VectorMemory(port, where={"lang": "en", "topic": "billing"})
    await vm.query("q", k=2, ctx=ctx(), where={"topic": "shipping", "tier": "gold"})
    await vm.query("q", k=2, ctx=ctx())
    assert port.searches[0]["where"] == {"lang": "en", "topic": "shipping", "tier": "gold"}
    assert port.searches[1]["where"] == {"lang": "en", "topic": "billing"}
    assert vm.where == {"lang": "en", "topic": "billing"}  # the default is not mutated


async def test_where_filters_on_written_metadata() -> None:
    memory, _ = await seeded()
    items = await memory.query("takes days", k=5, ctx=ctx(), where={"topic": "shipping"})
    assert [i.id for i in items] == ["s1"]
    wired = VectorMemory(memory.vector, where={"topic": "billing"})
    assert [i.id for i in await wired.query("takes days", k=5, ctx=ctx())] == ["r1"]


async def test_an_id_from_another_source_never_overwrites_a_row() -> None:
    memory, store = await seeded()
    # A journal row whose key happens to be "r1": a composite broadcasts it here.
    foreign = MemoryItem("unrelated journal fact", "journal", id="r1")
    await memory.write([foreign], ctx=ctx())
    assert await store.count(scope=Scope("acme", "support")) == 3
    (kept,) = await memory.query("refunds take 30 days", k=1, ctx=ctx())
    assert kept.content == "refunds take 30 days"


async def test_composite_broadcast_does_not_clobber_vector_rows() -> None:
    memory, _store = await seeded()
    other = VectorMemory(InMemoryVectorStore(), name="other")
    await CompositeMemory([memory, other]).write(
        [MemoryItem("from elsewhere", "journal", id="s1")], ctx=ctx()
    )
    hits = await memory.query("shipping takes 5 days", k=1, ctx=ctx())
    assert hits[0].content == "shipping takes 5 days"


async def test_id_precedence_own_id_then_metadata_id_then_uuid() -> None:
    port = RecordingPort()
    vm = VectorMemory(port)
    await vm.write(
        [
            # Recalled from this source: its row id wins; metadata["id"] is still popped.
            MemoryItem("a", "vector", metadata={"id": "explicit", "k": 1}, id="provenance"),
            # From elsewhere: the caller's metadata["id"] instructs the row.
            MemoryItem("b", "elsewhere", metadata={"id": 7}, id="foreign"),
            MemoryItem("c", "vector", id="mine"),
        ],
        ctx=ctx(),
    )
    chunks = port.upserts[0][0]
    assert [c.id for c in chunks] == ["provenance", "7", "mine"]
    assert [dict(c.metadata) for c in chunks] == [{"k": 1}, {}, {}]


async def test_items_without_an_id_get_fresh_uuids() -> None:
    port = RecordingPort()
    vm = VectorMemory(port)
    await vm.write([MemoryItem("same", "user"), MemoryItem("same", "user")], ctx=ctx())
    ids = [c.id for c in port.upserts[0][0]]
    assert len(set(ids)) == 2 and all(len(i) == 32 for i in ids)


async def test_empty_write_makes_no_port_call() -> None:
    port = RecordingPort()
    await VectorMemory(port).write([], ctx=ctx())
    await VectorMemory(port).write(iter(()), ctx=ctx())
    assert port.upserts == []


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"k": 0}, InvalidArgument, "k"),
        ({"k": "5"}, InvalidArgumentType, "k"),
        ({"query": 42}, InvalidArgumentType, "query"),
        ({"where": "topic=billing"}, InvalidArgumentType, "where"),
        ({"ctx": None}, InvalidArgumentType, "ctx"),
    ],
)
async def test_bad_query_arguments_fail_before_the_port_is_touched(
    kwargs: dict[str, Any], error: type, name: str
) -> None:
    port = RecordingPort()
    call: dict[str, Any] = {"query": "q", "k": 2, "ctx": ctx(), **kwargs}
    with pytest.raises(error, match=name):
        await VectorMemory(port).query(call.pop("query"), **call)
    assert port.searches == []


async def test_bad_writes_store_nothing() -> None:
    port = RecordingPort()
    vm = VectorMemory(port)
    with pytest.raises(InvalidArgumentType):
        await vm.write([MemoryItem("ok", "user"), "not an item"], ctx=ctx())  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentType, match="id"):
        await vm.write([MemoryItem("ok", "user", metadata={"id": ["x"]})], ctx=ctx())
    assert port.upserts == []


def test_constructor_where_must_be_a_mapping() -> None:
    with pytest.raises(InvalidArgumentType, match="where"):
        VectorMemory(RecordingPort(), where=[("a", 1)])  # type: ignore[arg-type]
