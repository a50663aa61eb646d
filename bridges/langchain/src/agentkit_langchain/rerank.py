"""CompressorReranker: any LangChain document compressor as a CompositeMemory reranker."""

from __future__ import annotations

import dataclasses
from typing import Any

from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables.config import var_child_runnable_config

from agentkit.kernel.errors import InvalidArgumentType
from agentkit.kernel.validate import check_k, check_query
from agentkit.state.memory import MemoryItem
from agentkit_langchain.mapping import as_score, to_document

# Which input a returned document stands for, when the compressor rebuilt it.
_INDEX_KEY = "agentkit_rerank_index"


class CompressorReranker:
    """Rerank a merged pool with a ``BaseDocumentCompressor`` (cross-encoder, LLM, ...).

    Returns the ORIGINAL items, in the compressor's order, cut to ``k``; an item
    the compressor dropped is dropped. Its score becomes the compressor's
    ``relevance_score`` only where the compressor set one (many reorder without
    scoring, and a made-up score would mislead). Documents are matched back by a
    position key in their metadata, since rerankers often rebuild documents and
    lose ``Document.id``; failing that, by identity, then by text.
    """

    def __init__(self, compressor: BaseDocumentCompressor) -> None:
        if not isinstance(compressor, BaseDocumentCompressor):
            raise InvalidArgumentType(
                f"compressor must be a BaseDocumentCompressor, got {type(compressor).__name__}"
            )
        self.compressor = compressor

    def __repr__(self) -> str:
        return f"CompressorReranker({type(self.compressor).__name__})"

    async def __call__(self, query: str, items: list[MemoryItem], *, k: int) -> list[MemoryItem]:
        query = check_query(query)
        k = check_k(k)
        pool = list(items)
        if not pool:
            return []
        docs: list[Document] = []
        for position, item in enumerate(pool):
            doc = to_document(item)
            doc.metadata[_INDEX_KEY] = position
            docs.append(doc)
        config = var_child_runnable_config.get() or {}
        ranked = await self.compressor.acompress_documents(
            docs, query, callbacks=config.get("callbacks")
        )
        taken: set[int] = set()
        out: list[MemoryItem] = []
        for doc in ranked:
            found = _find(doc, docs, taken)
            if found is None:
                continue
            taken.add(found)
            out.append(_rescored(pool[found], doc))
            if len(out) == k:
                break
        return out


def _find(doc: Document, docs: list[Document], taken: set[int]) -> int | None:
    index: Any = doc.metadata.get(_INDEX_KEY)
    if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(docs):
        return None if index in taken else index
    for i, original in enumerate(docs):
        if i not in taken and original is doc:
            return i
    for i, original in enumerate(docs):
        if i not in taken and original.page_content == doc.page_content:
            return i
    return None


def _rescored(item: MemoryItem, doc: Document) -> MemoryItem:
    new = as_score(doc.metadata.get("relevance_score"))
    if new is None:
        return item
    # Carried over from the item's own metadata is not the compressor's verdict.
    if "relevance_score" in item.metadata and as_score(item.metadata["relevance_score"]) == new:
        return item
    return dataclasses.replace(item, score=new)
