"""Forgetting through LlamaIndexVectorPort: VectorMemory.forget over it. Exact counts,
one tenant only, on the simple store, Chroma and Qdrant are agentkit.testing's
VectorPortTests, run on every pair in tests/interop/test_port_contract.py."""

from __future__ import annotations

import uuid

import chromadb
from agentkit_llamaindex import LlamaIndexVectorPort
from llama_index.vector_stores.chroma import ChromaVectorStore

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import VectorMemory
from agentkit.vector import Chunk

ACME = Scope("acme", "kb")
GLOBEX = Scope("globex", "kb")


def _chroma() -> LlamaIndexVectorPort:
    collection = chromadb.EphemeralClient().create_collection("c" + uuid.uuid4().hex)
    return LlamaIndexVectorPort.from_vector_store(ChromaVectorStore(chroma_collection=collection))


def corpus() -> list[Chunk]:
    return [
        Chunk(f"c{i}", f"walrus note {i} about tusks", {"doc": f"d{i % 3}", "i": i})
        for i in range(9)
    ]


async def ids(port: LlamaIndexVectorPort, scope: Scope) -> set[str]:
    return {c.id for _, c in await port.search("walrus tusks", k=50, scope=scope)}


async def test_vector_memory_forgets_through_the_port() -> None:
    memory = VectorMemory(_chroma())
    await memory.vector.upsert(corpus(), scope=ACME)
    await memory.vector.upsert(corpus(), scope=GLOBEX)
    assert await memory.forget({"doc": "d0"}, ctx=Ctx(ACME)) == 3
    assert await memory.forget(ctx=Ctx(ACME), all=True) == 6
    assert await memory.query("walrus", k=20, ctx=Ctx(ACME)) == []
    assert len(await memory.query("walrus", k=20, ctx=Ctx(GLOBEX))) == 9
