"""What a Chroma collection should answer, computed in plain Python (no Chroma, no numpy).

The Chroma tests inject Chroma's misses (its own are not deterministic) and compare what
the bridge returns with this: a wrong order, a missing record or a score from the wrong
space then fails them.
"""

from __future__ import annotations

import math

import pytest
from langchain_core.embeddings import Embeddings


def distance(a: list[float], b: list[float], space: str) -> float:
    """Chroma's distance in ``space``: squared l2, 1 - dot for ip, 1 - cosine."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    if space == "l2":
        return sum((x - y) ** 2 for x, y in zip(a, b, strict=True))
    if space == "ip":
        return 1.0 - dot
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - (dot / norms if norms else 0.0)


def distances(emb: Embeddings, query: str, texts: dict[str, str], space: str) -> dict[str, float]:
    """Every record's distance to ``query``, by id."""
    point = emb.embed_query(query)
    rows = emb.embed_documents(list(texts.values()))
    return {rid: distance(point, row, space) for rid, row in zip(texts, rows, strict=True)}


def relevance(distance: float, space: str) -> float:
    """LangChain's documented mapping for Chroma's spaces (VectorStore's helpers)."""
    if space == "l2":
        return 1.0 - distance / math.sqrt(2)
    if space == "cosine":
        return 1.0 - distance
    return 1.0 - distance if distance > 0 else -distance


def check_top(found: list[str], oracle: dict[str, float], k: int, *, tol: float = 1e-5) -> None:
    """``found`` is a correct top ``k``: nearest first, ties in any order."""
    best = sorted(oracle.values())[:k]
    assert len(found) == k
    assert [oracle[rid] for rid in found] == pytest.approx(best, abs=tol)
