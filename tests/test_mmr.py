"""agentkit.vector.mmr: the one maximal-marginal-relevance rule both bridges use."""

from __future__ import annotations

import numpy as np
import pytest

from agentkit.kernel.errors import InvalidArgument
from agentkit.vector import Chunk, HashingEmbedder
from agentkit.vector.mmr import check_lambda, maximal_marginal_relevance, mmr_select


def _reference(query: np.ndarray, rows: np.ndarray, k: int, lam: float) -> list[int]:
    """MMR written out the slow way: relevance minus the closest pick so far."""
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    q = query / np.linalg.norm(query)
    picked: list[int] = []
    while len(picked) < min(k, len(rows)):
        best, best_score = -1, -np.inf
        for i in range(len(rows)):
            if i in picked:
                continue
            redundancy = max((float(unit[i] @ unit[j]) for j in picked), default=0.0)
            score = float(unit[i] @ q) if not picked else lam * float(unit[i] @ q) - (
                1 - lam
            ) * redundancy
            if score > best_score:
                best, best_score = i, score
        picked.append(best)
    return picked


@pytest.mark.parametrize("lam", [0.0, 0.25, 0.5, 0.9, 1.0])
def test_picks_as_the_textbook_rule_does(lam: float) -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        rows = rng.normal(size=(15, 6))
        query = rng.normal(size=6)
        assert maximal_marginal_relevance(query, rows, k=6, lambda_mult=lam) == _reference(
            query, rows, 6, lam
        )


def test_a_near_duplicate_gives_way_to_variety() -> None:
    query = [1.0, 0.0, 0.0]
    rows = [[1.0, 0.05, 0.0], [1.0, 0.06, 0.0], [0.7, 0.0, 0.7]]
    assert maximal_marginal_relevance(query, rows, k=2, lambda_mult=0.5) == [0, 2]
    assert maximal_marginal_relevance(query, rows, k=2, lambda_mult=1.0) == [0, 1]
    assert maximal_marginal_relevance(query, rows, k=9) == [0, 2, 1]  # never more than given
    assert maximal_marginal_relevance(query, [], k=3) == []
    # A zero row is similar to nothing: no NaN reaches the ranking.
    assert maximal_marginal_relevance(query, [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], k=2) == [1, 0]


async def test_mmr_select_keeps_each_hits_score() -> None:
    embedder = HashingEmbedder(dim=128)
    hits = [
        (0.9, Chunk("a", "apple pie recipe")),
        (0.9, Chunk("a2", "apple pie recipe")),
        (0.6, Chunk("b", "apple crumble recipe")),
    ]
    [query] = await embedder.embed(["apple pie recipe"])
    picked = await mmr_select(hits, query, embedder, k=2, lambda_mult=0.5)
    assert [(s, c.id) for s, c in picked] == [(0.9, "a"), (0.6, "b")]
    assert await mmr_select([], query, embedder, k=2, lambda_mult=0.5) == []


@pytest.mark.parametrize("bad", [-0.1, 1.5, True, "0.5", float("nan")])
def test_a_weight_outside_zero_one_is_refused(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="mmr_threshold"):
        check_lambda(bad, "mmr_threshold")
    assert check_lambda(0) == 0.0
