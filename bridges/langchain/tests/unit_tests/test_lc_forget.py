"""Forgetting through LangChainVectorPort: exact counts, one tenant only, where the store
can list its records (InMemoryVectorStore, Chroma); a clear refusal where it cannot."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

os.environ["ANONYMIZED_TELEMETRY"] = "False"  # read when chromadb builds its settings

import chromadb
import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from langchain_chroma import Chroma
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_qdrant import QdrantVectorStore
from qdrant_client import QdrantClient, models

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, StoreError
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


def corpus() -> list[Chunk]:
    return [
        Chunk(f"c{i}", f"walrus note {i} about tusks", {"doc": f"d{i % 3}", "i": i})
        for i in range(9)
    ]


async def ids(port: LangChainVectorPort, scope: Scope) -> set[str]:
    return {c.id for _, c in await port.search("walrus tusks", k=50, scope=scope)}


@pytest.mark.parametrize("make", [_in_memory, _chroma], ids=["in_memory", "chroma"])
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
    client = QdrantClient(":memory:")
    client.create_collection(
        "docs", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    port = LangChainVectorPort(
        QdrantVectorStore(client=client, collection_name="docs", embedding=_embeddings())
    )
    await port.upsert(corpus(), scope=ACME)
    with pytest.raises(StoreError, match="QdrantVectorStore"):
        await port.delete_scope(scope=ACME)
    assert await port.delete(["c1", "c2"], scope=ACME) == 2  # by ids, with a count
    assert len(await ids(port, ACME)) == 7
