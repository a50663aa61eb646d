"""CompressorReranker: LangChain document compressors reranking a CompositeMemory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from agentkit_langchain import CompressorReranker
from langchain_classic.retrievers.document_compressors import CrossEncoderReranker
from langchain_core.callbacks import Callbacks
from langchain_core.cross_encoders import BaseCrossEncoder
from langchain_core.documents import BaseDocumentCompressor, Document

from agentkit.kernel import Ctx
from agentkit.state.journal import MutationJournal
from agentkit.state.memory import CompositeMemory, JournalMemory, MemoryItem


class OverlapCrossEncoder(BaseCrossEncoder):
    """Offline cross-encoder: scores a (query, passage) pair by shared words."""

    def score(self, text_pairs: list[tuple[str, str]]) -> list[float]:
        return [float(len(set(q.lower().split()) & set(p.lower().split()))) for q, p in text_pairs]


class RebuildingScorer(BaseDocumentCompressor):
    """Like hosted rerankers: returns NEW documents (no id), scored, best first,
    and leaves out what it considers irrelevant."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        words = set(query.split())
        scored = [(len(words & set(d.page_content.split())) / len(words), d) for d in documents]
        return [
            Document(page_content=d.page_content, metadata={**d.metadata, "relevance_score": s})
            for s, d in sorted(scored, key=lambda x: -x[0])
            if s > 0
        ]


ITEMS = [
    MemoryItem("apples are red", "a", 0.9, {"n": 1}, id="1"),
    MemoryItem("bananas are yellow", "b", None, {"n": 2}, id="2"),
    MemoryItem("sweet yellow bananas ripen fast", "a", 0.1, {"n": 3}),
    MemoryItem("grapes", "b", 0.5, {"relevance_score": 2.0}, id="4"),
]


async def test_cross_encoder_reorders_and_keeps_the_original_items() -> None:
    rerank = CompressorReranker(CrossEncoderReranker(model=OverlapCrossEncoder(), top_n=3))
    out = await rerank("sweet yellow bananas", ITEMS, k=2)
    assert out == [ITEMS[2], ITEMS[1]]  # the very items, scores untouched (none set)


async def test_compressor_scores_replace_item_scores_and_ids_survive_rebuild() -> None:
    rerank = CompressorReranker(RebuildingScorer())
    out = await rerank("sweet yellow bananas", ITEMS, k=5)
    assert [i.content for i in out] == [ITEMS[2].content, ITEMS[1].content]
    assert [i.id for i in out] == [None, "2"]
    assert [i.score for i in out] == [1.0, 2 / 3]
    assert [i.source for i in out] == ["a", "b"]
    assert dict(out[1].metadata) == {"n": 2}


async def test_a_carried_relevance_score_is_not_the_compressor_verdict() -> None:
    class Identity(BaseDocumentCompressor):
        def compress_documents(
            self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
        ) -> Sequence[Document]:
            return list(reversed(documents))

    out = await CompressorReranker(Identity())("q", ITEMS, k=4)
    assert out == list(reversed(ITEMS))  # item "4" keeps score 0.5 despite its metadata


async def test_as_composite_reranker() -> None:
    class ShortestFirst(BaseDocumentCompressor):
        """Prefers terse entries: relevance is 1 / word count."""

        def compress_documents(
            self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
        ) -> Sequence[Document]:
            scored = [(1 / len(d.page_content.split()), d) for d in documents]
            return [
                Document(page_content=d.page_content, metadata={**d.metadata, "relevance_score": s})
                for s, d in sorted(scored, key=lambda x: -x[0])
            ]

    journal: MutationJournal[str] = MutationJournal()
    for text in ["deploy failed monday", "lunch was pizza", "monday deploy retro notes taken"]:
        journal.record(text)
    source = JournalMemory(journal, render=str)
    plain = await CompositeMemory([source]).query("deploy", k=2, ctx=Ctx())
    assert [i.content for i in plain] == ["monday deploy retro notes taken", "deploy failed monday"]
    ranked = await CompositeMemory([source], reranker=CompressorReranker(ShortestFirst())).query(
        "deploy", k=2, ctx=Ctx()
    )
    assert [(i.content, i.score) for i in ranked] == [
        ("deploy failed monday", 1 / 3),
        ("monday deploy retro notes taken", 1 / 5),
    ]


async def test_validation() -> None:
    with pytest.raises(TypeError):
        CompressorReranker(object())  # type: ignore[arg-type]
    rerank = CompressorReranker(RebuildingScorer())
    with pytest.raises(ValueError):
        await rerank("q", ITEMS, k=0)
    assert await rerank("q", [], k=3) == []
    bad: Any = [MemoryItem("t", "s", metadata={"agentkit_x": 1})]
    with pytest.raises(ValueError, match="agentkit_x"):
        await rerank("t", bad, k=1)
