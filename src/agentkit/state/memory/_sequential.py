"""SequentialMemory: tiers tried in order until ``k`` items are in hand."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import CompositeQueryError
from agentkit.kernel.validate import check_choice, check_ids, check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.memory._fanout import (
    _ON_ERROR,
    OnErrorPolicy,
    _ask,
    _check_sources,
    _member_keys,
)
from agentkit.state.memory._forgetting import check_forget, forget_in_each, forgets
from agentkit.state.memory._item import MemoryItem, check_items
from agentkit.state.memory._protocol import MemorySource, accepts_writes


@traced_memory
@dataclass
class SequentialMemory:
    """Cache-then-fallback: a later tier is asked only for what earlier ones lacked.

    Each tier gets ``k - len(collected)``; a tier that fills the quota ends the walk,
    so the expensive source is not called when the cheap one answered. Results keep
    tier order. There is no dedupe: collapsing a copy afterwards would leave a short
    list with no tier left to backfill from. Wrap the chain in
    ``CompositeMemory([chain], dedupe="id")`` when one arm's dedupe is enough.

    ``on_error="skip"`` lets a failing tier fall through to the next, leaving a
    ``memory.source_failed`` observation; if every tier that was tried failed the
    query raises all the same. A tier answering anything but a list of MemoryItems
    has failed too (InvalidArgumentType naming it), and is never handed on.
    ``"raise"`` wraps the first failure in CompositeQueryError, with what earlier
    tiers returned under ``succeeded``.

    Args:
        sources: The tiers, cheapest first; writes reach the first one only,
            ``delete``/``forget`` every tier that can forget.
        name: This chain's name in attribution, errors and traces.
        on_error: ``"raise"`` or ``"skip"`` (see ``OnErrorPolicy``).

    Raises:
        InvalidArgument: An unknown ``on_error`` value.
        InvalidArgumentType: A tier without ``query()`` and ``write()``.
    """

    sources: list[MemorySource]
    name: str = "sequential"
    on_error: OnErrorPolicy = field(default="raise", kw_only=True)

    def __post_init__(self) -> None:
        self.sources = _check_sources(self.sources)
        check_choice("on_error", self.on_error, _ON_ERROR)

    @property
    def accepts_writes(self) -> bool:
        """The first tier's answer: it is the only one a write reaches (none: False)."""
        return bool(self.sources) and accepts_writes(self.sources[0])

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Walk the tiers in order, asking each only for the ``k`` still missing.

        Stops at the first tier that completes the answer, so later (costlier) tiers run
        only on a shortfall; failures follow ``on_error``.
        """
        query = check_query(query)
        k = check_k(k)
        where = check_where(where)
        sources = list(self.sources)
        keys = _member_keys(sources)
        collected: list[MemoryItem] = []
        succeeded: dict[str, list[MemoryItem]] = {}
        failed: dict[str, BaseException] = {}
        for key, source in zip(keys, sources, strict=True):
            need = k - len(collected)
            if need <= 0:
                break
            start = time.monotonic()
            try:
                got = await _ask(source, key, query, need, ctx, where)
            except Exception as exc:
                if self.on_error == "raise":
                    raise CompositeQueryError(
                        succeeded=succeeded, failed={key: exc}
                    ) from exc
                failed[key] = exc
                ctx.observe(
                    "memory.source_failed",
                    source=key,
                    error=type(exc).__name__,
                    elapsed=time.monotonic() - start,
                )
                continue
            succeeded[key] = got
            collected.extend(got[:need])
        if failed and not succeeded:
            raise CompositeQueryError(succeeded=succeeded, failed=failed)
        return collected

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Write to the first tier only; later tiers are read-only from here.

        An empty write returns before any tier is touched. With no tiers there is no
        target: the call stores nothing, which ``accepts_writes = False`` declares.
        """
        batch = check_items(items)
        if not batch or not self.sources:
            return
        await self.sources[0].write(batch, ctx=ctx)

    @property
    def forgets(self) -> bool:
        """True when at least one tier can delete and forget."""
        return any(forgets(source) for source in self.sources)

    async def delete(self, ids: Sequence[str], *, ctx: Ctx) -> int:
        """Delete ``ids`` from every tier that can forget, at once; the total removed.

        Writes reach the first tier only, but a later tier may hold the same record
        (it was there first, or was filled another way), and the walk would serve it
        from there once the first tier lost it: a forgotten record has to go from
        every tier. Same rule as ``CompositeMemory.delete``: read-only tiers are
        skipped, a writable tier that cannot forget is reported (CompositeWriteError).
        """
        wanted = check_ids(ids)
        if not wanted:
            return 0
        return await forget_in_each(
            self.sources, ctx, "delete", lambda s: s.delete(wanted, ctx=ctx)
        )

    async def forget(
        self,
        where: Mapping[str, Any] | None = None,
        *,
        ctx: Ctx,
        all: bool = False,
    ) -> int:
        """Forget in every tier that can, at once; the total removed (see ``delete``)."""
        checked = check_forget(where, all)
        return await forget_in_each(
            self.sources, ctx, "forget", lambda s: s.forget(checked, ctx=ctx, all=all)
        )
