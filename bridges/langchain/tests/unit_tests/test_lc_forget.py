"""Forgetting through LangChainVectorPort: VectorMemory.forget over it, and a clear
refusal where the store cannot list. Exact counts, one tenant only, on InMemoryVectorStore,
Chroma, Qdrant and FAISS are agentkit.testing's VectorPortTests, run on every pair in
tests/interop/test_port_contract.py."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any

os.environ["ANONYMIZED_TELEMETRY"] = "False"  # read when chromadb builds its settings

import chromadb
import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import UnsupportedOperation
from agentkit.state.memory import VectorMemory
from agentkit.vector import Chunk, HashingEmbedder

DIM = 64
ACME = Scope("acme", "kb")
GLOBEX = Scope("globex", "kb")


def _embeddings() -> AgentkitEmbeddings:
    return AgentkitEmbeddings(HashingEmbedder(dim=DIM))


def _chroma() -> VectorStore:
    return Chroma(collection_name="f" + uuid.uuid4().hex, client=chromadb.EphemeralClient(),
                  embedding_function=_embeddings())


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
