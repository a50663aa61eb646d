"""Chroma's short answers, made exact: the one place the LangChain bridge does this.

Chroma (approximate HNSW) may return fewer records than asked while more match, with
or without a filter (many identical vectors), and asking again wider or with ``ids=``
walks the same graph. So both LangChainMemory and LangChainVectorPort, on a short
answer, count the matching records by an exact metadata read and, when there are more
than came back, rank those records exactly (``agentkit.interop.nearest``) and return
what ``similarity_search_with_score`` would: Documents with the store's own distances.

Only langchain_chroma's public API is used. It gives no handle on the collection (so
none on its configured distance space), so the space is recognised from the store's
own answer instead (``_space``), and relevance follows the same public facts the
store's relevance search uses (``relevance``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from langchain_core.documents import Document

from agentkit.interop import SPACES, nearest, run_blocking
from agentkit.kernel.errors import StoreError

# Records read per ``get`` while ranking: only the best ``n`` are held between pages.
_PAGE = 1024
# Records the store is asked for when recognising its distance space.
_PROBE = 4


class Exact(NamedTuple):
    """An exact answer: Documents with Chroma's distances, and the space they are in."""

    hits: list[tuple[Document, float]]
    space: str


async def exact_search(store: Any, query: str, n: int, where: Any, got: int) -> Exact | None:
    """The ``n`` records matching ``where`` nearest ``query``, with Chroma's distances.

    None when the store's answer of ``got`` records already held every match (it was
    not short, just the end), or when the store has no LangChain embeddings to embed
    the query with (the collection's own embedding function is Chroma's business).
    """
    embeddings = store.embeddings
    if embeddings is None:
        return None
    matching = await run_blocking(functools.partial(store.get, where=where, include=[]))
    ids = list(matching["ids"])
    if len(ids) <= got:
        return None
    vector = [float(x) for x in await embeddings.aembed_query(query)]
    return await run_blocking(_ranked, store, vector, ids, n, where)


def relevance(store: Any, space: str) -> Callable[[float], float]:
    """Chroma's distance-to-relevance function for ``space``, the one its
    ``similarity_search_with_relevance_scores`` applies: the user's
    ``relevance_score_fn`` (Chroma keeps it as the public
    ``override_relevance_score_fn``), else LangChain's mapping for the space."""
    override: Callable[[float], float] | None = store.override_relevance_score_fn
    return override if override else _RELEVANCE[space]


def _euclidean(distance: float) -> float:
    return 1.0 - distance / math.sqrt(2)


def _cosine(distance: float) -> float:
    return 1.0 - distance


def _inner_product(distance: float) -> float:
    return 1.0 - distance if distance > 0 else -1.0 * distance


# langchain_core's VectorStore helpers, as langchain_chroma picks them per space.
_RELEVANCE: dict[str, Callable[[float], float]] = {
    "l2": _euclidean,
    "cosine": _cosine,
    "ip": _inner_product,
}


def _ranked(store: Any, vector: list[float], ids: list[str], n: int, where: Any) -> Exact:
    """Rank ``ids`` exactly; records without text are skipped, as langchain_chroma does."""

    def pages() -> Iterator[tuple[list[str], list[Any]]]:
        for start in range(0, len(ids), _PAGE):
            page = store.get(ids=ids[start : start + _PAGE], include=["embeddings", "documents"])
            rows = zip(page["ids"], page["embeddings"], page["documents"], strict=True)
            kept = [(rid, row) for rid, row, text in rows if text is not None]
            yield [rid for rid, _ in kept], [row for _, row in kept]

    space = _space(store, vector, where)
    best = nearest(vector, pages(), n, space)
    if not best:
        return Exact([], space)
    read = store.get(ids=[rid for rid, _ in best], include=["documents", "metadatas"])
    texts = {
        rid: (text, meta or {})
        for rid, text, meta in zip(read["ids"], read["documents"], read["metadatas"], strict=True)
    }
    hits = [
        (Document(page_content=texts[rid][0], metadata=texts[rid][1], id=rid), distance)
        for rid, distance in best
        if rid in texts and texts[rid][0] is not None
    ]
    return Exact(hits, space)


def _space(store: Any, vector: list[float], where: Any) -> str:
    """The collection's distance space, recognised from the store's own answer.

    ``similarity_search_by_vector_with_relevance_scores`` returns Chroma's raw
    distances; with the returned records' stored vectors (``get``), the space is the
    one (``l2``, ``cosine`` or ``ip``) whose formula reproduces them. The probe is
    twice the query: on unit vectors (most models' output) cosine and inner product
    measure the same thing, so a probe of another length is what tells them apart.
    The caller's own records (``where``) are asked first; only if the walk reaches
    none of them is the collection asked unfiltered, and then only the space is
    learnt from the answer, nothing of those records leaves here. An empty answer
    means an empty collection: Chroma's default space, ``l2``, is assumed.
    """
    probe = [2.0 * x for x in vector]
    answer = store.similarity_search_by_vector_with_relevance_scores(probe, k=_PROBE, filter=where)
    if not answer and where is not None:
        answer = store.similarity_search_by_vector_with_relevance_scores(probe, k=_PROBE)
    reported = {doc.id: float(distance) for doc, distance in answer if doc.id is not None}
    if not reported:
        return "l2"
    read = store.get(ids=list(reported), include=["embeddings"])
    keys, rows = list(read["ids"]), read["embeddings"]
    votes = dict.fromkeys(SPACES, 0)
    for space in SPACES:
        measured = nearest(probe, [(keys, rows)], len(keys), space)
        votes[space] = sum(
            math.isclose(distance, reported[rid], rel_tol=1e-3, abs_tol=1e-4)
            for rid, distance in measured
        )
    best = max(SPACES, key=votes.__getitem__)  # ties: the earlier in SPACES, l2 first
    if not votes[best]:
        raise StoreError(
            f"Chroma's distances match none of the spaces {', '.join(SPACES)}: cannot rank "
            "its records exactly"
        )
    return best
