"""LlamaIndex retrievers pulled into agentkit as MemorySources."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
import uuid
from typing import Any

import pytest
from agentkit_llamaindex import LlamaIndexMemory
from llama_index.core import VectorStoreIndex
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode
from llama_index.retrievers.bm25 import BM25Retriever

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import CompositeMemory, MemoryItem, MemorySource, VectorMemory

DOCS = [
    ("d1", "the refund policy allows returns within thirty days", {"tenant": "acme"}),
    ("d2", "refund requests need the original receipt", {"tenant": "acme"}),
    ("d3", "shipping takes five business days", {"tenant": "acme"}),
    ("d4", "globex refund policy is store credit only", {"tenant": "globex"}),
    ("d5", "globex ships overnight", {"tenant": "globex"}),
]


def _nodes() -> list[BaseNode]:
    return [TextNode(id_=i, text=t, metadata=dict(m)) for i, t, m in DOCS]


class SleepyRetriever(BaseRetriever):
    """Sync-only, like most hand-written retrievers: LlamaIndex's default _aretrieve
    would run this on the event loop and block it."""

    def __init__(self, label: str, delay: float = 0.2) -> None:
        super().__init__()
        self.label = label
        self.delay = delay
        self.threads: list[str] = []
        self.slept: list[tuple[float, float]] = []

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.threads.append(threading.current_thread().name)
        start = time.perf_counter()
        time.sleep(self.delay)
        self.slept.append((start, time.perf_counter()))
        return [
            NodeWithScore(
                node=TextNode(id_=f"{self.label}-{i}", text=f"{self.label} {i}"), score=1.0 - i / 10
            )
            for i in range(3)
        ]


def test_is_a_read_only_memory_source() -> None:
    mem = LlamaIndexMemory(SleepyRetriever("x", 0))
    assert isinstance(mem, MemorySource)
    assert mem.name == "llamaindex" and mem.accepts_writes is False
    with pytest.raises(TypeError):
        LlamaIndexMemory(object())  # type: ignore[arg-type]


async def test_write_is_a_no_op() -> None:
    mem = LlamaIndexMemory(SleepyRetriever("x", 0))
    await mem.write([], ctx=Ctx())


async def test_vector_index_retriever_k_pushed_down_without_mutation() -> None:
    index = VectorStoreIndex(_nodes())
    user_retriever = index.as_retriever(similarity_top_k=2)
    mem = LlamaIndexMemory(user_retriever, name="docs")
    items = await mem.query("refund policy", k=4, ctx=Ctx())
    assert len(items) == 4
    assert all(i.source == "docs" and isinstance(i.score, float) for i in items)
    assert items == sorted(items, key=lambda i: -(i.score or 0))
    assert getattr(user_retriever, "similarity_top_k", None) == 2  # yours is never touched
    assert len(await mem.query("refund policy", k=1, ctx=Ctx())) == 1


async def test_an_index_given_directly_sees_nodes_inserted_later() -> None:
    index = VectorStoreIndex(_nodes())
    mem = LlamaIndexMemory(index, name="docs")
    snapshot = LlamaIndexMemory(index.as_retriever())
    index.insert_nodes(
        [TextNode(id_="late", text="late arrival about penguins", metadata={"tenant": "acme"})]
    )
    items = await mem.query("penguins", k=1, ctx=Ctx())
    assert [i.id for i in items] == ["late"] and items[0].source == "docs"
    # as_retriever() is LlamaIndex's snapshot of the index's nodes: the bridge answers
    # exactly as that retriever itself does, never wider.
    own = [n.node.node_id for n in index.as_retriever().retrieve("penguins")]
    assert "late" in own
    assert "late" not in {i.id for i in await snapshot.query("penguins", k=5, ctx=Ctx())}


async def test_vector_index_where_pushed_down_and_rechecked() -> None:
    index = VectorStoreIndex(_nodes())
    mem = LlamaIndexMemory(index.as_retriever())
    items = await mem.query("refund policy", k=5, ctx=Ctx(), where={"tenant": "globex"})
    assert {i.id for i in items} == {"d4", "d5"}
    any_of = await mem.query("refund", k=5, ctx=Ctx(), where={"tenant": ["globex", "nobody"]})
    assert {i.id for i in any_of} == {"d4", "d5"}
    # a bool cannot be pushed down as a LlamaIndex filter; the re-check still applies
    assert await mem.query("refund", k=5, ctx=Ctx(), where={"tenant": True}) == []
    assert await mem.query("refund", k=5, ctx=Ctx(), where={"tenant": []}) == []


async def test_bm25_soft_filter_is_rechecked() -> None:
    bm25 = BM25Retriever.from_defaults(nodes=_nodes(), similarity_top_k=2)
    # LlamaIndex's own filter only zeroes scores: other tenants come back at 0.0
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

    soft = BM25Retriever.from_defaults(
        nodes=_nodes(),
        similarity_top_k=5,
        filters=MetadataFilters(filters=[MetadataFilter(key="tenant", value="globex")]),
    )
    leaked = {n.node.metadata["tenant"] for n in soft.retrieve("refund")}
    assert leaked == {"acme", "globex"}

    mem = LlamaIndexMemory(bm25, name="bm25")
    items = await mem.query("refund", k=5, ctx=Ctx(), where={"tenant": "globex"})
    assert {i.id for i in items} == {"d4", "d5"}
    assert all(i.metadata["tenant"] == "globex" for i in items)
    top = await mem.query("refund receipt", k=1, ctx=Ctx())
    assert [i.id for i in top] == ["d2"]
    assert bm25.similarity_top_k == 2 and bm25.corpus_weight_mask is None
    assert await mem.query("refund", k=3, ctx=Ctx(), where={"tenant": "initech"}) == []


async def test_sync_only_retrievers_fan_out_concurrently_without_blocking_the_loop() -> None:
    index = VectorStoreIndex(_nodes())
    sleepers = [SleepyRetriever(f"s{i}") for i in range(8)]
    stack = CompositeMemory(
        [
            LlamaIndexMemory(index.as_retriever(), name="vector"),
            LlamaIndexMemory(BM25Retriever.from_defaults(nodes=_nodes()), name="bm25"),
            *(LlamaIndexMemory(s, name=s.label) for s in sleepers),
        ]
    )
    beats: list[float] = []

    async def heartbeat() -> None:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.3:
            await asyncio.sleep(0.01)
            beats.append(time.perf_counter())

    items, _ = await asyncio.gather(stack.query("refund", k=30, ctx=Ctx()), heartbeat())
    # all eight 0.2 s sleeps overlapped: one round, not eight (nor two on a 6-thread pool)
    spans = [span for s in sleepers for span in s.slept]
    overlap_from, overlap_to = max(a for a, _ in spans), min(b for _, b in spans)
    assert len(spans) == 8 and overlap_from < overlap_to
    # vector and BM25 return the same documents: the composite merges the copies
    seen = {i.source for i in items} | {
        src for i in items for src in i.metadata.get("dedupe_sources", ())
    }
    assert seen >= {"vector", "bm25", *(s.label for s in sleepers)}
    # the loop kept beating while all of them slept
    during = [b for b in beats if overlap_from <= b <= overlap_to]
    assert len(during) >= 3
    gaps = [b - a for a, b in itertools.pairwise(beats)]
    assert max(gaps) < 0.15
    assert all(t.startswith("agentkit-interop") for s in sleepers for t in s.threads)


async def test_k_is_validated_before_the_retriever_is_touched() -> None:
    r = SleepyRetriever("x", 0)
    mem = LlamaIndexMemory(r)
    bads: tuple[Any, ...] = (0, -1, True, 1.5)
    for bad in bads:
        with pytest.raises((ValueError, TypeError)):
            await mem.query("q", k=bad, ctx=Ctx())
    assert r.threads == []


async def test_result_is_cut_to_k_for_any_retriever() -> None:
    mem = LlamaIndexMemory(SleepyRetriever("x", 0))
    assert [i.id for i in await mem.query("q", k=2, ctx=Ctx())] == ["x-0", "x-1"]


async def test_an_agentkit_retriever_round_trips_with_k_pushed_down() -> None:
    from agentkit_llamaindex import AgentkitRetriever

    from agentkit.state.memory import MemoryItem

    class Five:
        name = "five"

        async def query(
            self, query: str, *, k: int, ctx: Ctx, where: object = None
        ) -> list[MemoryItem]:
            return [
                MemoryItem(f"t{i}", "five", 1 - i / 10, {"i": i}, id=f"i{i}") for i in range(5)
            ][:k]

        async def write(self, items: object, *, ctx: Ctx) -> None:
            return None

    inner = AgentkitRetriever(Five(), k=2)
    items = await LlamaIndexMemory(inner, name="outer").query("q", k=4, ctx=Ctx())
    # k reached the inner retriever (4, not its own 2), and items come back as they were
    assert [(i.id, i.source, i.score) for i in items] == [
        ("i0", "five", 1.0),
        ("i1", "five", 0.9),
        ("i2", "five", 0.8),
        ("i3", "five", 0.7),
    ]
    assert inner.k == 2


async def test_top_k_is_pushed_into_a_copy_and_read_only_settings_are_tolerated() -> None:
    class TopK(SleepyRetriever):
        def __init__(self) -> None:
            super().__init__("t", 0)
            self.similarity_top_k = 1
            self.asked: list[int] = []

        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            self.asked.append(self.similarity_top_k)
            return super()._retrieve(query_bundle)[: self.similarity_top_k]

    class ReadOnly(SleepyRetriever):
        @property
        def similarity_top_k(self) -> int:
            return 1

    r = TopK()
    assert len(await LlamaIndexMemory(r).query("q", k=3, ctx=Ctx())) == 3
    assert r.asked == [3]  # a per-call copy was asked for k ...
    assert r.similarity_top_k == 1  # ... and yours kept its setting
    items = await LlamaIndexMemory(ReadOnly("ro", 0)).query("q", k=2, ctx=Ctx())
    assert [i.id for i in items] == ["ro-0", "ro-1"]


# -- restrictions, widening and the caller's ctx ----------------------------------------


def _simple_index() -> VectorStoreIndex:
    return VectorStoreIndex(_nodes())


def _chroma_index() -> VectorStoreIndex:
    import chromadb
    from llama_index.core import StorageContext
    from llama_index.vector_stores.chroma import ChromaVectorStore

    collection = chromadb.EphemeralClient().create_collection("c" + uuid.uuid4().hex)
    storage = StorageContext.from_defaults(
        vector_store=ChromaVectorStore(chroma_collection=collection)
    )
    return VectorStoreIndex(_nodes(), storage_context=storage)


def _qdrant_index() -> VectorStoreIndex:
    from llama_index.core import StorageContext
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    # A sync client only, as a local set-up usually has: no async path in the store.
    store = QdrantVectorStore(client=QdrantClient(location=":memory:"), collection_name="d")
    nodes = [
        TextNode(
            id_=str(uuid.uuid5(uuid.NAMESPACE_URL, n.node_id)),
            text=n.get_content(),
            metadata=dict(n.metadata),
        )
        for n in _nodes()
    ]
    storage = StorageContext.from_defaults(vector_store=store)
    return VectorStoreIndex(nodes, storage_context=storage)


@pytest.mark.parametrize(
    "make", [_simple_index, _chroma_index, _qdrant_index], ids=["simple", "chroma", "qdrant"]
)
async def test_an_index_retriever_over_a_real_store_pushes_where_and_keeps_k(make: Any) -> None:
    mem = LlamaIndexMemory(make().as_retriever(similarity_top_k=1), name="docs")
    items = await mem.query("refund policy", k=3, ctx=Ctx())
    assert len(items) == 3 and all(type(i.score) is float for i in items)
    got = await mem.query("refund policy", k=5, ctx=Ctx(), where={"tenant": "globex"})
    assert sorted(i.content for i in got) == [
        "globex refund policy is store credit only",
        "globex ships overnight",
    ]
    assert await mem.query("refund", k=5, ctx=Ctx(), where={"tenant": "initech"}) == []


async def _async_qdrant_index() -> VectorStoreIndex:
    """An index over a Qdrant store built with an async client only: no sync path."""
    from llama_index.core import StorageContext
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import AsyncQdrantClient

    store = QdrantVectorStore(aclient=AsyncQdrantClient(location=":memory:"), collection_name="d")
    index = VectorStoreIndex(
        [], storage_context=StorageContext.from_defaults(vector_store=store), use_async=True
    )
    await index.ainsert_nodes(
        [
            TextNode(
                id_=str(uuid.uuid5(uuid.NAMESPACE_URL, n.node_id)),
                text=n.get_content(),
                metadata=dict(n.metadata),
            )
            for n in _nodes()
        ]
    )
    return index


async def test_an_async_only_qdrant_store_is_queried_on_its_async_path() -> None:
    index = await _async_qdrant_index()
    with pytest.raises(AttributeError, match="query_points"):  # the store's sync path
        index.as_retriever().retrieve("refund")
    by_index = LlamaIndexMemory(index)  # the store is seen: async from the first query
    given = LlamaIndexMemory(index.as_retriever(similarity_top_k=1))  # the store is hidden
    for mem in (by_index, given, given):
        items = await mem.query("refund policy", k=3, ctx=Ctx())
        assert len(items) == 3 and all(type(i.score) is float for i in items)
        got = await mem.query("refund policy", k=5, ctx=Ctx(), where={"tenant": "globex"})
        assert sorted(i.content for i in got) == [
            "globex refund policy is store credit only",
            "globex ships overnight",
        ]


async def test_a_store_failing_both_ways_reports_its_own_error() -> None:
    """A retriever whose store fails on both paths: the retry on the async path never
    hides the error of the path that was asked first."""
    from llama_index.core import StorageContext
    from llama_index.core.vector_stores import SimpleVectorStore

    class Down(SimpleVectorStore):
        def query(self, query: Any, **kwargs: Any) -> Any:
            raise ConnectionError("sync: store is down")

        async def aquery(self, query: Any, **kwargs: Any) -> Any:
            raise ConnectionError("async: store is down")

    storage = StorageContext.from_defaults(vector_store=Down())
    index = VectorStoreIndex(_nodes(), storage_context=storage)
    mem = LlamaIndexMemory(index.as_retriever())
    with pytest.raises(ConnectionError, match="sync: store is down"):
        await mem.query("refund", k=2, ctx=Ctx())


async def test_a_retriever_restricted_to_node_ids_is_never_widened() -> None:
    from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever

    index = _simple_index()  # a store that applies node_ids in its query
    only = VectorIndexRetriever(index, node_ids=["d3", "d5"], similarity_top_k=1)
    mem = LlamaIndexMemory(only)
    assert {i.id for i in await mem.query("refund policy", k=5, ctx=Ctx())} == {"d3", "d5"}
    got = await mem.query("ships", k=5, ctx=Ctx(), where={"tenant": "globex"})
    assert [i.id for i in got] == ["d5"]
    index.insert_nodes([TextNode(id_="late", text="refund policy update")])
    assert {i.id for i in await mem.query("refund policy", k=5, ctx=Ctx())} == {"d3", "d5"}


# Chroma ignores node_ids in its query: from_index's re-check still holds them.
@pytest.mark.parametrize("make", [_simple_index, _chroma_index], ids=["simple", "chroma"])
async def test_from_index_node_ids_are_never_widened(make: Any) -> None:
    index = make()
    mem = LlamaIndexMemory.from_index(index, node_ids=["d3", "d5"])
    assert {i.id for i in await mem.query("refund policy", k=5, ctx=Ctx())} == {"d3", "d5"}
    got = await mem.query("ships", k=5, ctx=Ctx(), where={"tenant": "globex"})
    assert [i.id for i in got] == ["d5"]
    assert await mem.query("refund", k=5, ctx=Ctx(), where={"tenant": "initech"}) == []
    # later inserts stay outside the user's list
    index.insert_nodes([TextNode(id_="late", text="refund policy update")])
    assert {i.id for i in await mem.query("refund policy", k=5, ctx=Ctx())} == {"d3", "d5"}


async def test_a_retrievers_own_filters_are_anded_with_where() -> None:
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

    index = VectorStoreIndex(
        [
            *_nodes(),
            TextNode(id_="d6", text="globex refund form", metadata={"tenant": "globex", "k": "f"}),
        ]
    )
    globex_only = index.as_retriever(
        filters=MetadataFilters(filters=[MetadataFilter(key="tenant", value="globex")])
    )
    mem = LlamaIndexMemory(globex_only)
    assert {i.id for i in await mem.query("refund", k=5, ctx=Ctx())} == {"d4", "d5", "d6"}
    assert [i.id for i in await mem.query("refund", k=5, ctx=Ctx(), where={"k": "f"})] == ["d6"]
    # where cannot lift the retriever's own filter
    assert await mem.query("refund", k=5, ctx=Ctx(), where={"tenant": "acme"}) == []


async def test_from_index_ands_where_onto_its_filters_in_the_store_query() -> None:
    from llama_index.core import StorageContext
    from llama_index.core.vector_stores import SimpleVectorStore
    from llama_index.core.vector_stores.types import (
        MetadataFilter,
        MetadataFilters,
        VectorStoreQuery,
        VectorStoreQueryResult,
    )

    asked: list[tuple[int, list[str]]] = []

    class Seen(SimpleVectorStore):
        def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
            keys = [f.key for f in (query.filters.filters if query.filters else [])]
            asked.append((query.similarity_top_k, sorted(keys)))  # type: ignore[misc]
            return super().query(query, **kwargs)

    acme = {"tenant": "acme"}
    crowd = [TextNode(id_=f"a{i}", text=f"refund {i}", metadata=dict(acme)) for i in range(30)]
    index = VectorStoreIndex(
        [*crowd, TextNode(id_="g", text="refund form", metadata={"tenant": "globex", "k": "f"})],
        storage_context=StorageContext.from_defaults(vector_store=Seen()),
    )
    globex = MetadataFilters(filters=[MetadataFilter(key="tenant", value="globex")])
    mem = LlamaIndexMemory.from_index(index, filters=globex)
    assert [i.id for i in await mem.query("refund", k=2, ctx=Ctx(), where={"k": "f"})] == ["g"]
    assert asked == [(2, ["k", "tenant"])]  # one pass, both conditions in the store's query
    assert await mem.query("refund", k=2, ctx=Ctx(), where={"tenant": "acme"}) == []
    assert (await mem.query("refund", k=1, ctx=Ctx()))[0].id == "g"


def test_from_index_refuses_what_it_cannot_honour() -> None:
    index = _simple_index()
    with pytest.raises(ValueError, match="similarity_top_k"):
        LlamaIndexMemory.from_index(index, similarity_top_k=3)
    with pytest.raises(ValueError, match="alhpa"):
        LlamaIndexMemory.from_index(index, alhpa=0.5)  # a typo is not silently ignored
    with pytest.raises(ValueError):
        LlamaIndexMemory.from_index(index, vector_store_query_mode="no-such-mode")
    hybrid = LlamaIndexMemory.from_index(index, alpha=0.5, vector_store_kwargs={})
    assert hybrid.retriever.similarity_top_k == 2  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="node_ids"):
        LlamaIndexMemory.from_index(index, node_ids="d1")
    with pytest.raises(TypeError, match="filters"):
        LlamaIndexMemory.from_index(index, filters={"tenant": "acme"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LlamaIndexMemory.from_index(object())  # type: ignore[arg-type]


async def test_where_on_a_store_that_cannot_filter_widens_instead_of_coming_back_short() -> None:
    import faiss
    from llama_index.core import StorageContext
    from llama_index.vector_stores.faiss import FaissVectorStore

    store = FaissVectorStore(faiss_index=faiss.IndexFlatL2(256))
    crowd = [
        TextNode(id_=f"a{i}", text=f"refund policy note {i}", metadata={"tenant": "acme"})
        for i in range(40)
    ]
    index = VectorStoreIndex(
        [*crowd, TextNode(id_="g", text="store credit", metadata={"tenant": "globex"})],
        storage_context=StorageContext.from_defaults(vector_store=store),
    )
    mem = LlamaIndexMemory(index.as_retriever(similarity_top_k=2))
    items = await mem.query("refund policy", k=2, ctx=Ctx(), where={"tenant": "globex"})
    assert [i.id for i in items] == ["g"]
    assert len(await mem.query("refund policy", k=3, ctx=Ctx())) == 3


class Recording:
    """A memory that notes what each query was asked with."""

    name = "rec"

    def __init__(self) -> None:
        self.calls: list[tuple[Ctx, int, dict[str, Any] | None]] = []

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        self.calls.append((ctx, k, where))
        tenant = ctx.scope.org_id or "nobody"
        return [
            MemoryItem(f"{tenant} fact {i}", "rec", 1 - i / 10, id=f"{tenant}-{i}")
            for i in range(k)
        ]

    async def write(self, items: object, *, ctx: Ctx) -> None:
        return None


async def test_a_nested_agentkit_retriever_runs_with_the_callers_ctx() -> None:
    from agentkit_llamaindex import AgentkitRetriever

    rec = Recording()
    bound_elsewhere = Ctx(Scope("globex", "kb"))
    inner = AgentkitRetriever(rec, k=2, where={"lang": "en"}, ctx=bound_elsewhere)
    mem = LlamaIndexMemory(inner, name="outer")
    caller = Ctx(Scope("acme", "kb"))
    items = await mem.query("q", k=3, ctx=caller, where={"tier": 1})
    ctx, k, where = rec.calls[-1]
    assert ctx is caller  # the caller's very object: tenant and timeline
    assert k == 3 and where == {"lang": "en", "tier": 1}
    assert [i.id for i in items] == []  # the re-check still applies the caller's where
    items = await mem.query("q", k=3, ctx=caller)
    assert [i.id for i in items] == ["acme-0", "acme-1", "acme-2"]
    assert inner.ctx is bound_elsewhere and inner.k == 2  # the user's retriever is untouched


async def test_tenants_reach_their_own_records_through_a_nested_stack_on_chroma() -> None:
    import chromadb
    from agentkit_llamaindex import AgentkitRetriever, LlamaIndexVectorPort
    from llama_index.vector_stores.chroma import ChromaVectorStore

    collection = chromadb.EphemeralClient().create_collection("c" + uuid.uuid4().hex)
    port = LlamaIndexVectorPort.from_vector_store(ChromaVectorStore(chroma_collection=collection))
    kb = VectorMemory(port, name="kb")
    acme, globex = Ctx(Scope("acme", "kb")), Ctx(Scope("globex", "kb"))
    await kb.write([MemoryItem("acme refund window is 30 days", "kb", id="r")], ctx=acme)
    await kb.write([MemoryItem("globex refund window is 90 days", "kb", id="r")], ctx=globex)
    outer = CompositeMemory([LlamaIndexMemory(AgentkitRetriever(kb), name="nested")])
    [a] = await outer.query("refund window", k=3, ctx=acme)
    [g] = await outer.query("refund window", k=3, ctx=globex)
    assert (a.id, a.content) == ("r", "acme refund window is 30 days")
    assert (g.id, g.content) == ("r", "globex refund window is 90 days")
    assert await outer.query("refund window", k=3, ctx=Ctx()) == []


async def test_an_ordering_on_the_simple_store_is_answered_whatever_the_values() -> None:
    """The simple store's filter raises on an ordering against a value of another type,
    mid-retrieve; LlamaIndexMemory leaves its orderings to the re-check, so a where
    with $gte answers exactly (a string year or a bool never matches 2020)."""
    nodes = [
        TextNode(id_="n1", text="ledger one", metadata={"year": 2021}),
        TextNode(id_="n2", text="ledger two", metadata={"year": "2022"}),
        TextNode(id_="n3", text="ledger three", metadata={"year": 2019}),
        TextNode(id_="n4", text="ledger four", metadata={"year": True}),
        TextNode(id_="n5", text="ledger five", metadata={"year": 2020.0}),
    ]
    mem = LlamaIndexMemory(VectorStoreIndex(nodes), name="docs")
    where = {"year": {"$gte": 1, "$lt": 2021.5}}
    items = await mem.query("ledger", k=10, ctx=Ctx(), where=where)
    assert {i.id for i in items} == {"n1", "n3", "n5"}
    assert len(await mem.query("ledger", k=2, ctx=Ctx(), where=where)) == 2
