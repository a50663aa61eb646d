"""LangChainMemory: existing LangChain retrievers as agentkit MemorySources."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

os.environ["ANONYMIZED_TELEMETRY"] = "False"  # read when chromadb builds its settings

import chromadb
import faiss
import pytest
from agentkit_langchain import (
    AgentkitEmbeddings,
    AgentkitRetriever,
    LangChainMemory,
    LangChainVectorPort,
)
from langchain_chroma import Chroma
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_qdrant import QdrantVectorStore
from qdrant_client import QdrantClient, models
from rank_bm25 import BM25Okapi

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import CompositeMemory, MemoryItem
from agentkit.vector import Chunk, HashingEmbedder

TEXTS = [
    ("the cat sat on the mat", "en"),
    ("der hund schlief im garten", "de"),
    ("a cat chased the mouse", "en"),
    ("die katze jagt die maus", "de"),
    ("the dog barked at the cat", "en"),
    ("cats and dogs living together", "en"),
    ("le chat dort sur le lit", "fr"),
    ("the mouse ate the cheese", "en"),
]


def _stamped(org: str) -> dict[str, str]:
    return {"agentkit_org_id": org, "agentkit_domain_id": "d", "agentkit_chunk_id": "1"}


def _docs() -> list[Document]:
    return [
        Document(page_content=t, metadata={"lang": lang, "n": i}, id=f"d{i}")
        for i, (t, lang) in enumerate(TEXTS)
    ]


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(AgentkitEmbeddings(HashingEmbedder()))
    store.add_documents(_docs())
    return store


class BM25Retriever(BaseRetriever):
    """A small, honest BM25 retriever (rank_bm25), written here because the one in
    langchain-classic only re-exports langchain-community's, which we do not use.
    Sync-only, with a ``k`` field like LangChain's own."""

    docs: list[Document]
    k: int = 4

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        bm25 = BM25Okapi([d.page_content.lower().split() for d in self.docs])
        scores = bm25.get_scores(query.lower().split())
        order = sorted(range(len(self.docs)), key=lambda i: -scores[i])
        return [self.docs[i] for i in order[: self.k]]


class Sleepy(BaseRetriever):
    """A sync-only retriever with latency; records when it ran."""

    label: str
    delay: float = 0.3
    spans: Any  # Any: pydantic would copy a list, and we read this one back

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        start = time.monotonic()
        time.sleep(self.delay)
        self.spans.append((start, time.monotonic()))
        return [Document(page_content=f"{self.label}: {query} {i}") for i in range(5)]


async def test_vectorstore_retriever_gets_k_pushed_down_without_mutation() -> None:
    retriever = _store().as_retriever()
    mem = LangChainMemory(retriever)
    items = await mem.query("cat", k=7, ctx=Ctx())
    assert len(items) == 7
    assert retriever.search_kwargs == {}  # the user's retriever is untouched
    assert all(i.source == "langchain" and i.id for i in items)
    assert len(await mem.query("cat", k=2, ctx=Ctx())) == 2


async def test_where_is_pushed_down_and_rechecked() -> None:
    mem = LangChainMemory(_store().as_retriever(search_kwargs={"k": 1}), name="docs")
    items = await mem.query("cat", k=3, ctx=Ctx(), where={"lang": "de"})
    assert len(items) == 2 and {i.metadata["lang"] for i in items} == {"de"}
    items = await mem.query("cat", k=8, ctx=Ctx(), where={"lang": ["de", "fr"]})
    assert {i.metadata["lang"] for i in items} == {"de", "fr"} and len(items) == 3


async def test_a_retriever_that_cannot_filter_is_still_filtered() -> None:
    mem = LangChainMemory(BM25Retriever(docs=_docs()))
    items = await mem.query("cat", k=3, ctx=Ctx(), where={"lang": "en"})
    assert items and all(i.metadata["lang"] == "en" for i in items)


async def test_bm25_k_is_pushed_down_on_a_copy() -> None:
    bm25 = BM25Retriever(docs=_docs(), k=2)
    mem = LangChainMemory(bm25, name="bm25")
    items = await mem.query("cat mouse", k=6, ctx=Ctx())
    assert len(items) == 6 and bm25.k == 2
    assert items[0].source == "bm25"


async def test_result_is_cut_to_k_when_nothing_can_be_pushed() -> None:
    mem = LangChainMemory(Sleepy(label="s", delay=0, spans=[]))
    assert len(await mem.query("q", k=2, ctx=Ctx())) == 2


async def test_bad_arguments_raise_before_the_retriever_runs() -> None:
    spans: list[tuple[float, float]] = []
    mem = LangChainMemory(Sleepy(label="s", delay=0, spans=spans))
    for kwargs in ({"k": 0}, {"k": "2"}, {"where": "x"}):
        with pytest.raises((TypeError, ValueError)):
            await mem.query("q", ctx=Ctx(), **{"k": 2, **kwargs})
    with pytest.raises(TypeError):
        await mem.query(3, k=2, ctx=Ctx())  # type: ignore[arg-type]
    assert spans == []
    with pytest.raises(TypeError):
        LangChainMemory(object())


async def test_read_only_adapter() -> None:
    mem = LangChainMemory(BM25Retriever(docs=_docs()))
    assert mem.accepts_writes is False
    await mem.write([MemoryItem("x", "y")], ctx=Ctx())  # a no-op, not an error


async def test_sync_only_retrievers_fan_out_concurrently_in_a_composite() -> None:
    """Eight sync-only retrievers (more than the default pool's 6 threads here)
    plus a vector store and BM25: every sleep overlaps every other."""
    spans: list[tuple[float, float]] = []
    sleepers = [Sleepy(label=f"s{i}", spans=spans) for i in range(8)]
    sources: list[Any] = [LangChainMemory(s, name=s.label) for s in sleepers]
    sources += [
        LangChainMemory(_store().as_retriever(), name="vector"),
        LangChainMemory(BM25Retriever(docs=_docs()), name="bm25"),
    ]
    mem = CompositeMemory(sources, dedupe=None)
    items = await mem.query("cat", k=50, ctx=Ctx())
    assert {i.source for i in items} >= {"vector", "bm25", "s0", "s7"}
    assert len(spans) == 8
    assert max(s for s, _ in spans) < min(e for _, e in spans)  # all ran at once


async def test_sync_only_retriever_does_not_block_the_event_loop() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    await LangChainMemory(Sleepy(label="s", delay=0.3, spans=[])).query("q", k=1, ctx=Ctx())
    task.cancel()
    assert ticks >= 5  # a blocked loop would tick 0 times; load may slow the rest


async def test_documents_stamped_for_another_tenant_are_never_returned() -> None:
    docs = [
        Document(page_content="shared cat", metadata={}),
        Document(
            page_content="acme cat",
            metadata=_stamped("acme"),
        ),
        Document(
            page_content="evil cat",
            metadata=_stamped("evil"),
        ),
    ]
    mem = LangChainMemory(BM25Retriever(docs=docs, k=3))
    acme = await mem.query("cat", k=3, ctx=Ctx(Scope("acme", "d")))
    # Unstamped documents are the retriever's shared corpus; stamped ones are private.
    assert sorted((i.content, i.id) for i in acme) == [("acme cat", "1"), ("shared cat", None)]
    assert all("agentkit_org_id" not in i.metadata for i in acme)
    assert [i.content for i in await mem.query("cat", k=3, ctx=Ctx())] == ["shared cat"]


async def test_nested_agentkit_retriever_keeps_tenant_k_and_where() -> None:
    seen: list[tuple[Scope, int, Any]] = []

    class Inner:
        name = "inner"

        async def query(
            self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
        ) -> list[MemoryItem]:
            seen.append((ctx.scope, k, where))
            return [MemoryItem(f"x{i}", "inner", metadata={"t": 1}) for i in range(10)][:k]

        async def write(self, items: Any, *, ctx: Ctx) -> None:
            return None

    mem = LangChainMemory(AgentkitRetriever(memory=Inner(), k=1))
    items = await mem.query("q", k=3, ctx=Ctx(Scope("o", "d")), where={"t": 1})
    assert seen == [(Scope("o", "d"), 3, {"t": 1})]
    assert [i.source for i in items] == ["inner"] * 3  # the inner stamp wins


async def test_threads_used_are_the_bridge_pool() -> None:
    names: list[str] = []

    class Where(BaseRetriever):
        def _get_relevant_documents(self, query: str) -> list[Document]:  # old-style signature
            names.append(threading.current_thread().name)
            return [Document(page_content="x")]

    assert len(await LangChainMemory(Where()).query("q", k=1, ctx=Ctx())) == 1
    assert names[0].startswith("agentkit-interop")


# --- real vector stores behind a VectorStoreRetriever ------------------------------------

_CLIENT: list[Any] = []


def _real(kind: str) -> VectorStore:
    emb = AgentkitEmbeddings(HashingEmbedder(dim=64))
    if kind == "in_memory":
        return InMemoryVectorStore(emb)
    if kind == "chroma":
        if not _CLIENT:
            _CLIENT.append(chromadb.EphemeralClient())
        return Chroma(collection_name="m" + uuid.uuid4().hex, client=_CLIENT[0],
                      embedding_function=emb)
    if kind == "qdrant":
        client = QdrantClient(":memory:")
        client.create_collection(
            "docs", vectors_config=models.VectorParams(size=64, distance=models.Distance.COSINE)
        )
        return QdrantVectorStore(client=client, collection_name="docs", embedding=emb)
    return FAISS(embedding_function=emb, index=faiss.IndexFlatL2(64),
                 docstore=InMemoryDocstore(), index_to_docstore_id={})


@pytest.fixture(params=["in_memory", "chroma", "qdrant", "faiss"])
def real_store(request: pytest.FixtureRequest) -> Iterator[VectorStore]:
    store = _real(request.param)
    # 40 English notes that all outrank the one German note for the query.
    docs = [
        Document(f"quarterly cat report {i}", metadata={"lang": "en", "n": i}) for i in range(40)
    ]
    docs.append(Document("a note about a cat", metadata={"lang": "de", "n": 99}))
    store.add_documents(docs, ids=[str(uuid.uuid4()) for _ in docs])
    yield store
    if isinstance(store, QdrantVectorStore):
        store.client.close()


def _searches(store: VectorStore) -> list[dict[str, Any]]:
    """The kwargs of every search the retriever runs on ``store``."""
    calls: list[dict[str, Any]] = []
    sync, run = store.similarity_search, store.asimilarity_search
    inside = contextvars.ContextVar("inside", default=False)  # async that calls sync: once

    def counted(*args: Any, **kwargs: Any) -> Any:
        if not inside.get():
            calls.append(kwargs)
        return sync(*args, **kwargs)

    async def acounted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        inside.set(True)
        return await run(*args, **kwargs)

    store.similarity_search = counted  # type: ignore[method-assign]
    store.asimilarity_search = acounted  # type: ignore[method-assign]
    return calls


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


async def test_a_lower_ranked_match_comes_back_on_every_store(real_store: VectorStore) -> None:
    mem = LangChainMemory(real_store.as_retriever())
    items = await mem.query("quarterly cat report", k=2, ctx=Ctx(), where={"lang": "de"})
    assert [i.content for i in items] == ["a note about a cat"]
    en = await mem.query("quarterly cat report", k=3, ctx=Ctx(), where={"lang": ["en"], "n": 7})
    assert [i.metadata["n"] for i in en] == [7]
    calls = _searches(real_store)
    en = await mem.query("quarterly cat report", k=3, ctx=Ctx(), where={"lang": "en"})
    assert len(en) == 3 and all(i.metadata["lang"] == "en" for i in en)
    assert len(calls) == 1 and calls[0]["filter"] is not None  # pushed down: one pass


async def test_the_retrievers_own_filter_is_never_widened(real_store: VectorStore) -> None:
    own = {
        "in_memory": lambda doc: doc.metadata["lang"] == "en",
        "chroma": {"lang": "en"},
        "faiss": {"lang": "en"},
        "qdrant": models.Filter(
            must=[models.FieldCondition(key="metadata.lang", match=models.MatchValue(value="en"))]
        ),
    }[_kind(real_store)]
    retriever = real_store.as_retriever(search_kwargs={"filter": own, "k": 2})
    mem = LangChainMemory(retriever)
    assert await mem.query("a note about a cat", k=3, ctx=Ctx(), where={"lang": "de"}) == []
    items = await mem.query("a note about a cat", k=3, ctx=Ctx(), where={"n": [5, 6, 99]})
    assert sorted(i.metadata["n"] for i in items) == [5, 6]
    assert retriever.search_kwargs == {"filter": own, "k": 2}  # the user's, untouched


async def test_other_tenants_records_crowding_the_top_do_not_cut_k(
    real_store: VectorStore,
) -> None:
    port = LangChainVectorPort(real_store)
    await port.upsert(
        [Chunk(f"e{i}", "quarterly cat report") for i in range(60)], scope=Scope("evil", "d")
    )
    mem = LangChainMemory(real_store.as_retriever())
    # The 60 exact matches are evil's: acme still gets k of the shared corpus.
    items = await mem.query("quarterly cat report", k=5, ctx=Ctx(Scope("acme", "d")))
    assert len(items) == 5 and all(i.metadata.get("lang") == "en" for i in items)
    evil = await mem.query("quarterly cat report", k=3, ctx=Ctx(Scope("evil", "d")))
    assert len(evil) == 3
    assert all(i.id in {f"e{n}" for n in range(60)} and "lang" not in i.metadata for i in evil)


def _kind(store: VectorStore) -> str:
    return {
        InMemoryVectorStore: "in_memory",
        Chroma: "chroma",
        QdrantVectorStore: "qdrant",
        FAISS: "faiss",
    }[type(store)]


async def test_the_callers_own_ctx_reaches_a_nested_agentkit_retriever() -> None:
    seen: list[Ctx] = []

    class Inner:
        name = "inner"

        async def query(
            self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
        ) -> list[MemoryItem]:
            seen.append(ctx)
            ctx.observe("inner.ran")
            return [MemoryItem("x", "inner")]

        async def write(self, items: Any, *, ctx: Ctx) -> None:
            return None

    ctx = Ctx(Scope("o", "d"))
    await LangChainMemory(AgentkitRetriever(memory=Inner())).query("q", k=1, ctx=ctx)
    assert seen == [ctx] and seen[0] is ctx
    assert ctx.timeline.of("inner.ran")


async def test_a_short_answer_from_chroma_is_checked_exactly() -> None:
    """Chroma's filtered walk is approximate; the miss is injected (it is not
    deterministic in Chroma itself), the exact metadata read finds what it skipped."""
    store = _real("chroma")
    store.add_documents(
        [Document(f"cat note {i}", metadata={"lang": "de"}) for i in range(3)],
        ids=["a", "b", "c"],
    )
    walk = store.similarity_search

    def lossy(query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        found = walk(query, k=k, **kwargs)
        return found[:1] if kwargs.get("filter") else found

    store.similarity_search = lossy  # type: ignore[method-assign]
    mem = LangChainMemory(store.as_retriever())
    items = await mem.query("cat note", k=3, ctx=Ctx(), where={"lang": "de"})
    assert sorted(i.id or "" for i in items) == ["a", "b", "c"]
