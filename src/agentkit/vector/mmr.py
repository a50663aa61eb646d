"""Maximal marginal relevance: relevant results that do not repeat each other.

One implementation for every MMR entry point (LangChain's
``max_marginal_relevance_search`` and LlamaIndex's ``mmr`` query mode on the bridges'
``AgentkitVectorStore``). The candidates come from an ordinary nearest-neighbour
search; their vectors are their texts embedded again by the store's own embedder,
which is what the store holds for them (a store refuses a different embedder), since
``VectorPort`` hands back text, not vectors.

Selection is the textbook rule (Carbonell and Goldstein): each step takes the
candidate maximising ``lambda_mult * sim(query, c) - (1 - lambda_mult) * max sim(c,
chosen)``, as LangChain's ``maximal_marginal_relevance`` does. ``lambda_mult`` is
LlamaIndex's ``mmr_threshold`` too: 1 ranks by relevance alone, 0 by novelty alone.
LlamaIndex's own helper compares a candidate with the last pick only; comparing with
every pick is what keeps a third near-duplicate out once the first was taken.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from agentkit.kernel.errors import InvalidArgument
from agentkit.vector.port import Chunk, Embedder

__all__ = ["check_lambda", "maximal_marginal_relevance", "mmr_select", "query_vector"]

_Scored = list[tuple[float, Chunk]]
# Scores closer than this are equal (cosines are computed in float64).
_TIE = 1e-9


def check_lambda(value: object, name: str = "lambda_mult") -> float:
    """A diversity weight: a real number in [0, 1] (1 = relevance only)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidArgument(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def maximal_marginal_relevance(
    query: npt.ArrayLike, candidates: npt.ArrayLike, *, k: int, lambda_mult: float = 0.5
) -> list[int]:
    """Indices of up to ``k`` rows of ``candidates``, in the order MMR picks them.

    Cosine similarity throughout (rows need not be unit length; a zero row is similar
    to nothing). Scores equal up to float rounding are a tie, which goes to the
    candidate least like the picks so far, then to the earlier one (the store's order):
    when the query is itself a stored text, a second copy of it and a new text score
    exactly alike at ``lambda_mult=0.5``, and rounding must not decide for the copy.
    """
    rows = _unit(np.atleast_2d(np.asarray(candidates, dtype=np.float64)))
    n = rows.shape[0] if rows.size else 0
    if k <= 0 or n == 0:
        return []
    target = _unit(np.asarray(query, dtype=np.float64).reshape(1, -1))[0]
    relevance = rows @ target
    closest = np.full(n, -np.inf, dtype=np.float64)  # max similarity to any pick so far
    taken = np.zeros(n, dtype=bool)
    picked: list[int] = []
    while len(picked) < min(k, n):
        if picked:
            score = lambda_mult * relevance - (1.0 - lambda_mult) * closest
        else:
            score = relevance.copy()
        score[taken] = -np.inf
        best = int(np.argmax(score))
        if picked:
            tied = np.flatnonzero(score >= score[best] - _TIE)
            best = int(tied[np.argmin(closest[tied])])  # argmin: the earliest of equals
        picked.append(best)
        taken[best] = True
        closest = np.maximum(closest, rows @ rows[best])
    return picked


async def query_vector(embedder: Embedder, text: str) -> npt.NDArray[np.float32]:
    """``text`` as the embedder embeds a query: its ``embed_query`` when it has one
    (asymmetric models embed queries differently), else as a document."""
    embed_query = getattr(embedder, "embed_query", None)
    if callable(embed_query):
        row: npt.NDArray[np.float32] = np.asarray(await embed_query(text), dtype=np.float32)
        return row.reshape(-1)
    rows = np.asarray(await embedder.embed([text]), dtype=np.float32)
    first: npt.NDArray[np.float32] = rows[0]
    return first


async def mmr_select(
    hits: Sequence[tuple[float, Chunk]],
    query: npt.ArrayLike,
    embedder: Embedder,
    *,
    k: int,
    lambda_mult: float,
) -> _Scored:
    """``k`` of the nearest ``hits`` picked by MMR, each with its search score.

    The candidates are embedded in one batch; the query vector must come from the
    same embedder.
    """
    if not hits or k <= 0:
        return []
    vectors = await embedder.embed([chunk.text for _, chunk in hits])
    order = maximal_marginal_relevance(query, vectors, k=k, lambda_mult=lambda_mult)
    return [hits[i] for i in order]


def _unit(rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    out: npt.NDArray[np.float64] = np.divide(
        rows, norms, out=np.zeros_like(rows), where=norms > 0
    )
    return out
