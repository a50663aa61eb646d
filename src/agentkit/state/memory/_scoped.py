"""ScopedMemory: refuse to run without the tenant boundary the caller demands."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgumentType, ScopeViolation
from agentkit.kernel.validate import check_ctx, check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.memory._fanout import _check_member
from agentkit.state.memory._forgetting import forgets, forward_delete, forward_forget
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._protocol import MemorySource, accepts_writes


@traced_memory
@dataclass
class ScopedMemory:
    """Fail-loud tenant guard: every query and write runs ``enforce(ctx)`` first.

    The default demands a complete scope (org and domain both set). A custom
    ``enforce`` (sync or async) may pin a stricter rule; a falsy answer or any
    exception it raises becomes ScopeViolation (a PermissionError) with the original
    chained, and the wrapped source is not touched. ``name=""`` mirrors the wrapped
    source so the guard is invisible in attribution.

    Args:
        inner: The source to guard.
        enforce: ``enforce(ctx)`` (sync or async) answering whether the call may go
            ahead; ``None`` demands a complete scope.
        name: The name items and traces carry; ``""`` takes the wrapped source's.

    Raises:
        InvalidArgumentType: ``enforce`` is neither callable nor ``None``.
        ScopeViolation: From ``query``, ``write``, ``delete`` and ``forget``, when the
            check refuses the call's ``ctx``; nothing was read or written.
    """

    inner: MemorySource
    enforce: Callable[[Ctx], Any] | None = None
    name: str = ""

    def __post_init__(self) -> None:
        _check_member(self.inner, "inner")
        if self.enforce is not None and not callable(self.enforce):
            raise InvalidArgumentType(
                f"enforce must be a callable or None, got {type(self.enforce).__name__}"
            )
        if not self.name:
            self.name = self.inner.name

    @property
    def accepts_writes(self) -> bool:
        """The wrapped source's answer: a guarded read-only source is still read-only."""
        return accepts_writes(self.inner)

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Validate the arguments, run the tenant check, and only then ask ``inner``.

        The check comes before the wrapped source runs, so a refused ``ctx`` reads nothing.
        """
        check_query(query)
        check_k(k)
        check_where(where)
        await self._guard(ctx)
        return await self.inner.query(query, k=k, ctx=ctx, where=where)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Run the tenant check, then forward the items; a refused ``ctx`` writes nothing."""
        await self._guard(ctx)
        await self.inner.write(items, ctx=ctx)

    @property
    def forgets(self) -> bool:
        """Whether the wrapped source can delete and forget."""
        return forgets(self.inner)

    async def delete(self, ids: Sequence[str], *, ctx: Ctx) -> int:
        """The tenant check first, then the wrapped source's delete."""
        await self._guard(ctx)
        return await forward_delete(self.inner, self.name, ids, ctx)

    async def forget(
        self,
        where: Mapping[str, Any] | None = None,
        *,
        ctx: Ctx,
        all: bool = False,
    ) -> int:
        """The tenant check first, then the wrapped source's forget."""
        await self._guard(ctx)
        return await forward_forget(self.inner, self.name, where, ctx, all)

    async def _guard(self, ctx: Ctx) -> None:
        ctx = check_ctx(ctx)  # no ctx is a named error, not an AttributeError on .scope
        if self.enforce is None:
            if not ctx.scope.complete:
                raise ScopeViolation(
                    f"memory source {self.name!r} needs a complete scope "
                    f"(org_id and domain_id set), got {ctx.scope!r}"
                )
            return
        try:
            verdict = self.enforce(ctx)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except Exception as exc:
            raise ScopeViolation(
                f"memory source {self.name!r}: scope check raised {type(exc).__name__}: {exc}"
            ) from exc
        if not verdict:
            raise ScopeViolation(
                f"memory source {self.name!r}: scope check refused {ctx.scope!r}"
            )
