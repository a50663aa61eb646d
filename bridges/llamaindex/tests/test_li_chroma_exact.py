"""Chroma under-returns (HNSW among identical vectors); the LlamaIndex port ranks exactly.

Chroma's own miss is not deterministic, so it is injected by a ChromaVectorStore
subclass whose query keeps only part of its answer. The expected answer is an oracle
computed here in plain Python from the same embeddings, in the collection's space.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import chromadb
import pytest
from agentkit_llamaindex import AgentkitEmbedding, LlamaIndexMemory, LlamaIndexVectorPort
from llama_index.core import VectorStoreIndex
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult
from llama_index.vector_stores.chroma import ChromaVectorStore
from pydantic import Field

from agentkit.kernel import Ctx, Scope
from agentkit.vector import Chunk, HashingEmbedder

pytestmark = pytest.mark.filterwarnings(
    "ignore:legacy embedding function config:DeprecationWarning",
)

QUERY = "quarterly cat report"
TEXTS = {
    **{f"t{i}": f"quarterly cat report {' '.join(['extra'] * i)} note {i}" for i in range(12)},
    **{f"same{i}": "cat report" for i in range(6)},
    **{f"far{i}": f"dog garden {i}" for i in range(6)},
}
_CLIENT: list[Any] = []


class ShortChroma(ChromaVectorStore):
    """Chroma whose HNSW answer is cut short, as it is on some runs among identical
    vectors; ``asked`` records each query's top-k."""

    keep: int = 2
    asked: list[int] = Field(default_factory=list)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        self.asked.append(query.similarity_top_k)
        full = super().query(query, **kwargs)
        cut = self.keep
        return VectorStoreQueryResult(
            nodes=(full.nodes or [])[:cut],
            similarities=(full.similarities or [])[:cut],
            ids=(full.ids or [])[:cut],
        )


def _embed() -> AgentkitEmbedding:
    return AgentkitEmbedding(HashingEmbedder(dim=64))


def _port(space: str | None = None) -> tuple[LlamaIndexVectorPort, ShortChroma]:
    if not _CLIENT:
        _CLIENT.append(chromadb.EphemeralClient())
    config: Any = {"hnsw": {"space": space}} if space else None
    collection = _CLIENT[0].create_collection("c" + uuid.uuid4().hex, configuration=config)
    store = ShortChroma(chroma_collection=collection)
    index = VectorStoreIndex.from_vector_store(store, embed_model=_embed())
    return LlamaIndexVectorPort(index, embed_model=_embed()), store


def _distance(a: list[float], b: list[float], space: str) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    if space == "l2":
        return sum((x - y) ** 2 for x, y in zip(a, b, strict=True))
    if space == "ip":
        return 1.0 - dot
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - (dot / norms if norms else 0.0)


def _oracle(texts: dict[str, str], space: str) -> dict[str, float]:
    """Every text's distance to QUERY, computed without Chroma or numpy."""
    model = _embed()
    point = model.get_query_embedding(QUERY)
    return {
        rid: _distance(point, model.get_text_embedding(text), space)
        for rid, text in texts.items()
    }


def _check(hits: list[tuple[float, Chunk]], oracle: dict[str, float], k: int) -> None:
    """A correct top ``k`` (ties in any order) with Chroma's similarity, exp(-distance)."""
    assert len(hits) == k
    assert [oracle[c.id] for _, c in hits] == pytest.approx(sorted(oracle.values())[:k], abs=1e-5)
    assert [s for s, _ in hits] == pytest.approx(
        [math.exp(-oracle[c.id]) for _, c in hits], abs=1e-5
    )


@pytest.mark.parametrize("space", ["l2", "cosine", "ip"])
async def test_a_short_unfiltered_answer_is_ranked_exactly_with_chromas_scores(
    space: str,
) -> None:
    port, store = _port(space)
    await port.upsert([Chunk(rid, t, {"n": 1}) for rid, t in TEXTS.items()], scope=Scope())
    hits = await port.search(QUERY, k=9, scope=Scope())
    _check(hits, _oracle(TEXTS, space), 9)
    assert all(c.text == TEXTS[c.id] and c.metadata == {"n": 1} for _, c in hits)
    assert store.asked == [9]  # one store query; the exact pass answered it


async def test_a_scoped_short_answer_is_ranked_among_the_tenants_own_records() -> None:
    port, store = _port()
    await port.upsert([Chunk(f"e{i}", QUERY) for i in range(60)], scope=Scope("evil", "d"))
    mine = {rid: t for rid, t in TEXTS.items() if not rid.startswith("same")}
    await port.upsert([Chunk(rid, t) for rid, t in mine.items()], scope=Scope("acme", "d"))
    store.keep = 1
    hits = await port.search(QUERY, k=6, scope=Scope("acme", "d"))
    _check(hits, _oracle(mine, "l2"), 6)


async def test_a_short_answer_that_holds_every_match_is_kept() -> None:
    port, store = _port()
    await port.upsert([Chunk("a", "cat report"), Chunk("b", "dog")], scope=Scope())
    hits = await port.search(QUERY, k=5, scope=Scope())
    assert sorted(c.id for _, c in hits) == ["a", "b"]
    store.keep = 5
    assert [c.id for _, c in await port.search(QUERY, k=5, scope=Scope())] == [
        c.id for _, c in hits
    ]


@pytest.mark.parametrize("space", ["l2", "cosine"])
async def test_memory_over_a_chroma_index_gets_the_exact_top_k_when_chroma_answers_short(
    space: str,
) -> None:
    port, store = _port(space)
    await port.upsert([Chunk(rid, t) for rid, t in TEXTS.items()], scope=Scope())
    await port.upsert([Chunk(f"e{i}", QUERY) for i in range(30)], scope=Scope("evil", "d"))
    mem = LlamaIndexMemory(port.index)
    items = await mem.query(QUERY, k=8, ctx=Ctx(Scope("acme", "d")))
    oracle = _oracle(TEXTS, space)
    assert [oracle[i.id or ""] for i in items] == pytest.approx(
        sorted(oracle.values())[:8], abs=1e-5
    )
    assert [i.score for i in items] == pytest.approx(
        [math.exp(-oracle[i.id or ""]) for i in items], abs=1e-5
    )
    assert [i.content for i in items] == [TEXTS[i.id or ""] for i in items]
    # evil's 30 exact matches rank first and are dropped: the widening went on past them.
    assert store.asked == [8, 16, 32, 64]
