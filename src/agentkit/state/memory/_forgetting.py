"""Forgetting through the memory layer: who can, the argument rule, and forwarding.

A source forgets when it has ``delete(ids, *, ctx)`` and ``forget(where, *, ctx,
all=False)``, both returning how many records went. Decorators always define the two
methods (so they can guard, refuse or invalidate), which is why they also answer
``forgets``: whether the source behind them can, so a composite asks only those.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, StoreError
from agentkit.kernel.validate import check_where


def forgets(source: object) -> bool:
    """True when ``source`` can delete and forget (its ``forgets`` marker, else duck)."""
    marker = getattr(source, "forgets", None)
    if isinstance(marker, bool):
        return marker
    return callable(getattr(source, "delete", None)) and callable(
        getattr(source, "forget", None)
    )


def check_forget(where: object, everything: object) -> dict[str, Any] | None:
    """``forget``'s arguments: a non-empty ``where``, or none and ``all=True``.

    Neither is refused (a filter that went missing must not become "everything"), and
    so is both (which of the two was meant?).
    """
    if not isinstance(everything, bool):
        raise InvalidArgumentType(f"all must be a bool, got {type(everything).__name__}")
    checked = check_where(where)
    if everything and checked:
        raise InvalidArgument("forget takes a where or all=True, not both")
    if not everything and not checked:
        raise InvalidArgument(
            "forget needs a non-empty where; to forget the whole scope pass all=True"
        )
    return checked


def _forgetter(source: object, label: str) -> Any:
    if not forgets(source):
        raise StoreError(
            f"memory source {label!r} ({type(source).__name__}) cannot delete or forget"
        )
    return source


async def forward_delete(source: object, label: str, ids: object, ctx: Ctx) -> int:
    """``source.delete`` when it can, else StoreError naming it."""
    return int(await _forgetter(source, label).delete(ids, ctx=ctx))


async def forward_forget(
    source: object, label: str, where: Mapping[str, Any] | None, ctx: Ctx, everything: bool
) -> int:
    """``source.forget`` when it can, else StoreError naming it."""
    return int(await _forgetter(source, label).forget(where, ctx=ctx, all=everything))
