"""CompressorReranker: LangChain document compressors reranking a CompositeMemory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from agentkit_langchain import CompressorReranker
from langchain_classic.retrievers.document_compressors import CrossEncoderReranker
from langchain_core.callbacks import CallbackManagerForLLMRun, Callbacks
from langchain_core.cross_encoders import BaseCrossEncoder
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.language_models.llms import LLM

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


# --- LangChain's own compressors, offline ----------------------------------------------

FRUIT = [
    MemoryItem("yellow bananas ripen in the sun", "vec", 0.2, {"source": "b.md"}, id="b1"),
    MemoryItem("red apples grow in orchards", "vec", 0.9, {"source": "a.md"}, id="a1"),
    MemoryItem("sweet yellow bananas and ripe mangoes", "notes", None, {"n": 3}),
    MemoryItem("green grapes on the vine", "vec", 0.4, {}, id="g1"),
    MemoryItem("bananas are sweet", "journal", 0.7, {"n": 5}, id="b2"),
]


def _embeddings() -> Any:
    from agentkit_langchain.embeddings import AgentkitEmbeddings

    from agentkit.vector import HashingEmbedder

    return AgentkitEmbeddings(HashingEmbedder(dim=512))


def _by_content(docs: Sequence[Document]) -> list[MemoryItem]:
    index = {item.content: item for item in FRUIT}
    return [index[d.page_content] for d in docs]


async def test_embeddings_filter_returns_the_originals_though_it_drops_ids() -> None:
    from langchain_classic.retrievers.document_compressors import EmbeddingsFilter

    compressor = EmbeddingsFilter(embeddings=_embeddings(), k=3)
    # What the filter does with plain documents (it rebuilds them without Document.id).
    plain = [Document(page_content=i.content, metadata=dict(i.metadata), id=i.id) for i in FRUIT]
    direct = compressor.compress_documents(plain, "sweet yellow bananas")
    assert all(d.id is None for d in direct)  # the behaviour the bridge must survive
    out = await CompressorReranker(compressor)("sweet yellow bananas", FRUIT, k=3)
    assert out == _by_content(direct)
    assert all(any(o is i for i in FRUIT) for o in out)  # the very items, ids included
    assert "green grapes on the vine" not in [o.content for o in out]


async def test_a_compressor_pipeline_with_long_context_reorder() -> None:
    from langchain_classic.retrievers.document_compressors import (
        DocumentCompressorPipeline,
        EmbeddingsFilter,
    )
    from langchain_community.document_transformers import LongContextReorder

    pipeline = DocumentCompressorPipeline(
        transformers=[EmbeddingsFilter(embeddings=_embeddings(), k=4), LongContextReorder()]
    )
    plain = [Document(page_content=i.content, metadata=dict(i.metadata)) for i in FRUIT]
    expected = _by_content(pipeline.compress_documents(plain, "sweet yellow bananas"))
    assert len(expected) == 4
    out = await CompressorReranker(pipeline)("sweet yellow bananas", FRUIT, k=10)
    assert out == expected
    assert [o.score for o in out] == [o.score for o in expected]  # nobody scored: untouched
    assert (await CompressorReranker(pipeline)("sweet yellow bananas", FRUIT, k=2)) == expected[:2]


class ExtractingLLM(LLM):
    """A deterministic stand-in for an LLM extractor: keeps the words of the context
    that appear in the question, or answers NO_OUTPUT."""

    @property
    def _llm_type(self) -> str:
        return "extracting-fake"

    def _call(
        self,
        prompt: str,
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> str:
        question = prompt.split("> Question:")[1].split("\n")[0].split()
        context = prompt.split(">>>\n")[1].split("\n>>>")[0]
        kept = [w for w in context.split() if w in question]
        return " ".join(kept) if kept else "NO_OUTPUT"


async def test_an_llm_extractor_rewrites_text_and_the_items_still_come_back() -> None:
    from langchain_classic.retrievers.document_compressors import LLMChainExtractor

    extractor = LLMChainExtractor.from_llm(ExtractingLLM())
    plain = [Document(page_content=i.content) for i in FRUIT]
    rewritten = await extractor.acompress_documents(plain, "sweet bananas")
    assert [d.page_content for d in rewritten] == ["bananas", "sweet bananas", "bananas sweet"]
    out = await CompressorReranker(extractor)("sweet bananas", FRUIT, k=5)
    # Matched by the carried position, not by the rewritten text; originals intact.
    assert out == [FRUIT[0], FRUIT[2], FRUIT[4]]
    assert out[1] is FRUIT[2]


class Hostile(BaseDocumentCompressor):
    """Everything a careless reranker does at once."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        d = list(documents)
        return [
            d[3],
            d[3],  # the same document twice
            Document(page_content="invented", metadata={"relevance_score": 9.0}),  # a stranger
            Document(page_content=d[1].page_content),  # rebuilt bare: no id, no metadata
            Document(page_content="new words", metadata={**d[3].metadata}),  # a copy of d[3]
            Document(
                page_content=d[0].page_content,
                metadata={**d[0].metadata, "relevance_score": np.float64(0.75)},
            ),
            Document(
                page_content=d[4].page_content,
                metadata={**d[4].metadata, "relevance_score": "high"},
            ),
            d[2],
        ]


async def test_a_hostile_compressor_gives_each_original_once_in_its_order() -> None:
    out = await CompressorReranker(Hostile())("q", FRUIT, k=10)
    assert [o.content for o in out] == [FRUIT[i].content for i in (3, 1, 0, 4, 2)]
    assert out[0] is FRUIT[3] and out[1] is FRUIT[1] and out[3] is FRUIT[4]
    assert out[2].score == 0.75 and type(out[2].score) is float  # the one real verdict
    assert (out[2].id, out[2].source, dict(out[2].metadata)) == ("b1", "vec", {"source": "b.md"})
    assert await CompressorReranker(Hostile())("q", FRUIT, k=2) == [FRUIT[3], FRUIT[1]]


async def test_a_compressor_returning_non_documents_is_named() -> None:
    class Broken(BaseDocumentCompressor):
        def compress_documents(
            self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
        ) -> Sequence[Document]:
            return ["not a document"]  # type: ignore[list-item]

    with pytest.raises(TypeError, match="str, not a Document"):
        await CompressorReranker(Broken())("q", FRUIT, k=2)


async def test_a_compressor_keeping_only_the_id_copy_still_finds_the_item() -> None:
    class Whitelist(BaseDocumentCompressor):
        """Rebuilds documents keeping one metadata key it was told about, new text."""

        def compress_documents(
            self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
        ) -> Sequence[Document]:
            return [
                Document(
                    page_content="rewritten", metadata={"agentkit_id": d.metadata["agentkit_id"]}
                )
                for d in reversed(documents)
                if "agentkit_id" in d.metadata
            ]

    out = await CompressorReranker(Whitelist())("q", FRUIT, k=3)
    assert out == [FRUIT[4], FRUIT[3], FRUIT[1]]
