"""The exact pass learns Chroma's distance space from the store's own answers.

langchain_chroma gives no public handle on its collection's configuration, so the
bridge recognises the space from the raw distances the store reports. These tests use
vectors of different lengths, where l2, cosine and inner product each rank the records
differently, so ranking or scoring in the wrong space fails them. Chroma's miss is
injected (its own is not deterministic); the oracle is plain Python.
"""

from __future__ import annotations

import os
import uuid
import zlib
from typing import Any

os.environ["ANONYMIZED_TELEMETRY"] = "False"  # read when chromadb builds its settings

import chromadb
import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainMemory, LangChainVectorPort
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from lc_chroma_oracle import check_top, distances, relevance

from agentkit.kernel import Ctx, Scope
from agentkit.vector import Chunk, HashingEmbedder

pytestmark = pytest.mark.filterwarnings(
    "ignore:Relevance scores must be between:UserWarning",  # Chroma's own l2/ip mapping
    "ignore:legacy embedding function config:DeprecationWarning",
)

QUERY = "quarterly cat report"
TEXTS = {
    **{f"t{i}": f"quarterly cat report {' '.join(['extra'] * i)} note {i}" for i in range(12)},
    **{f"same{i}": "cat report" for i in range(4)},
    **{f"far{i}": f"dog garden {i}" for i in range(6)},
}
_CLIENT: list[Any] = []


class Lengthened(Embeddings):
    """Hashing vectors stretched by a per-text factor (1 to 4): no longer unit length,
    so the three spaces disagree about which records are nearest."""

    def __init__(self) -> None:
        self.inner = AgentkitEmbeddings(HashingEmbedder(dim=64))

    @staticmethod
    def _stretch(text: str, row: list[float]) -> list[float]:
        factor = 1.0 + (zlib.crc32(text.encode()) % 7) / 2.0
        return [factor * x for x in row]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        rows = self.inner.embed_documents(texts)
        return [self._stretch(t, r) for t, r in zip(texts, rows, strict=True)]

    def embed_query(self, text: str) -> list[float]:
        return self._stretch(text, self.inner.embed_query(text))


def _client() -> Any:
    if not _CLIENT:
        _CLIENT.append(chromadb.EphemeralClient())
    return _CLIENT[0]


def _chroma(space: str) -> Chroma:
    return Chroma(
        collection_name="s" + uuid.uuid4().hex,
        client=_client(),
        embedding_function=Lengthened(),
        collection_configuration={"hnsw": {"space": space}},  # type: ignore[arg-type,typeddict-item]
    )


def _oracle(texts: dict[str, str], space: str) -> dict[str, float]:
    return distances(Lengthened(), QUERY, texts, space)


def _check_top(found: list[str], oracle: dict[str, float], k: int) -> None:
    check_top(found, oracle, k, tol=1e-4)  # stretched vectors: float32 error grows with length


def test_the_three_spaces_rank_these_records_differently() -> None:
    """Guards the other tests: with these vectors a wrong space gives a wrong top."""
    tops = {s: sorted(_oracle(TEXTS, s).items(), key=lambda kv: kv[1])[:6] for s in
            ("l2", "cosine", "ip")}
    ids = {s: [rid for rid, _ in top] for s, top in tops.items()}
    assert ids["l2"] != ids["cosine"] != ids["ip"] != ids["l2"]


@pytest.mark.parametrize("space", ["l2", "cosine", "ip"])
async def test_port_ranks_and_scores_in_the_collections_own_space(space: str) -> None:
    store = _chroma(space)
    port = LangChainVectorPort(store)
    await port.upsert([Chunk(rid, t) for rid, t in TEXTS.items()], scope=Scope())
    walk = store.asimilarity_search_with_relevance_scores

    async def short(query: str, k: int = 4, **kwargs: Any) -> Any:
        return (await walk(query, k=k, **kwargs))[:2]

    store.asimilarity_search_with_relevance_scores = short  # type: ignore[method-assign]
    hits = await port.search(QUERY, k=6, scope=Scope())
    oracle = _oracle(TEXTS, space)
    _check_top([c.id for _, c in hits], oracle, 6)
    assert [s for s, _ in hits] == pytest.approx(
        [relevance(oracle[c.id], space) for _, c in hits], abs=1e-4
    )


@pytest.mark.parametrize("space", ["cosine", "ip"])
async def test_memory_ranks_in_the_collections_own_space(space: str) -> None:
    store = _chroma(space)
    store.add_documents([Document(t, id=rid) for rid, t in TEXTS.items()], ids=list(TEXTS))
    walk = store.similarity_search

    def short(query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return walk(query, k=k, **kwargs)[:1]

    store.similarity_search = short  # type: ignore[method-assign]
    items = await LangChainMemory(store.as_retriever()).query(QUERY, k=6, ctx=Ctx())
    _check_top([i.id or "" for i in items], _oracle(TEXTS, space), 6)


async def test_the_users_relevance_function_scores_the_exact_pass() -> None:
    """Chroma(relevance_score_fn=...) is what the store's own relevance search uses."""
    store = Chroma(
        collection_name="s" + uuid.uuid4().hex,
        client=_client(),
        embedding_function=Lengthened(),
        relevance_score_fn=lambda d: -d,
    )
    port = LangChainVectorPort(store)
    await port.upsert([Chunk(rid, t) for rid, t in TEXTS.items()], scope=Scope())
    walk = store.asimilarity_search_with_relevance_scores

    async def short(query: str, k: int = 4, **kwargs: Any) -> Any:
        return (await walk(query, k=k, **kwargs))[:1]

    store.asimilarity_search_with_relevance_scores = short  # type: ignore[method-assign]
    hits = await port.search(QUERY, k=5, scope=Scope())
    oracle = _oracle(TEXTS, "l2")
    _check_top([c.id for _, c in hits], oracle, 5)
    assert [s for s, _ in hits] == pytest.approx([-oracle[c.id] for _, c in hits], abs=1e-4)


async def test_space_is_learnt_even_when_the_walk_reaches_none_of_the_callers_records() -> None:
    """Another tenant's records crowd the graph and the filtered walk finds nothing of
    acme's at all: the space comes from an unfiltered answer, the records and scores
    still from acme's alone."""
    store = _chroma("cosine")
    port = LangChainVectorPort(store)
    await port.upsert([Chunk(f"e{i}", QUERY) for i in range(20)], scope=Scope("evil", "d"))
    await port.upsert([Chunk(rid, t) for rid, t in TEXTS.items()], scope=Scope("acme", "d"))
    by_vector = store.similarity_search_by_vector_with_relevance_scores
    asked: list[Any] = []

    async def nothing(query: str, k: int = 4, **kwargs: Any) -> Any:
        return []

    def unreachable(embedding: list[float], k: int = 4, **kwargs: Any) -> Any:
        asked.append(kwargs.get("filter"))
        return [] if kwargs.get("filter") is not None else by_vector(embedding, k=k, **kwargs)

    store.asimilarity_search_with_relevance_scores = nothing  # type: ignore[method-assign]
    store.similarity_search_by_vector_with_relevance_scores = unreachable  # type: ignore[method-assign]
    hits = await port.search(QUERY, k=6, scope=Scope("acme", "d"))
    oracle = _oracle(TEXTS, "cosine")
    _check_top([c.id for _, c in hits], oracle, 6)
    assert [s for s, _ in hits] == pytest.approx(
        [relevance(oracle[c.id], "cosine") for _, c in hits], abs=1e-4
    )
    assert asked[0] is not None and asked[-1] is None  # the caller's own records first
