"""Checks the first-party sources share beyond _validate: ctx and write batches."""

from __future__ import annotations

from collections.abc import Iterable

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.state.memory._item import MemoryItem


def check_ctx(ctx: object) -> Ctx:
    """A missing or wrong ctx would otherwise surface as an AttributeError on .scope."""
    if not isinstance(ctx, Ctx):
        raise InvalidArgumentType(f"ctx must be a Ctx, got {type(ctx).__name__}")
    return ctx


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
