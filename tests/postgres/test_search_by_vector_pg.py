"""PostgresVectorStore.search_by_vector: the same ranking as search, inside one scope."""

from __future__ import annotations

import numpy as np
import pytest

from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.vector import Chunk
from agentkit.vector.postgres import PostgresVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")
DOCS = [
    Chunk("a", "apples and pears grow on trees", {"kind": "fruit"}),
    Chunk("b", "cars and trucks drive on roads", {"kind": "vehicle"}),
    Chunk("c", "pears are sweeter than apples", {"kind": "fruit"}),
]


async def test_by_vector_matches_search_filters_and_scopes(store: PostgresVectorStore) -> None:
    await store.upsert(DOCS, scope=ACME)
    assert store.embedder is not None
    vector = (await store.embedder.embed(["sweet pears"]))[0]
    by_text = await store.search("sweet pears", k=3, scope=ACME)
    by_vector = await store.search_by_vector(vector * 3.0, k=3, scope=ACME)
    assert [c.id for _, c in by_vector] == [c.id for _, c in by_text]
    assert [s for s, _ in by_vector] == pytest.approx([s for s, _ in by_text], abs=1e-5)
    vehicle = await store.search_by_vector(vector, k=3, scope=ACME, where={"kind": "vehicle"})
    assert [c.id for _, c in vehicle] == ["b"]
    assert await store.search_by_vector(vector, k=3, scope=GLOBEX) == []
    with pytest.raises(InvalidArgument, match="64"):
        await store.search_by_vector(np.ones(3, dtype=np.float32), k=1, scope=ACME)
