"""The memory stack the CLI, eval and the benchmarks query: one place, one recipe.

Hybrid is ``CompositeMemory([dense, lexical], reranker=rrf_rerank)`` with the default
``dedupe="id"`` and RRF's constant at ``RRF_CONSTANT`` (20, not the textbook 60: with
two strong halves the head of each list deserves more trust; on SciFact's train split
it lifts nDCG@10 from 0.710 to 0.717, on both halves of the query set). Exact ties of
fused score, which mirrored ranks make common, go by the lexical half's order
(``HYBRID_TIES``; on SciFact train another +0.011, again on both halves). Both halves
read the same store, so a chunk found by both is one item whose fused score adds its
two reciprocal ranks. Each half is read ``depth`` deep before fusion (a chunk ranked
30th by words but 2nd by meaning must be in the pool to be rescued), and only the top
``k`` of the fused list is returned.

Writing a recalled item back (``memory.write``) updates its row: the survivor is
usually the lexical copy, and VectorMemory takes its id as its own because the dense
copy that collapsed into it had the same one (the two halves share the store's keys).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentkit.kernel.ctx import Ctx
from agentkit.state.memory import (
    HYBRID_RRF_CONSTANT,
    HYBRID_TIES,
    CompositeMemory,
    LexicalMemory,
    MemoryItem,
    MemorySource,
    VectorMemory,
    rrf_rerank,
)

Mode = Literal["dense", "lexical", "hybrid"]
MODES: tuple[Mode, ...] = ("dense", "lexical", "hybrid")
RRF_CONSTANT = HYBRID_RRF_CONSTANT  # the CLI's name for it (query --explain prints it)


@dataclass
class Traced:
    """A pass-through source that reads ``depth`` deep and remembers what it saw.

    ``last`` and ``elapsed`` describe the most recent query — enough for ``--explain``;
    do not share one instance between concurrent queries you want to explain.
    """

    inner: MemorySource
    depth: int = 0
    name: str = field(init=False)
    last: list[MemoryItem] = field(default_factory=list, init=False)
    elapsed: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.name = self.inner.name

    @property
    def accepts_writes(self) -> bool:
        return bool(getattr(self.inner, "accepts_writes", True))

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        start = time.perf_counter()
        items = await self.inner.query(query, k=max(k, self.depth), ctx=ctx, where=where)
        self.elapsed = time.perf_counter() - start
        self.last = list(items)
        return self.last

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        await self.inner.write(items, ctx=ctx)


@dataclass
class Stack:
    """The queryable memory plus the traced halves behind it."""

    memory: MemorySource
    halves: list[Traced]


class ExactSearch:
    """The store with its dense search made exact (``query --exact``): every vector of
    the scope is compared with the query instead of the approximate index's candidates.
    Everything else passes through to the store."""

    def __init__(self, store: Any) -> None:
        self._store = store

    async def search(
        self, query: str, *, k: int, scope: Any, where: Mapping[str, Any] | None = None
    ) -> Any:
        return await self._store.search(query, k=k, scope=scope, where=where, exact=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def build(
    store: Any,
    mode: Mode,
    *,
    depth: int = 50,
    weights: Mapping[str, float] | None = None,
    exact: bool = False,
) -> Stack:
    """``exact``: the dense half compares the query with every vector (see ExactSearch)."""
    dense = Traced(VectorMemory(ExactSearch(store) if exact else store, name="dense"), depth)
    lexical = Traced(LexicalMemory(store, name="lexical"), depth)
    if mode == "dense":
        return Stack(dense, [dense])
    if mode == "lexical":
        return Stack(lexical, [lexical])
    reranker = functools.partial(
        rrf_rerank, weights=weights, constant=RRF_CONSTANT, ties=HYBRID_TIES
    )
    memory = CompositeMemory([dense, lexical], reranker=reranker, name="hybrid")
    return Stack(memory, [dense, lexical])
