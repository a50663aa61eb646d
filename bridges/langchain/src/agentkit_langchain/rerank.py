"""CompressorReranker: any LangChain document compressor as a CompositeMemory reranker."""

from __future__ import annotations

from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables.config import var_child_runnable_config

from agentkit.interop import RERANK_KEY, Seen, reranked_items
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.kernel.validate import check_k, check_query
from agentkit.state.memory import MemoryItem
from agentkit_langchain.mapping import ID_KEY, to_documents


class CompressorReranker:
    """Rerank a merged pool with a ``BaseDocumentCompressor`` (cross-encoder, LLM, ...).

    Returns the ORIGINAL items, in the compressor's order, each once, cut to ``k``;
    an item the compressor dropped is dropped. Its score becomes the compressor's
    ``relevance_score`` only where the compressor set one (many reorder or filter
    without scoring, and a made-up score would mislead). Each document handed over
    carries its pool position in metadata, so documents the compressor rebuilt
    without ``Document.id`` or with rewritten text (LLM extractors) still find
    their item; the matching itself is shared with the LlamaIndex bridge.

    Args:
        compressor: Any LangChain ``BaseDocumentCompressor``.

    Raises:
        InvalidArgumentType: ``compressor`` is not a ``BaseDocumentCompressor``; from a
            call, a compressor that returned something other than Documents.
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
        docs = to_documents(pool)
        for position, doc in enumerate(docs):
            doc.metadata[RERANK_KEY] = position
        handed = [_seen(doc) for doc in docs]  # before the compressor can touch them
        config = var_child_runnable_config.get() or {}
        ranked = await self.compressor.acompress_documents(
            docs, query, callbacks=config.get("callbacks")
        )
        return reranked_items(pool, handed, map(_seen, ranked), k=k)


def _seen(doc: object) -> Seen:
    if not isinstance(doc, Document):
        raise InvalidArgumentType(f"the compressor returned a {type(doc).__name__}, not a Document")
    meta = doc.metadata
    key = doc.id
    if key is None:  # rebuilt without Document.id: the id's copy in metadata
        carried = meta.get(ID_KEY)
        key = carried if isinstance(carried, str) else None
    return Seen(
        doc,
        slot=meta.get(RERANK_KEY),
        key=key,
        text=doc.page_content,
        score=meta.get("relevance_score"),
    )
