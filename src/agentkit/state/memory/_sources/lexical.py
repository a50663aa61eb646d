"""LexicalMemory: the word-matching half of hybrid retrieval, over any LexicalPort."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.kernel.validate import check_k, check_metadata_where, check_query
from agentkit.kernel.where import merge_where
from agentkit.observability import traced_memory
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._sources._args import check_ctx, check_items, scored_items


@traced_memory(kind="client")
@dataclass
class LexicalMemory:
    """A read-side MemorySource over a store's ``lexical_search`` (BM25 and the like).

    Item ids are the store's chunk ids — the same keyspace a VectorMemory over the same
    store reports — so a CompositeMemory with the default ``dedupe="id"`` merges the two
    halves' copies of one chunk into one item. Scores are the store's own lexical scale
    (higher is better, unbounded), which is why such a pair wants ``rrf_rerank`` rather
    than a raw score sort.

    ``accepts_writes`` is False and ``write`` stores nothing: the rows this source reads
    are written by the VectorMemory over the same store (the store embeds and indexes
    words in one transaction). A composite files this member under ``refused``.
    ``where`` is a default filter; a call-time ``where`` merges over it key by key.

    Args:
        store: A store with ``lexical_search`` (a ``LexicalPort``: the SQLite and
            PostgreSQL stores).
        name: The name items and traces carry.
        where: A filter applied to every query, under the call's own.

    Raises:
        InvalidArgumentType: A store without ``lexical_search``, or an empty name.
    """

    store: Any
    name: str = "lexical"
    where: dict[str, Any] | None = None

    accepts_writes = False

    def __post_init__(self) -> None:
        if not callable(getattr(self.store, "lexical_search", None)):
            raise InvalidArgumentType(
                f"store must provide lexical_search() (a LexicalPort), "
                f"got {type(self.store).__name__}"
            )
        if not isinstance(self.name, str) or not self.name:
            raise InvalidArgumentType("name must be a non-empty str")
        self.where = check_metadata_where(self.where)

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Top-k by the store's lexical ranking within ``ctx.scope``, best first."""
        query = check_query(query)
        k = check_k(k)
        call_where = check_metadata_where(where)
        ctx = check_ctx(ctx)
        merged = merge_where(self.where, call_where)
        hits = await self.store.lexical_search(query, k=k, scope=ctx.scope, where=merged)
        return scored_items(hits, self.name, k)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Validate and drop: the paired VectorMemory is where writes land."""
        check_items(items)
        check_ctx(ctx)
