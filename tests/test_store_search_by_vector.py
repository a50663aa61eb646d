"""search_by_vector and get on the embedded stores: what the framework adapters build on.

LangChain's ``similarity_search_by_vector`` and LlamaIndex's ``query_embedding`` hand the
store a vector instead of text; it must rank exactly as ``search`` ranks the same text,
inside the caller's scope only, and refuse a vector of the wrong width.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")
DOCS = [
    Chunk("a", "apples and pears grow on trees", {"kind": "fruit"}),
    Chunk("b", "cars and trucks drive on roads", {"kind": "vehicle"}),
    Chunk("c", "pears are sweeter than apples", {"kind": "fruit"}),
]


@pytest.fixture(params=["memory", "sqlite"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[InMemoryVectorStore | SQLiteVectorStore]:
    embedder = HashingEmbedder(dim=64)
    made: InMemoryVectorStore | SQLiteVectorStore
    if request.param == "memory":
        made = InMemoryVectorStore(embedder)
    else:
        made = SQLiteVectorStore(tmp_path / "s.db", embedder=embedder)
    await made.upsert(DOCS, scope=ACME)
    yield made
    await made.close()


async def test_by_vector_refuses_wrong_width(
    store: InMemoryVectorStore | SQLiteVectorStore,
) -> None:
    with pytest.raises(InvalidArgument, match="64"):
        await store.search_by_vector(np.ones(3, dtype=np.float32), k=1, scope=ACME)
    with pytest.raises(InvalidArgument, match="NaN"):
        await store.search_by_vector(np.full(64, np.nan), k=1, scope=ACME)


async def test_get_keeps_order_skips_missing_and_scope(
    store: InMemoryVectorStore | SQLiteVectorStore,
) -> None:
    got = await store.get(["c", "missing", "a"], scope=ACME)
    assert got == [DOCS[2], DOCS[0]]
    assert await store.get(["a"], scope=GLOBEX) == []
