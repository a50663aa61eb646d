"""VectorMemory writing through a LlamaIndex index: upsert in place, tenants apart."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from agentkit_llamaindex import AgentkitEmbedding, LlamaIndexMemory, LlamaIndexVectorPort
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import StoreError
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.vector import Chunk, HashingEmbedder, VectorPort

ACME = Ctx(Scope("acme", "kb"))
GLOBEX = Ctx(Scope("globex", "kb"))


def _port() -> LlamaIndexVectorPort:
    return LlamaIndexVectorPort(VectorStoreIndex([]))


def test_is_a_vector_port() -> None:
    assert isinstance(_port(), VectorPort)
    with pytest.raises(TypeError):
        LlamaIndexVectorPort(object())  # type: ignore[arg-type]


async def test_update_in_place_by_id() -> None:
    mem = VectorMemory(_port(), name="kb")
    await mem.write([MemoryItem("the sky is green", "user", metadata={"id": "fact-1"})], ctx=ACME)
    [recalled] = await mem.query("sky colour", k=3, ctx=ACME)
    assert recalled.id == "fact-1" and recalled.source == "kb"
    # read, modify, write back: the same row changes, no second copy appears
    await mem.write([dataclasses.replace(recalled, content="the sky is blue")], ctx=ACME)
    items = await mem.query("sky", k=5, ctx=ACME)
    assert [(i.id, i.content) for i in items] == [("fact-1", "the sky is blue")]


async def test_two_tenants_with_the_same_ids_never_collide() -> None:
    index = VectorStoreIndex([])
    mem = VectorMemory(LlamaIndexVectorPort(index), name="kb")
    await mem.write([MemoryItem("acme secret plan", "x", metadata={"id": "1"})], ctx=ACME)
    await mem.write([MemoryItem("globex secret plan", "x", metadata={"id": "1"})], ctx=GLOBEX)
    acme = await mem.query("secret plan", k=5, ctx=ACME)
    globex = await mem.query("secret plan", k=5, ctx=GLOBEX)
    assert [(i.id, i.content) for i in acme] == [("1", "acme secret plan")]
    assert [(i.id, i.content) for i in globex] == [("1", "globex secret plan")]
    assert await mem.query("secret plan", k=5, ctx=Ctx()) == []
    # the scope keys never reach the items
    assert all(not k.startswith("agentkit_") for i in acme + globex for k in i.metadata)
    # deleting one tenant's "1" leaves the other's alone
    await LlamaIndexVectorPort(index).delete(["1"], scope=ACME.scope)
    assert await mem.query("secret plan", k=5, ctx=ACME) == []
    assert len(await mem.query("secret plan", k=5, ctx=GLOBEX)) == 1


async def test_where_is_pushed_down_and_rechecked() -> None:
    port = _port()
    await port.upsert(
        [
            Chunk("a", "refund policy thirty days", {"lang": "en", "tier": 1}),
            Chunk("b", "politique de remboursement", {"lang": "fr", "tier": 2}),
            Chunk("c", "refund receipt required", {"lang": "en", "flag": True}),
        ],
        scope=ACME.scope,
    )
    hits = await port.search("refund", k=5, scope=ACME.scope, where={"lang": "en"})
    assert {c.id for _, c in hits} == {"a", "c"}
    assert [
        c.id for _, c in await port.search("x", k=5, scope=ACME.scope, where={"tier": [2, 3]})
    ] == ["b"]
    # bool values cannot be LlamaIndex filters: only the re-check applies them
    assert [
        c.id for _, c in await port.search("x", k=5, scope=ACME.scope, where={"flag": True})
    ] == ["c"]
    scores = [s for s, _ in await port.search("refund policy", k=3, scope=ACME.scope)]
    assert all(type(s) is float for s in scores) and scores == sorted(scores, reverse=True)
    assert {c.id: dict(c.metadata) for _, c in hits}["a"] == {"lang": "en", "tier": 1}


async def test_from_bare_vector_store() -> None:
    store = SimpleVectorStore()
    port = LlamaIndexVectorPort.from_vector_store(
        store, embed_model=AgentkitEmbedding(HashingEmbedder(dim=64))
    )
    mem = VectorMemory(port, name="kb")
    await mem.write([MemoryItem("penguins live in the south", "x", metadata={"id": "p"})], ctx=ACME)
    [item] = await mem.query("penguins", k=2, ctx=ACME)
    assert (item.id, item.content) == ("p", "penguins live in the south")
    assert len(store.data.embedding_dict) == 1
    await mem.write([MemoryItem("penguins swim", "kb", id="p")], ctx=ACME)
    assert [(i.id, i.content) for i in await mem.query("penguins", k=2, ctx=ACME)] == [
        ("p", "penguins swim")
    ]
    assert len(store.data.embedding_dict) == 1


async def test_reserved_and_bad_arguments_refused_before_anything_is_touched() -> None:
    port = _port()
    with pytest.raises(ValueError, match="agentkit_org_id"):
        await port.upsert([Chunk("a", "t", {"agentkit_org_id": "evil"})], scope=ACME.scope)
    with pytest.raises(ValueError):
        await port.search("q", k=0, scope=ACME.scope)
    with pytest.raises(TypeError):
        await port.search("q", k=1, scope="acme")  # type: ignore[arg-type]
    await port.delete([], scope=ACME.scope)  # an empty delete never means "everything"
    assert await port.search("t", k=3, scope=ACME.scope) == []


class _IgnoresFilters(SimpleVectorStore):
    """A store that silently drops metadata filters (as some real ones do)."""

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return super().query(dataclasses.replace(query, filters=None), **kwargs)


async def test_a_store_that_cannot_filter_is_refused_for_scoped_use() -> None:
    port = LlamaIndexVectorPort.from_vector_store(_IgnoresFilters())
    await port.upsert([Chunk("1", "acme data")], scope=ACME.scope)
    await port.upsert([Chunk("1", "globex data")], scope=GLOBEX.scope)
    with pytest.raises(StoreError, match="tenants"):
        await port.search("data", k=5, scope=ACME.scope)


async def test_index_retriever_source_keeps_port_written_tenant_nodes_apart() -> None:

    index = VectorStoreIndex([TextNode(id_="shared", text="shared refund policy")])
    kb = VectorMemory(LlamaIndexVectorPort(index), name="kb")
    await kb.write([MemoryItem("acme refund secret", "x", metadata={"id": "1"})], ctx=ACME)
    docs = LlamaIndexMemory(index.as_retriever(), name="docs")
    acme = await docs.query("refund", k=5, ctx=ACME)
    anon = await docs.query("refund", k=5, ctx=Ctx())
    assert {i.id for i in acme} == {"shared", "1"}
    assert {i.id for i in anon} == {"shared"}
    assert all(not k.startswith("agentkit_") for i in acme for k in i.metadata)


async def test_concurrent_writes_and_searches_on_one_index() -> None:
    import asyncio

    port = _port()
    await port.upsert([Chunk("seed", "seed text")], scope=ACME.scope)

    async def write(i: int) -> None:
        await port.upsert([Chunk(f"c{i % 5}", f"version {i} of chunk {i % 5}")], scope=ACME.scope)

    async def search() -> list[tuple[float, Chunk]]:
        return await port.search("chunk", k=10, scope=ACME.scope)

    results = await asyncio.gather(*(write(i) for i in range(30)), *(search() for _ in range(30)))
    for hits in results[30:]:
        assert isinstance(hits, list)
        ids = [c.id for _, c in hits]
        assert len(ids) == len(set(ids))  # never a row seen twice mid-replace
    final = await search()
    assert sorted(c.id for _, c in final) == ["c0", "c1", "c2", "c3", "c4", "seed"]


# LlamaIndex's cosine warns on the zero vector of a featureless query; the port maps
# that 0/0 to a 0.0 score.
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("query", ["", "?!*()\"'"])
async def test_empty_and_featureless_queries_return_a_list(query: str) -> None:
    index = VectorStoreIndex([TextNode(id_="n", text="some shared text")])
    port = LlamaIndexVectorPort(index)
    await port.upsert([Chunk("a", "alpha beta")], scope=ACME.scope)
    hits = await port.search(query, k=3, scope=ACME.scope)
    assert [c.id for _, c in hits] == ["a"] and all(s == s for s, _ in hits)  # no NaN
    items = await LlamaIndexMemory(index.as_retriever()).query(query, k=3, ctx=Ctx())
    assert [i.id for i in items] == ["n"]
