"""``exact=True`` on PostgreSQL means what it means on SQLite: every row of the scope is
compared with the query (no HNSW index scan), so the answer is the exact top k."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder
from agentkit.vector.postgres import PostgresVectorStore

ACME = Scope("acme", "support")


def texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)]
    return [" ".join(rng.choice(words, size=8)) for _ in range(n)]


async def test_exact_search_is_the_true_top_k_and_skips_the_index(
    make_store: Callable[..., PostgresVectorStore], embedder: HashingEmbedder
) -> None:
    # A deliberately poor graph: what exact returns must not depend on it.
    store = make_store(hnsw_m=2, hnsw_ef_construction=4)
    docs = texts(1500, seed=1)
    await store.upsert([Chunk(f"d{i}", t) for i, t in enumerate(docs)], scope=ACME)
    vectors: npt.NDArray[np.float32] = embedder.embed_sync(docs)
    for q in embedder.embed_sync(texts(5, seed=2)):
        scores = vectors @ q
        want = sorted(range(len(docs)), key=lambda i: (-scores[i], f"d{i}"))[:10]
        got = await store.search_by_vector(q, k=10, scope=ACME, exact=True)
        assert [s for s, _ in got] == pytest.approx([scores[i] for i in want], abs=1e-5)
        assert {c.id for _, c in got} >= {f"d{i}" for i in want if scores[i] > scores[want[-1]]}
    with pytest.raises(TypeError, match="exact"):
        await store.search_by_vector(q, k=3, scope=ACME, exact=1)  # type: ignore[arg-type]
