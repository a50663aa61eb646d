"""Forgetting through LlamaIndexVectorPort: exact counts, one tenant only, on the simple
store (no text kept: the index's map is listed) and on Chroma (the store lists)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import chromadb
import pytest
from agentkit_llamaindex import LlamaIndexVectorPort
from llama_index.core import VectorStoreIndex
from llama_index.vector_stores.chroma import ChromaVectorStore

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.state.memory import VectorMemory
from agentkit.vector import Chunk

ACME = Scope("acme", "kb")
GLOBEX = Scope("globex", "kb")


def _simple() -> LlamaIndexVectorPort:
    return LlamaIndexVectorPort(VectorStoreIndex([]))


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


@pytest.mark.parametrize("make", [_simple, _chroma], ids=["simple", "chroma"])
async def test_delete_where_and_scope_count_exactly(
    make: Callable[[], LlamaIndexVectorPort],
) -> None:
    port = make()
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
    memory = VectorMemory(_chroma())
    await memory.vector.upsert(corpus(), scope=ACME)
    await memory.vector.upsert(corpus(), scope=GLOBEX)
    assert await memory.forget({"doc": "d0"}, ctx=Ctx(ACME)) == 3
    assert await memory.forget(ctx=Ctx(ACME), all=True) == 6
    assert await memory.query("walrus", k=20, ctx=Ctx(ACME)) == []
    assert len(await memory.query("walrus", k=20, ctx=Ctx(GLOBEX))) == 9
