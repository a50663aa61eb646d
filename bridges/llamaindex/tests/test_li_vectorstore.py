"""VectorMemory writing through a LlamaIndex index: upsert in place, tenants apart."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from agentkit_llamaindex import AgentkitEmbedding, LlamaIndexMemory, LlamaIndexVectorPort
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import StoreError, UnsupportedOperation
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


async def test_the_named_embed_model_embeds_chunks_and_queries() -> None:
    index = VectorStoreIndex([], embed_model=AgentkitEmbedding(HashingEmbedder(dim=32)))
    model = AgentkitEmbedding(HashingEmbedder(dim=64))
    port = LlamaIndexVectorPort(index, embed_model=model)
    assert port.embed_model is model
    await port.upsert([Chunk("p", "penguins live in the south")], scope=Scope())
    [vector] = index.vector_store.data.embedding_dict.values()  # type: ignore[attr-defined]
    assert vector == model.get_text_embedding("penguins live in the south")
    [(_, chunk)] = await port.search("penguins", k=3, scope=Scope())
    assert chunk.id == "p"
    with pytest.raises(TypeError, match="embed_model"):
        LlamaIndexVectorPort(index, embed_model=HashingEmbedder(dim=8))  # type: ignore[arg-type]


async def test_from_vector_store_without_a_model_agrees_with_its_index() -> None:
    """Settings.embed_model embeds the port's writes, and the index's own retriever
    (same model) finds them."""
    port = LlamaIndexVectorPort.from_vector_store(SimpleVectorStore())
    assert port.embed_model is Settings.embed_model
    await port.upsert([Chunk("p", "penguins live in the south")], scope=Scope())
    [hit] = port.index.as_retriever(similarity_top_k=1).retrieve("penguins")
    assert hit.node.node_id == "p"


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


# -- real stores ---------------------------------------------------------------------
# The same port over the stores LlamaIndex users run: the simple store (through its
# VectorStoreIndex), Chroma in-process, Qdrant local mode and FAISS.

DIM = 64
UNSCOPED = Scope()


def _embed() -> AgentkitEmbedding:
    return AgentkitEmbedding(HashingEmbedder(dim=DIM))


@dataclasses.dataclass
class Real:
    """A user's own index over a real store, the port over it, and the store's view."""

    name: str
    index: VectorStoreIndex
    port: LlamaIndexVectorPort
    count: Any  # () -> records the store holds, by its own API
    user_ids: tuple[str, str] = ("doc-1", "doc-2")


def _simple() -> Real:
    index = VectorStoreIndex([], embed_model=_embed())
    vectors = index.vector_store.data.embedding_dict  # type: ignore[attr-defined]
    return Real("simple", index, LlamaIndexVectorPort(index), lambda: len(vectors))


def _chroma() -> Real:
    import chromadb
    from llama_index.vector_stores.chroma import ChromaVectorStore

    collection = chromadb.EphemeralClient().create_collection("c" + uuid.uuid4().hex)
    store = ChromaVectorStore(chroma_collection=collection)
    index = VectorStoreIndex.from_vector_store(store, embed_model=_embed())
    return Real("chroma", index, LlamaIndexVectorPort(index), collection.count)


def _qdrant() -> Real:
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    client = QdrantClient(location=":memory:")
    store = QdrantVectorStore(client=client, collection_name="docs")
    index = VectorStoreIndex.from_vector_store(store, embed_model=_embed())

    def count() -> int:
        return client.count("docs").count if client.collection_exists("docs") else 0

    # LlamaIndex writes Qdrant points under UUIDs (a TextNode's default id is a uuid4).
    ids = (str(uuid.uuid4()), str(uuid.uuid4()))
    return Real("qdrant", index, LlamaIndexVectorPort(index), count, ids)


def _faiss() -> Real:
    import faiss
    from llama_index.core import StorageContext
    from llama_index.vector_stores.faiss import FaissVectorStore

    store = FaissVectorStore(faiss_index=faiss.IndexFlatL2(DIM))
    storage = StorageContext.from_defaults(vector_store=store)
    index = VectorStoreIndex([], storage_context=storage, embed_model=_embed())
    # FAISS cannot drop a vector; what the index still serves is its node map.
    return Real("faiss", index, LlamaIndexVectorPort(index), lambda: len(index.docstore.docs))


FILTERING = {"simple": _simple, "chroma": _chroma, "qdrant": _qdrant}
EVERY = {**FILTERING, "faiss": _faiss}


@pytest.mark.parametrize("make", EVERY.values(), ids=list(EVERY))
async def test_nodes_written_by_plain_llamaindex_are_the_unscoped_bucket(make: Any) -> None:
    real = make()
    mine, theirs = real.user_ids
    real.index.insert_nodes(
        [
            TextNode(id_=mine, text="onboarding checklist", metadata={"file_path": "a.md"}),
            TextNode(id_=theirs, text="travel expense rules", metadata={"file_path": "b.md"}),
        ]
    )
    if real.name != "faiss":  # a tenant next door, for the stores that can keep one
        await real.port.upsert([Chunk("t1", "tenant onboarding notes")], scope=ACME.scope)
    mem = VectorMemory(real.port, name="kb")

    # read: their own ids and metadata, unscoped only
    [item] = await mem.query("onboarding checklist", k=1, ctx=Ctx())
    assert (item.id, item.content, dict(item.metadata)) == (
        mine,
        "onboarding checklist",
        {"file_path": "a.md"},
    )
    everything = await mem.query("onboarding", k=10, ctx=Ctx())
    assert sorted(str(i.id) for i in everything) == sorted([mine, theirs])
    if real.name != "faiss":
        assert [i.id for i in await mem.query("onboarding", k=10, ctx=ACME)] == ["t1"]
    held = real.count()

    # a recalled node written back updates it in place
    await mem.write([dataclasses.replace(item, content="onboarding checklist v2")], ctx=Ctx())
    assert real.count() == held
    again = await mem.query("onboarding checklist", k=10, ctx=Ctx())
    assert [(i.id, i.content) for i in again if i.id == mine] == [(mine, "onboarding checklist v2")]
    assert [i.id for i in again].count(mine) == 1

    # delete by its own id; an unknown id in the batch is no error and stops nothing
    await real.port.delete(["never-written", mine, str(uuid.uuid4())], scope=UNSCOPED)
    assert real.count() == held - 1
    left = await mem.query("onboarding checklist travel", k=10, ctx=Ctx())
    assert [i.id for i in left] == [theirs]


async def test_first_write_into_a_fresh_qdrant_collection() -> None:
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    client = QdrantClient(location=":memory:")
    store = QdrantVectorStore(client=client, collection_name="fresh")
    port = LlamaIndexVectorPort.from_vector_store(store, embed_model=_embed())
    assert not client.collection_exists("fresh")
    # nothing there yet: reads are empty and deletes are no-ops, not "not found"
    assert await port.search("anything", k=3, scope=ACME.scope) == []
    await port.delete(["x"], scope=ACME.scope)
    await port.upsert([Chunk("1", "first fact ever", {"lang": "en"})], scope=ACME.scope)
    assert client.collection_exists("fresh")
    hits = await port.search("first fact", k=3, scope=ACME.scope)
    assert [(c.id, c.text, dict(c.metadata)) for _, c in hits] == [
        ("1", "first fact ever", {"lang": "en"})
    ]
    assert await port.search("first fact", k=3, scope=GLOBEX.scope) == []


async def test_an_async_only_qdrant_store_is_named_as_such() -> None:
    """The port works through the store's sync API in a worker thread; on a store built
    with ``aclient=`` only, every call says so instead of an AttributeError on None."""
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import AsyncQdrantClient

    store = QdrantVectorStore(aclient=AsyncQdrantClient(location=":memory:"), collection_name="a")
    port = LlamaIndexVectorPort.from_vector_store(store, embed_model=_embed())
    for call in (
        port.upsert([Chunk("1", "a fact")], scope=ACME.scope),
        port.search("a fact", k=1, scope=ACME.scope),
        port.delete(["1"], scope=ACME.scope),
        port.scan(scope=ACME.scope),
    ):
        with pytest.raises(UnsupportedOperation, match=r"no sync client.*client= as well"):
            await call


async def test_faiss_is_refused_for_scoped_use_before_anything_is_written() -> None:
    real = _faiss()
    port = real.port
    faiss_index = real.index.vector_store.client
    for call in (
        port.upsert([Chunk("1", "acme data")], scope=ACME.scope),
        port.search("acme", k=3, scope=ACME.scope),
        port.delete(["1"], scope=ACME.scope),
    ):
        with pytest.raises(StoreError, match="cannot keep tenants apart"):
            await call
    assert faiss_index.ntotal == 0 and real.count() == 0

    # unscoped it is a working store: write, read, update, delete
    await port.upsert(
        [Chunk("a", "penguins live in the south"), Chunk("b", "camels cross the desert")],
        scope=UNSCOPED,
    )
    hits = await port.search("penguins live in the south", k=2, scope=UNSCOPED)
    assert [c.id for _, c in hits] == ["a", "b"]
    # relevance, not L2 distance: the exact text scores highest
    assert all(type(s) is float for s, _ in hits) and hits[0][0] > hits[1][0]
    await port.upsert([Chunk("a", "penguins swim")], scope=UNSCOPED)
    await port.delete(["b", "zzz"], scope=UNSCOPED)
    hits = await port.search("penguins", k=5, scope=UNSCOPED)
    assert [(c.id, c.text) for _, c in hits] == [("a", "penguins swim")]


async def test_faiss_widens_until_a_rechecked_match_is_found() -> None:
    port = _faiss().port
    crowd = [Chunk(f"c{i}", f"refund policy entry {i}", {"flag": False}) for i in range(40)]
    await port.upsert([*crowd, Chunk("x", "store credit only", {"flag": True})], scope=UNSCOPED)
    # FAISS filters nothing, and a bool cannot be a LlamaIndex filter anyway: only the
    # re-check knows, and 40 better-ranked records must not hide the one that matches
    hits = await port.search("refund policy", k=2, scope=UNSCOPED, where={"flag": True})
    assert [c.id for _, c in hits] == ["x"]


async def test_qdrant_widens_past_a_where_it_cannot_spell_exactly() -> None:
    port = _qdrant().port
    # numbers in an any-of are left to the re-check on Qdrant (1 must still find 1.0)
    crowd = [Chunk(f"c{i}", f"refund policy entry {i}", {"tier": 3}) for i in range(30)]
    await port.upsert([*crowd, Chunk("x", "store credit", {"tier": 1.0})], scope=ACME.scope)
    hits = await port.search("refund policy", k=3, scope=ACME.scope, where={"tier": [1, 2]})
    assert [c.id for _, c in hits] == ["x"]
    hits = await port.search("refund policy", k=3, scope=ACME.scope, where={"tier": 1})
    assert [c.id for _, c in hits] == ["x"]


@pytest.mark.parametrize("make", FILTERING.values(), ids=list(FILTERING))
async def test_an_unscoped_query_widens_past_tenant_records(make: Any) -> None:
    real = make()
    mine, _ = real.user_ids
    real.index.insert_nodes([TextNode(id_=mine, text="office holiday calendar")])
    for t in range(3):
        await real.port.upsert(
            [Chunk(f"h{i}", f"office holiday calendar entry {t} {i}") for i in range(20)],
            scope=Scope(f"tenant-{t}", "hr"),
        )
    hits = await real.port.search("office holiday calendar entry", k=2, scope=UNSCOPED)
    assert [c.id for _, c in hits] == [mine]
