"""HybridMemory: one store's dense and lexical rankings fused by RRF, as one source.

Every hybrid search in agentkit is this class (the CLI's ``query`` and ``eval``, the MCP
``memory_search`` tool, the LangGraph ``AgentkitStore``, LlamaIndex's
``AgentkitVectorStore`` in hybrid mode), so one store ranks a query one way whichever
door it comes through, and what ``query --explain`` shows is what this search did.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_choice, check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._rerank import (
    _SOURCE_RANKS,
    HYBRID_RRF_CONSTANT,
    HYBRID_TIES,
    _check_fusion,
    _check_weights,
    rrf_rerank,
)
from agentkit.state.memory._sources._args import check_ctx, scored_items
from agentkit.state.memory._sources.vector import VectorMemory
from agentkit.vector.port import Chunk

HybridMode = Literal["dense", "lexical", "hybrid"]
"""``"hybrid"`` fuses both halves; ``"dense"`` or ``"lexical"`` answers from one alone."""

HYBRID_DEPTH = 50
"""How deep each half is read before fusion, unless ``k`` asks for more.

A chunk ranked 30th by words but 2nd by meaning must be in the pool to be rescued; the
fused order of the first ``k`` then does not depend on ``k`` while ``k`` <= the depth.
"""

_HALVES: dict[str, tuple[str, ...]] = {
    "dense": ("dense",),
    "lexical": ("lexical",),
    "hybrid": ("dense", "lexical"),
}
_Hits = list[tuple[float, Chunk]]
_Read = Callable[[int], Awaitable[Sequence[tuple[float, Chunk]]]]


@dataclass(frozen=True, slots=True)
class HybridHalf:
    """One half's own answer to one search: its hits in its order, on its own scale.

    Attributes:
        name: ``"dense"`` or ``"lexical"``; each item's ``source`` too.
        items: What the half returned (after ``keep``), best first, raw scores.
        chunks: The same hits as the store's records, in the same order.
        seconds: How long the half took, widening reads included.
    """

    name: str
    items: tuple[MemoryItem, ...]
    chunks: tuple[Chunk, ...]
    seconds: float


@dataclass(frozen=True, slots=True)
class HybridResult:
    """One search's answer and how it was reached (what ``query --explain`` prints).

    Attributes:
        items: The answer, best first, at most ``k``: fused RRF scores in hybrid mode,
            the half's own scores in a one-half mode. ``source`` is the memory's name.
        chunks: The same answer as the store's records, in the same order.
        halves: Each half's own ranking, in the order ``dense``, ``lexical``.
        ranks: Every chunk id any half returned, with its 1-based rank in each half
            that returned it.
        seconds: The whole search, fusion included.
        constant: The RRF constant the fusion used.
    """

    items: tuple[MemoryItem, ...]
    chunks: tuple[Chunk, ...]
    halves: tuple[HybridHalf, ...]
    ranks: Mapping[str, Mapping[str, int]]
    seconds: float
    constant: float

    def found_by(self, chunk_id: str | None) -> tuple[str, ...]:
        """The halves that returned ``chunk_id``, dense first; () for an unknown id."""
        return tuple(self.ranks.get(chunk_id, ())) if chunk_id is not None else ()


@traced_memory(kind="client")
@dataclass
class HybridMemory:
    """Dense and lexical search over ONE store, fused by reciprocal rank fusion.

    Both halves read the same store, so their chunk ids are one keyspace and a record is
    one item however many halves found it, and two records are two items whatever their
    text (a merge by content would lose one of two facts stored under two keys). Each
    half is read ``max(k, depth)`` deep, then the pool is fused with ``rrf_rerank``
    (``weights``, ``constant``, ``ties``: a chunk's score is the sum over the halves that
    returned it of ``weight / (constant + rank)``, exact ties go by the ``ties`` half's
    order, then dense before lexical) and cut to ``k``. Exactly ``k`` items come back
    unless the scope holds fewer. ``mode="dense"`` or ``"lexical"`` answers from one
    half, ``k`` deep, with that half's own scores. ``where`` reaches both halves as is.

    Writes, deletes and forgets go to the store through a VectorMemory of the same name,
    so an item recalled here and written back updates its row.

    Args:
        store: A VectorPort; ``"lexical"`` and ``"hybrid"`` need its ``lexical_search``
            (the SQLite and PostgreSQL stores).
        mode: ``"hybrid"``, ``"dense"`` or ``"lexical"``.
        depth: How deep each half is read before fusion (at least ``k``).
        weights: Per-half RRF multipliers, by ``"dense"``/``"lexical"``; default 1.0.
        constant: RRF's rank constant (default ``HYBRID_RRF_CONSTANT``).
        ties: The half whose order settles exact ties (default ``HYBRID_TIES``); None
            leaves them in pool order.
        name: What items and traces carry as their source.

    Raises:
        InvalidArgument: An unknown mode, a depth below 1, or a NaN, infinite or
            negative constant or weight.
        InvalidArgumentType: A store without ``search`` (or ``lexical_search`` where the
            mode needs it), or a mistyped argument.
    """

    store: Any
    mode: HybridMode = "hybrid"
    depth: int = HYBRID_DEPTH
    weights: Mapping[str, float] | None = None
    constant: float = HYBRID_RRF_CONSTANT
    ties: str | None = HYBRID_TIES
    name: str = "hybrid"
    _writer: VectorMemory = field(init=False, repr=False, compare=False)

    forgets = True

    def __post_init__(self) -> None:
        check_choice("mode", self.mode, get_args(HybridMode))
        if isinstance(self.depth, bool) or not isinstance(self.depth, int):
            raise InvalidArgumentType(f"depth must be an int, got {type(self.depth).__name__}")
        if self.depth < 1:
            raise InvalidArgument(f"depth must be >= 1, got {self.depth}")
        _check_weights(self.weights)
        _check_fusion(self.constant, self.ties)
        if not isinstance(self.name, str) or not self.name:
            raise InvalidArgumentType("name must be a non-empty str")
        for half in _HALVES[self.mode]:
            method = "search" if half == "dense" else "lexical_search"
            if not callable(getattr(self.store, method, None)):
                raise InvalidArgumentType(
                    f"{self.mode} search needs a store with {method}(), "
                    f"got {type(self.store).__name__}"
                )
        self._writer = VectorMemory(self.store, name=self.name)

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        """The best ``k`` in ``ctx.scope`` (fewer only if the scope holds fewer)."""
        return list((await self.search(query, k=k, ctx=ctx, where=where)).items)

    async def search(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
        keep: Callable[[Chunk], bool] | None = None,
        vector: Any = None,
    ) -> HybridResult:
        """``query``'s answer with the record of how it was reached.

        Args:
            query: The text to recall for.
            k: How many items to return.
            ctx: Its scope is the only one read.
            where: Metadata filter, handed to each half unchanged.
            keep: A check on each hit the store cannot run (a bridge's own filter);
                a half whose hits it drops is read deeper until it has enough or the
                store has no more, so ranks count only records the caller may see.
            vector: The query's embedding, when the caller made it: the dense half
                then searches by it (the store's ``search_by_vector``).
        """
        query = check_query(query)
        k = check_k(k)
        where = check_where(where)
        ctx = check_ctx(ctx)
        if keep is not None and not callable(keep):
            raise InvalidArgumentType(f"keep must be callable, got {type(keep).__name__}")
        start = time.perf_counter()
        names = _HALVES[self.mode]
        n = max(k, self.depth) if len(names) > 1 else k
        reads = [self._reader(half, query, ctx, where, vector) for half in names]
        settled = await asyncio.gather(
            *(_timed(half, read, n, keep) for half, read in zip(names, reads, strict=True)),
            return_exceptions=True,
        )
        for outcome in settled:
            if isinstance(outcome, BaseException):
                raise outcome
        halves = tuple(h for h in settled if isinstance(h, HybridHalf))
        ranks: dict[str, dict[str, int]] = {}
        chunks: dict[str, Chunk] = {}
        for half in halves:
            for rank, chunk in enumerate(half.chunks, 1):
                found = ranks.get(chunk.id)
                if found is None:
                    ranks[chunk.id] = {half.name: rank}
                    chunks[chunk.id] = chunk
                else:
                    found.setdefault(half.name, rank)
        if len(halves) == 1:
            answer = [self._own(item) for item in halves[0].items[:k]]
        else:
            answer = await self._fuse(query, ranks, halves, k)
        return HybridResult(
            items=tuple(answer),
            chunks=tuple(chunks[item.id] for item in answer if item.id is not None),
            halves=halves,
            ranks=ranks,
            seconds=time.perf_counter() - start,
            constant=self.constant,
        )

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Store items as the store's records; a recalled item updates its own row."""
        await self._writer.write(items, ctx=ctx)

    async def delete(self, ids: Sequence[str], *, ctx: Ctx) -> int:
        """Remove these record ids from ``ctx.scope``; how many went."""
        return await self._writer.delete(ids, ctx=ctx)

    async def forget(
        self, where: Mapping[str, Any] | None = None, *, ctx: Ctx, all: bool = False
    ) -> int:
        """Remove the scope's records matching ``where``, or all of them with ``all=True``."""
        return await self._writer.forget(where, ctx=ctx, all=all)

    def _reader(
        self, half: str, query: str, ctx: Ctx, where: dict[str, Any] | None, vector: Any
    ) -> _Read:
        scope = ctx.scope
        if half == "lexical":
            lexical = self.store.lexical_search
            return lambda n: lexical(query, k=n, scope=scope, where=where)
        if vector is None:
            dense = self.store.search
            return lambda n: dense(query, k=n, scope=scope, where=where)
        by_vector = getattr(self.store, "search_by_vector", None)
        if not callable(by_vector):
            raise InvalidArgumentType(
                f"a search by vector needs a store with search_by_vector(), "
                f"got {type(self.store).__name__}"
            )
        return lambda n: by_vector(vector, k=n, scope=scope, where=where)

    def _own(self, item: MemoryItem) -> MemoryItem:
        return MemoryItem(item.content, self.name, item.score, item.metadata, id=item.id)

    async def _fuse(
        self,
        query: str,
        ranks: dict[str, dict[str, int]],
        halves: tuple[HybridHalf, ...],
        k: int,
    ) -> list[MemoryItem]:
        """``rrf_rerank`` over the pool, one item per chunk id, with each half's ranks.

        The pool lists the dense half's hits, then the lexical-only ones, so pool order
        (what settles ties ``ties`` leaves) puts dense first, as it always has.
        """
        pool: list[MemoryItem] = []
        table: dict[int, Mapping[str, int]] = {}
        seen: set[str] = set()
        for half in halves:
            for item in half.items:
                if item.id in seen or item.id is None:
                    continue
                seen.add(item.id)
                own = self._own(item)
                pool.append(own)
                table[id(own)] = ranks[item.id]
        token = _SOURCE_RANKS.set(lambda: table)
        try:
            return await rrf_rerank(
                query, pool, k=k, weights=self.weights, constant=self.constant, ties=self.ties
            )
        finally:
            _SOURCE_RANKS.reset(token)


async def _timed(
    name: str, read: _Read, n: int, keep: Callable[[Chunk], bool] | None
) -> HybridHalf:
    start = time.perf_counter()
    hits = await _widened(read, n, keep)
    items = tuple(scored_items(hits, name, n))
    chunks = tuple(chunk for _, chunk in hits)
    return HybridHalf(name, items, chunks, time.perf_counter() - start)


async def _widened(read: _Read, n: int, keep: Callable[[Chunk], bool] | None) -> _Hits:
    """The first ``n`` hits ``keep`` accepts: the read grows while hits are dropped and
    the store still has more (a short answer means it had no more)."""
    want = n
    while True:
        hits = list(await read(want))
        kept = hits if keep is None else [(s, c) for s, c in hits if keep(c)]
        if len(kept) >= n or len(hits) < want:
            return kept[:n]
        want *= 4
