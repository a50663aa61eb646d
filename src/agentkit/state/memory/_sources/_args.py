"""What the first-party sources share: the ctx and write-batch checks, and hits to items.

Both checks live elsewhere (the kernel's ``check_ctx``, ``check_items`` beside
MemoryItem) and are re-exported here so a source has one import for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentkit.kernel.validate import check_ctx
from agentkit.state.memory._item import MemoryItem, check_items

__all__ = ["check_ctx", "check_items", "scored_items"]


def scored_items(hits: Iterable[tuple[float, Any]], source: str, k: int) -> list[MemoryItem]:
    """A port's ``(score, chunk)`` pairs as items, cut to ``k``: the chunk id rides along."""
    return [
        MemoryItem(chunk.text, source, float(score), chunk.metadata, id=chunk.id)
        for score, chunk in list(hits)[:k]
    ]
