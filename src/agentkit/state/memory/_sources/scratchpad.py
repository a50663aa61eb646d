"""ScratchpadMemory: the run's working notes as a queryable source."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.context import WorkingContext
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._sources._args import check_ctx, check_items
from agentkit.vector.port import matches_where


@traced_memory
@dataclass
class ScratchpadMemory:
    """A MemorySource view on ``WorkingContext.scratchpad``.

    A case-insensitive substring of the query must appear in the key or in
    ``str(value)``; ``""`` matches every entry. Results keep insertion order,
    carry ``metadata={"key": key}`` so a writer can address the entry, and have
    no score or id: a scratchpad neither ranks nor has stable record keys.
    ``where`` is matched against that metadata: ``where={"key": ...}`` selects
    entries by key (a list means any of them); any other key matches nothing.

    Args:
        context: The working context whose scratchpad is read and written.
        name: The name items and traces carry.
    """

    context: WorkingContext
    name: str = "scratchpad"

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Entries whose key or value contains the query, in insertion order, at most ``k``."""
        query = check_query(query)
        k = check_k(k)
        filters = check_where(where)
        check_ctx(ctx)
        needle = query.lower()
        out: list[MemoryItem] = []
        for key, value in list(self.context.scratchpad.items()):
            text = str(value)
            if needle and needle not in str(key).lower() and needle not in text.lower():
                continue
            if filters and not matches_where({"key": key}, filters):
                continue
            out.append(MemoryItem(text, self.name, None, {"key": key}))
            if len(out) == k:
                break
        return out

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Store each item's content under ``metadata["key"]``.

        Every item is checked before any is stored, so a batch with one bad item
        leaves the scratchpad exactly as it was.
        """
        batch = check_items(items)
        check_ctx(ctx)
        for i, item in enumerate(batch):
            if "key" not in item.metadata:
                raise InvalidArgument(f"items[{i}].metadata['key'] is required by ScratchpadMemory")
            if not isinstance(item.metadata["key"], str):
                raise InvalidArgumentType(
                    f"items[{i}].metadata['key'] must be a str, "
                    f"got {type(item.metadata['key']).__name__}"
                )
        for item in batch:
            self.context.scratchpad[item.metadata["key"]] = item.content
