"""CompactedMemory: shrink each recalled item so the prompt budget holds."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.messages import Message
from agentkit.kernel.validate import check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.memory._fanout import _check_member, _settle_all
from agentkit.state.memory._forgetting import forgets, forward_delete, forward_forget
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._protocol import MemorySource, accepts_writes


@traced_memory
@dataclass
class CompactedMemory:
    """Run each item's content through a Compactor, one item at a time.

    A Compactor works on messages, so each item's content goes in as one
    ``Message("user", content)`` and the contents of what comes back, joined by
    newlines, become the new content; score, id, source and metadata are kept. Items
    are compacted concurrently. ``max_items`` caps the list (applied before compaction,
    which is one-to-one, so no work is spent on items that would be dropped).
    Writes, deletes and forgets pass straight through: compaction is a read-side
    concern.

    Args:
        inner: The source whose answers are compacted.
        compactor: Anything with ``async compact(messages, *, ctx)`` returning messages
            (a summariser, a truncator).
        max_items: Keep at most this many items, before compacting; ``None`` keeps all.
        name: The name items and traces carry; ``""`` takes the wrapped source's.

    Raises:
        InvalidArgumentType: A ``compactor`` without ``compact``, or a non-int
            ``max_items``.
        InvalidArgument: ``max_items`` below 1.
    """

    inner: MemorySource
    compactor: Any
    max_items: int | None = None
    name: str = ""

    def __post_init__(self) -> None:
        _check_member(self.inner, "inner")
        if not callable(getattr(self.compactor, "compact", None)):
            raise InvalidArgumentType(
                f"compactor must have an async compact(messages, *, ctx), "
                f"got {type(self.compactor).__name__}"
            )
        cap = self.max_items
        if cap is not None:
            if isinstance(cap, bool) or not isinstance(cap, int):
                raise InvalidArgumentType(
                    f"max_items must be an int or None, got {type(cap).__name__}"
                )
            if cap < 1:
                raise InvalidArgument(f"max_items must be >= 1 or None, got {cap!r}")
        if not self.name:
            self.name = self.inner.name

    @property
    def accepts_writes(self) -> bool:
        """Writes pass through untouched, so the wrapped source decides."""
        return accepts_writes(self.inner)

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Ask ``inner``, keep at most ``max_items``, then compact each item's content.

        Items are compacted concurrently and keep their order, score and provenance; if
        any compaction fails its error is raised, since a half-compacted answer would
        mix shortened and raw content.
        """
        query = check_query(query)
        k = check_k(k)
        where = check_where(where)
        items = list(await self.inner.query(query, k=k, ctx=ctx, where=where))
        if self.max_items is not None:
            items = items[: self.max_items]
        if not items:
            return []
        outcomes = await _settle_all([self._compact_one(item, ctx) for item in items])
        for ok, value, _ in outcomes:
            if not ok:
                raise value
        return [value for _, value, _ in outcomes]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Pass the items to ``inner`` unchanged: compaction shapes reads, not storage."""
        await self.inner.write(items, ctx=ctx)

    @property
    def forgets(self) -> bool:
        """Whether the wrapped source can delete and forget."""
        return forgets(self.inner)

    async def delete(self, ids: Sequence[str], *, ctx: Ctx) -> int:
        """Straight through, like a write: the ids are the wrapped source's own."""
        return await forward_delete(self.inner, self.name, ids, ctx)

    async def forget(
        self,
        where: Mapping[str, Any] | None = None,
        *,
        ctx: Ctx,
        all: bool = False,
    ) -> int:
        """Straight through to the wrapped source's forget."""
        return await forward_forget(self.inner, self.name, where, ctx, all)

    async def _compact_one(self, item: MemoryItem, ctx: Ctx) -> tuple[bool, Any, float]:
        try:
            messages = await self.compactor.compact([Message("user", item.content)], ctx=ctx)
            content = "\n".join(message.content for message in messages)
            return (True, dataclasses.replace(item, content=content), 0.0)
        except Exception as exc:
            return (False, exc, 0.0)
