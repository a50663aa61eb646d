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

    A structural protocol: any object with these three members is a source, no
    subclassing needed, which is how third-party backends plug in unchanged.

    Attributes:
        name: What every item this source returns carries as its ``source``, and how
            composites name the source in errors and traces.
    """

    name: str

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Recall up to ``k`` items for ``query``, best first, from ``ctx.scope`` only.

        Args:
            query: The text to recall for.
            k: The most items wanted (at least 1).
            ctx: The run's context; its scope is the tenant the answer belongs to.
            where: Metadata equality filter (a list value means any of); ``None``
                filters nothing.

        Returns:
            At most ``k`` items, scored on this source's own scale.
        """
        ...

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Store ``items`` under ``ctx.scope``; read-only sources refuse or ignore.

        Args:
            items: What to remember; an empty batch is a no-op.
            ctx: The run's context; its scope is the tenant the items belong to.
        """
        ...


class Reranker(Protocol):
    """Second pass over a merged pool: puts items from different scales on one axis.

    Awaited as ``await reranker(query, items, k=k)``; returns at most ``k`` items,
    best first. Any async callable of that shape works, so a partial of
    ``rrf_rerank`` or a framework's cross-encoder wrapped by a bridge plugs in alike.
    """

    async def __call__(
        self, query: str, items: list[MemoryItem], *, k: int
    ) -> list[MemoryItem]: ...


def accepts_writes(source: object) -> bool:
    """A third-party source that never heard of the marker counts as writable."""
    return bool(getattr(source, "accepts_writes", True))
