"""Rerankers: put a merged pool on one axis, best first, cut to ``k``.

Sources score on their own scales (cosine in [-1, 1], BM25 unbounded, recency as a
timestamp), so sorting raw scores from several of them together is not a ranking: the
source with the largest numbers wins every slot. ``score_sort_rerank`` does exactly that
and is right when the pool shares one scale; ``rrf_rerank`` ignores the raw values and
fuses positions instead, which is the remedy when it does not.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from operator import attrgetter
from typing import cast

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_k
from agentkit.state.memory._frozen import FrozenDict
from agentkit.state.memory._item import MemoryItem, _evolve
from agentkit.state.memory._stamps import provenance

RRF_K = 60
"""The rank constant of reciprocal rank fusion (Cormack et al.): damps the head."""

HYBRID_RRF_CONSTANT = 20
"""RRF's constant for agentkit's hybrid search: one dense and one lexical list fused.

Smaller than the textbook ``RRF_K`` because, with two strong halves, the head of each
list deserves more trust (on SciFact's train split it lifts nDCG@10 from 0.710 to
0.717, on both halves of the query set). ``HybridMemory`` fuses with it by default, and
every hybrid door (the CLI, MCP, the LangGraph store, the vector stores) is a
HybridMemory, so the same query ranks the same way in each.
"""

HYBRID_TIES = "lexical"
"""Which half settles exact ties when agentkit's hybrid search fuses with RRF.

Rank sums tie constantly (a chunk 1st by meaning and 3rd by words scores exactly what
one 3rd by meaning and 1st by words does), so the tie-breaker decides real places in
the top ten. BM25's order is the one to trust there: an exact-term match is the
stronger zero-shot signal on technical text, and the lexical half is the stronger one
alone on the SciFact evaluation. Pass it as ``rrf_rerank(..., ties=HYBRID_TIES)``.
"""

SourceRanks = Mapping[int, Mapping[str, int]]
"""``{id(item): {source name: 1-based rank in that source's own list}}``."""

_SOURCE_RANKS: ContextVar[Callable[[], SourceRanks] | None] = ContextVar(
    "agentkit_memory_source_ranks", default=None
)
"""Set by CompositeMemory around its reranker call.

A merged pool has lost the per-source order RRF needs (and a dedupe survivor stands
for several copies at several ranks). The composite publishes a lazy thunk here so
only a reranker that asks pays to build the map.
"""

_score = attrgetter("score")


async def score_sort_rerank(query: str, items: list[MemoryItem], *, k: int) -> list[MemoryItem]:
    """Sort by the backends' raw ``score``, descending; ``None`` sinks but stays.

    The output score is the input score, untouched, so it only means something when
    every item came from one scale. Mixed sources let the widest scale take the top
    slots (BM25's 12.3 beats any cosine); use
    [`rrf_rerank`][agentkit.state.memory.rrf_rerank] for those. The sort is stable, so
    equal scores keep pool order, and an unranked source (a tool, a journal) still
    surfaces after the ranked ones.

    Args:
        query: The query the pool answers (unused: the order comes from the scores).
        items: The merged pool.
        k: How many items to keep.

    Returns:
        The ``k`` best items, the same objects as in ``items``.
    """
    k = check_k(k)
    try:
        ranked = sorted(items, key=_score, reverse=True)  # reverse keeps stability
    except TypeError:  # a None among the scores: sorting meets it in any pool of 2+
        scored = [item for item in items if item.score is not None]
        scored.sort(key=_score, reverse=True)
        ranked = scored + [item for item in items if item.score is None]
    return ranked[:k]


async def rrf_rerank(
    query: str,
    items: list[MemoryItem],
    *,
    k: int,
    weights: Mapping[str, float] | None = None,
    constant: float = RRF_K,
    ties: str | None = None,
) -> list[MemoryItem]:
    """Reciprocal rank fusion: score = sum of ``weight / (constant + rank)`` per source.

    Raw scores are discarded; only each source's own ordering counts. That is the
    remedy for mixed scales: sorting cosine (<= 1) next to BM25 (often > 10) hands
    every slot to the larger scale, while ranks put both sources on equal terms and an
    item several sources agree on rises. The returned items carry the fused score
    (new objects; the inputs are not touched). ``weights`` maps source name to a
    multiplier (default 1.0); bind it, or ``constant`` (default 60; smaller trusts each
    source's head more), with ``functools.partial``. Ranks come from the
    composite that called us when it published them, otherwise from each item's
    position among same-source items in ``items``.

    Args:
        query: The query the pool answers (unused: only ranks count).
        items: The merged pool.
        k: How many items to keep.
        weights: Per-source multipliers, by source name; a missing source weighs 1.0.
        constant: Added to every rank; damps how much the first places dominate.
        ties: A source whose own order settles exact ties of fused score (items it
            did not return come after those it did). Ties are common, not rare: two
            items at mirrored ranks (1st and 3rd against 3rd and 1st) sum to the same
            score. ``None`` keeps pool order (the first-listed member's items first).

    Returns:
        The ``k`` best items by fused score, best first, as new items.

    Raises:
        InvalidArgument: A NaN, infinite or negative ``constant`` or weight.
        InvalidArgumentType: A non-number ``constant`` or weight, or ``weights`` that
            is not a mapping.
    """
    k = check_k(k)
    weight = _check_weights(weights)
    _check_fusion(constant, ties)
    thunk = _SOURCE_RANKS.get()
    published = thunk() if thunk is not None else None
    seen: dict[str, int] = {}
    # (-fused score, rank in ``ties``'s list, position, item): positions are unique,
    # so items are never compared and the plain tuple sort is stable on ties.
    unranked = len(items) + 1
    fused: list[tuple[float, int, int, MemoryItem]] = []
    for position, item in enumerate(items):
        ranks = published.get(id(item)) if published is not None else None
        if ranks is None:
            ranks = {}
            for src in _sources_of(item):
                rank = seen.get(src, 0) + 1
                seen[src] = rank
                ranks[src] = rank
        if len(ranks) == 1:
            [(src, rank)] = ranks.items()
            total = weight(src) / (constant + rank)
        else:
            total = math.fsum(weight(src) / (constant + rank) for src, rank in ranks.items())
        tie = unranked if ties is None else ranks.get(ties, unranked)
        fused.append((-total, tie, position, item))
    fused.sort()
    # Every MemoryItem's metadata is a FrozenDict (its __post_init__ makes it one).
    return [
        _evolve(item, -negated, cast(FrozenDict, item.metadata))
        for negated, _, _, item in fused[:k]
    ]


def _sources_of(item: MemoryItem) -> tuple[str, ...]:
    """A merge's survivor speaks for every source that held a copy.

    Only a survivor of a merge in this query does: stamps read back from a store
    would credit one source's hit to sources that never returned it.
    """
    stamped = provenance(item)
    if stamped:
        return stamped if item.source in stamped else (*stamped, item.source)
    return (item.source,)


def _check_fusion(constant: object, ties: object) -> None:
    """``rrf_rerank``'s ``constant`` and ``ties``, checked where they are bound too."""
    if isinstance(constant, bool) or not isinstance(constant, numbers.Real):
        raise InvalidArgumentType(f"constant must be a number, got {type(constant).__name__}")
    if not math.isfinite(constant) or constant < 0:
        raise InvalidArgument(f"constant must be finite and >= 0, got {constant!r}")
    if ties is not None and not isinstance(ties, str):
        raise InvalidArgumentType(f"ties must be a source name (str), got {type(ties).__name__}")


def _check_weights(weights: Mapping[str, float] | None) -> Callable[[str], float]:
    if weights is None:
        return lambda _src: 1.0
    if not isinstance(weights, Mapping):
        raise InvalidArgumentType(
            f"weights must be a mapping of source name to number, got {type(weights).__name__}"
        )
    table: dict[str, float] = {}
    for src, value in weights.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InvalidArgumentType(
                f"weights[{src!r}] must be a number, got {type(value).__name__}"
            )
        if not math.isfinite(value) or value < 0:
            raise InvalidArgument(f"weights[{src!r}] must be finite and >= 0, got {value!r}")
        table[src] = float(value)
    return lambda src: table.get(src, 1.0)
