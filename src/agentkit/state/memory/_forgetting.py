"""Forgetting through the memory layer: who can, the argument rule, and forwarding.

A source forgets when it has ``delete(ids, *, ctx)`` and ``forget(where, *, ctx,
all=False)``, both returning how many records went. Decorators always define the two
methods (so they can guard, refuse or invalidate), which is why they also answer
``forgets``: whether the source behind them can, so a composite asks only those.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import (
    CompositeWriteError,
    InvalidArgument,
    InvalidArgumentType,
    StoreError,
)
from agentkit.kernel.validate import check_where
from agentkit.state.memory._fanout import _bind, _guarded, _member_keys, _settle_all
from agentkit.state.memory._protocol import accepts_writes


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


async def forget_in_each(
    sources: Sequence[object],
    ctx: Ctx,
    op: str,
    call: Callable[[Any], Awaitable[int]],
    limit: float | None = None,
) -> int:
    """``call(member)`` on every member that forgets, at once; the total removed.

    The one rule for anything holding several sources (CompositeMemory,
    SequentialMemory): each member's count lands on the timeline as
    ``memory.forgot`` (source, n); read-only members are skipped, since nothing
    written through the holder reached them; a member that accepts writes but cannot
    forget may still hold the record, so it is reported like a failure. Every member
    settles first, then CompositeWriteError names who forgot (``accepted``) and who
    did not (``failed``). ``limit``: seconds each member may take (``None``: no bound).
    """
    members = list(sources)
    keys = _member_keys(members)
    chosen = [(k, s) for k, s in zip(keys, members, strict=True) if forgets(s)]
    outcomes = (
        await _settle_all([_guarded(_bind(call, s), limit) for _, s in chosen])
        if chosen
        else []
    )
    total = 0
    accepted: list[str] = []
    failed: dict[str, BaseException] = {}
    for (key, _), (ok, value, _elapsed) in zip(chosen, outcomes, strict=True):
        if ok and (isinstance(value, bool) or not isinstance(value, int)):
            ok, value = False, InvalidArgumentType(
                f"{op} must return how many records went (an int), got "
                f"{type(value).__name__}"
            )
        if ok:
            accepted.append(key)
            total += int(value)
            ctx.observe("memory.forgot", source=key, n=int(value))
        else:
            failed[key] = value
    for key, source in zip(keys, members, strict=True):
        if not forgets(source) and accepts_writes(source):
            failed[key] = StoreError(
                f"{type(source).__name__} cannot {op}: what was written to it stays"
            )
    if failed:
        raise CompositeWriteError(accepted=accepted, failed=failed)
    return total
