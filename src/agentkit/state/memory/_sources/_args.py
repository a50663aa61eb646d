"""Checks the first-party sources share: ctx (from the kernel) and write batches."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentkit.kernel.errors import InvalidArgumentType
from agentkit.kernel.validate import check_ctx
from agentkit.state.memory._item import MemoryItem

__all__ = ["check_ctx", "check_items", "scored_items"]


def check_items(items: object) -> list[MemoryItem]:
    """Materialise a write batch, refusing it whole if any element is not a MemoryItem."""
    if isinstance(items, (str, bytes, MemoryItem)) or not isinstance(items, Iterable):
        raise InvalidArgumentType(
            f"items must be an iterable of MemoryItem, got {type(items).__name__}"
        )
    batch = list(items)
    for i, item in enumerate(batch):
        if not isinstance(item, MemoryItem):
            raise InvalidArgumentType(f"items[{i}] must be a MemoryItem, got {type(item).__name__}")
    return batch


def scored_items(hits: Iterable[tuple[float, Any]], source: str, k: int) -> list[MemoryItem]:
    """A port's ``(score, chunk)`` pairs as items, cut to ``k``: the chunk id rides along."""
    return [
        MemoryItem(chunk.text, source, float(score), chunk.metadata, id=chunk.id)
        for score, chunk in list(hits)[:k]
    ]
