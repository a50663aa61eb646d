"""Chroma's short answers, made exact: the one place the LangChain bridge does this.

Chroma (approximate HNSW) may return fewer records than asked while more match, with
or without a filter (many identical vectors), and asking again wider or with ``ids=``
walks the same graph. So both LangChainMemory and LangChainVectorPort, on a short
answer, count the matching records by an exact metadata read and, when there are more
than came back, rank those records exactly (``agentkit.interop.nearest``) and return
what ``similarity_search_with_score`` would: Documents with the store's own distances.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from langchain_core.documents import Document

from agentkit.interop import chroma_space, nearest, run_blocking

# Records read per ``get`` while ranking: only the best ``n`` are held between pages.
_PAGE = 1024


async def exact_search(
    store: Any, query: str, n: int, where: Any, got: int
) -> list[tuple[Document, float]] | None:
    """The ``n`` records matching ``where`` nearest ``query``, with Chroma's distances.

    None when the store's answer of ``got`` records already held every match (it was
    not short, just the end), or when the store has no LangChain embeddings to embed
    the query with (the collection's own embedding function is Chroma's business).
    """
    embeddings = getattr(store, "embeddings", None)
    if embeddings is None:
        return None
    matching = await run_blocking(functools.partial(store.get, where=where, include=[]))
    ids = list(matching["ids"])
    if len(ids) <= got:
        return None
    vector = await embeddings.aembed_query(query)
    return await run_blocking(_ranked, store, list(vector), ids, n)


def relevance(store: Any) -> Callable[[float], float]:
    """Chroma's distance-to-relevance function, the one its
    ``similarity_search_with_relevance_scores`` applies (its override, else by space)."""
    select: Callable[[], Callable[[float], float]] = store._select_relevance_score_fn
    return select()


def _ranked(
    store: Any, vector: list[float], ids: list[str], n: int
) -> list[tuple[Document, float]]:
    """Rank ``ids`` exactly; records without text are skipped, as langchain_chroma does."""

    def pages() -> Iterator[tuple[list[str], list[Any]]]:
        for start in range(0, len(ids), _PAGE):
            page = store.get(ids=ids[start : start + _PAGE], include=["embeddings", "documents"])
            rows = zip(page["ids"], page["embeddings"], page["documents"], strict=True)
            kept = [(rid, row) for rid, row, text in rows if text is not None]
            yield [rid for rid, _ in kept], [row for _, row in kept]

    best = nearest(vector, pages(), n, _space(store))
    if not best:
        return []
    read = store.get(ids=[rid for rid, _ in best], include=["documents", "metadatas"])
    texts = {
        rid: (text, meta or {})
        for rid, text, meta in zip(read["ids"], read["documents"], read["metadatas"], strict=True)
    }
    return [
        (Document(page_content=texts[rid][0], metadata=texts[rid][1], id=rid), distance)
        for rid, distance in best
        if rid in texts and texts[rid][0] is not None
    ]


def _space(store: Any) -> str:
    """The collection's distance space. langchain_chroma gives no public handle on its
    collection, so this reads the ``_collection`` property its own relevance function
    reads; the space itself comes from chromadb's public configuration."""
    return chroma_space(store._collection)
