"""The MemorySource and Reranker protocols."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from agentkit.kernel.ctx import Ctx
from agentkit.state.memory._item import MemoryItem


@runtime_checkable
class MemorySource(Protocol):
    """Anything the agent can recall from.

    Implementations must honour ``ctx.scope`` when the backend spans tenants.
    ``accepts_writes`` is optional and read with ``getattr(..., True)``.
    """

    name: str

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]: ...

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None: ...


class Reranker(Protocol):
    """Second pass over a merged pool: puts items from different scales on one axis.

    Awaited as ``await reranker(query, items, k=k)``; returns at most ``k`` items,
    best first.
    """

    async def __call__(
        self, query: str, items: list[MemoryItem], *, k: int
    ) -> list[MemoryItem]: ...


def accepts_writes(source: object) -> bool:
    """A third-party source that never heard of the marker counts as writable."""
    return bool(getattr(source, "accepts_writes", True))
