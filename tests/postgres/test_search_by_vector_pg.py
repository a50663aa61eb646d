"""PostgresVectorStore.search_by_vector: a vector of the wrong width is refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.vector import Chunk
from agentkit.vector.postgres import PostgresVectorStore

ACME = Scope("acme", "support")
DOCS = [
    Chunk("a", "apples and pears grow on trees", {"kind": "fruit"}),
    Chunk("b", "cars and trucks drive on roads", {"kind": "vehicle"}),
    Chunk("c", "pears are sweeter than apples", {"kind": "fruit"}),
]


async def test_by_vector_refuses_a_vector_of_the_wrong_width(store: PostgresVectorStore) -> None:
    """Ranking, filters and scopes are agentkit.testing's VectorPortTests (test_kit_pg.py)."""
    await store.upsert(DOCS, scope=ACME)
    with pytest.raises(InvalidArgument, match="64"):
        await store.search_by_vector(np.ones(3, dtype=np.float32), k=1, scope=ACME)
