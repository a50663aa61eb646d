"""Forgetting through LangChainVectorPort: exact counts, one tenant only, where the store
can list its records (InMemoryVectorStore, Chroma, Qdrant, FAISS); a clear refusal where
it cannot."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any

os.environ["ANONYMIZED_TELEMETRY"] = "False"  # read when chromadb builds its settings

import chromadb
import faiss
import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from langchain_chroma import Chroma
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_qdrant import QdrantVectorStore
from qdrant_client import QdrantClient, models

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, UnsupportedOperation
from agentkit.state.memory import VectorMemory
from agentkit.vector import Chunk, HashingEmbedder

DIM = 64
ACME = Scope("acme", "kb")
GLOBEX = Scope("globex", "kb")


def _embeddings() -> AgentkitEmbeddings:
    return AgentkitEmbeddings(HashingEmbedder(dim=DIM))


def _in_memory() -> VectorStore:
    return InMemoryVectorStore(_embeddings())


def _chroma() -> VectorStore:
    return Chroma(collection_name="f" + uuid.uuid4().hex, client=chromadb.EphemeralClient(),
                  embedding_function=_embeddings())


def _qdrant() -> VectorStore:
    client = QdrantClient(":memory:")
    client.create_collection(
        "docs", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    return QdrantVectorStore(client=client, collection_name="docs", embedding=_embeddings())


def _faiss() -> VectorStore:
    return FAISS(
        embedding_function=_embeddings(),
        index=faiss.IndexFlatL2(DIM),
        docstore=InMemoryDocstore(),
        index_to_docstore_id={},
    )


class Unlistable(VectorStore):
    """A user's own store: it adds, searches, reads by id and deletes, but cannot list."""

    def __init__(self) -> None:
        self.inner = InMemoryVectorStore(_embeddings())

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        return self.inner.add_documents(documents, **kwargs)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return self.inner.similarity_search(query, k, **kwargs)

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return self.inner.similarity_search_with_score(query, k, **kwargs)

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return lambda score: score

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return self.inner.get_by_ids(ids)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        self.inner.delete(ids)
        return True

    @classmethod
    def from_texts(cls, *args: Any, **kwargs: Any) -> Unlistable:
        raise NotImplementedError


def corpus() -> list[Chunk]:
    return [
        Chunk(f"c{i}", f"walrus note {i} about tusks", {"doc": f"d{i % 3}", "i": i})
        for i in range(9)
    ]


async def ids(port: LangChainVectorPort, scope: Scope) -> set[str]:
    return {c.id for _, c in await port.search("walrus tusks", k=50, scope=scope)}


@pytest.mark.parametrize(
    "make", [_in_memory, _chroma, _qdrant, _faiss], ids=["in_memory", "chroma", "qdrant", "faiss"]
)
async def test_delete_where_and_scope_count_exactly(make: Callable[[], VectorStore]) -> None:
    port = LangChainVectorPort(make())
    for scope in (ACME, GLOBEX, Scope()):
        await port.upsert(corpus(), scope=scope)
    assert await port.delete(["c0", "c0", "nope"], scope=ACME) == 1
    assert await port.delete(["c0"], scope=ACME) == 0
    assert await port.delete_where({"doc": "d1"}, scope=ACME) == 3
    assert await port.delete_where({"doc": ["d1", "d2"], "i": [5, 8]}, scope=ACME) == 2
    assert await ids(port, ACME) == {"c2", "c3", "c6"}
    with pytest.raises(InvalidArgument):
        await port.delete_where({}, scope=ACME)
    assert await port.delete_scope(scope=ACME) == 3
    assert await ids(port, ACME) == set()
    assert await ids(port, GLOBEX) == {c.id for c in corpus()}
    assert await port.delete_scope(scope=Scope()) == 9  # the unscoped bucket, alone
    assert len(await ids(port, GLOBEX)) == 9


async def test_vector_memory_forgets_through_the_port() -> None:
    memory = VectorMemory(LangChainVectorPort(_chroma()))
    await memory.vector.upsert(corpus(), scope=ACME)
    await memory.vector.upsert(corpus(), scope=GLOBEX)
    assert await memory.forget({"doc": "d0"}, ctx=Ctx(ACME)) == 3
    assert await memory.forget(ctx=Ctx(ACME), all=True) == 6
    assert await memory.query("walrus", k=20, ctx=Ctx(ACME)) == []
    assert len(await memory.query("walrus", k=20, ctx=Ctx(GLOBEX))) == 9


async def test_a_store_that_cannot_list_is_refused_by_name() -> None:
    port = LangChainVectorPort(Unlistable(), filter_style="in_memory")
    await port.upsert(corpus(), scope=ACME)
    with pytest.raises(UnsupportedOperation, match="cannot delete by where or scope on Unlistable"):
        await port.delete_scope(scope=ACME)
    with pytest.raises(UnsupportedOperation, match="cannot scan on Unlistable"):
        await port.scan(scope=ACME)
    assert await port.delete(["c1", "c2"], scope=ACME) == 2  # by ids, with a count
    assert len(await ids(port, ACME)) == 7
