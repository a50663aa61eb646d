"""Chroma under-returns (HNSW among identical vectors); both LangChain paths rank exactly.

Chroma's own miss is not deterministic, so it is injected: the store's search returns
only part of its answer, with no filter at all. The expected answer comes from an
oracle computed here in plain Python from the same embeddings, in the collection's
space, so a test can fail on a wrong order, a missing record or a wrong score.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

os.environ["ANONYMIZED_TELEMETRY"] = "False"  # read when chromadb builds its settings

import chromadb
import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainMemory, LangChainVectorPort
from langchain_chroma import Chroma
from langchain_core.documents import Document
from lc_chroma_oracle import check_top, distances, relevance

from agentkit.kernel import Ctx, Scope
from agentkit.vector import Chunk, HashingEmbedder

pytestmark = pytest.mark.filterwarnings(
    "ignore:Relevance scores must be between:UserWarning",  # Chroma's own l2/ip mapping
    "ignore:legacy embedding function config:DeprecationWarning",
)

QUERY = "quarterly cat report"
# Distinct texts at varied distances, plus identical copies (the real-world case).
TEXTS = {
    **{f"t{i}": f"quarterly cat report {' '.join(['extra'] * i)} note {i}" for i in range(12)},
    **{f"same{i}": "cat report" for i in range(6)},
    **{f"far{i}": f"dog garden {i}" for i in range(6)},
}
_CLIENT: list[Any] = []


def _embeddings() -> AgentkitEmbeddings:
    return AgentkitEmbeddings(HashingEmbedder(dim=64))


def _chroma(space: str | None = None) -> Chroma:
    if not _CLIENT:
        _CLIENT.append(chromadb.EphemeralClient())
    config = {"hnsw": {"space": space}} if space else None
    return Chroma(
        collection_name="x" + uuid.uuid4().hex,
        client=_CLIENT[0],
        embedding_function=_embeddings(),
        collection_configuration=config,  # type: ignore[arg-type]
    )


def _oracle(texts: dict[str, str], space: str) -> dict[str, float]:
    return distances(_embeddings(), QUERY, texts, space)


@pytest.mark.parametrize("space", ["l2", "cosine"])
async def test_memory_gets_the_exact_top_k_when_chroma_answers_short_unfiltered(
    space: str,
) -> None:
    store = _chroma(space)
    store.add_documents([Document(t, id=rid) for rid, t in TEXTS.items()], ids=list(TEXTS))
    walk = store.similarity_search
    asked: list[int] = []

    def short(query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        asked.append(k)
        return walk(query, k=k, **kwargs)[:2]  # no filter at all, and still short

    store.similarity_search = short  # type: ignore[method-assign]
    items = await LangChainMemory(store.as_retriever()).query(QUERY, k=8, ctx=Ctx())
    check_top([i.id or "" for i in items], _oracle(TEXTS, space), 8)
    assert asked == [8]  # one store call; the exact pass answered, no widening rounds
    assert [i.content for i in items] == [TEXTS[i.id or ""] for i in items]


@pytest.mark.parametrize("space", ["l2", "cosine", "ip"])
async def test_port_gets_exact_top_k_and_the_stores_own_scores_when_chroma_answers_short(
    space: str,
) -> None:
    store = _chroma(space)
    port = LangChainVectorPort(store)
    await port.upsert([Chunk(rid, t, {"n": 1}) for rid, t in TEXTS.items()], scope=Scope())
    oracle = _oracle(TEXTS, space)
    walk = store.asimilarity_search_with_relevance_scores

    async def short(query: str, k: int = 4, **kwargs: Any) -> Any:
        found = await walk(query, k=k, **kwargs)
        assert "filter" not in kwargs  # unscoped, no where: the plain search
        return found[:3]

    store.asimilarity_search_with_relevance_scores = short  # type: ignore[method-assign]
    hits = await port.search(QUERY, k=10, scope=Scope())
    check_top([c.id for _, c in hits], oracle, 10)
    # The scores are those the store's own relevance search gives for these records.
    assert [s for s, _ in hits] == pytest.approx(
        [relevance(oracle[c.id], space) for _, c in hits], abs=1e-5
    )
    assert all(c.text == TEXTS[c.id] and c.metadata == {"n": 1} for _, c in hits)


async def test_a_complete_short_answer_is_not_re_ranked() -> None:
    """Fewer than asked because the store holds fewer: the store's answer stands."""
    store = _chroma()
    store.add_documents([Document("cat report", id="a"), Document("dog", id="b")], ids=["a", "b"])
    walk = store.asimilarity_search_with_relevance_scores
    answers: list[Any] = []

    async def spy(query: str, k: int = 4, **kwargs: Any) -> Any:
        answers.append(await walk(query, k=k, **kwargs))
        return answers[-1]

    store.asimilarity_search_with_relevance_scores = spy  # type: ignore[method-assign]
    hits = await LangChainVectorPort(store).search(QUERY, k=5, scope=Scope())
    assert [(s, c.id) for s, c in hits] == [(s, d.id) for d, s in answers[0]]
    assert sorted(c.id for _, c in hits) == ["a", "b"]


async def test_the_exact_pass_keeps_tenants_apart_and_scores_match_the_store() -> None:
    """Scoped: another tenant's identical records crowd the walk; acme's exact top-k
    comes from acme's records only, scored as Chroma scores them."""
    store = _chroma()
    port = LangChainVectorPort(store)
    await port.upsert([Chunk(f"e{i}", QUERY) for i in range(60)], scope=Scope("evil", "d"))
    mine = {rid: t for rid, t in TEXTS.items() if not rid.startswith("same")}
    await port.upsert([Chunk(rid, t) for rid, t in mine.items()], scope=Scope("acme", "d"))
    walk = store.asimilarity_search_with_relevance_scores

    async def short(query: str, k: int = 4, **kwargs: Any) -> Any:
        return (await walk(query, k=k, **kwargs))[:1]

    store.asimilarity_search_with_relevance_scores = short  # type: ignore[method-assign]
    hits = await port.search(QUERY, k=6, scope=Scope("acme", "d"))
    oracle = _oracle(mine, "l2")
    check_top([c.id for _, c in hits], oracle, 6)
    assert [s for s, _ in hits] == pytest.approx(
        [relevance(oracle[c.id], "l2") for _, c in hits], abs=1e-5
    )
