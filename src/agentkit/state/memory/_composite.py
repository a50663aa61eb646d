"""CompositeMemory: ask every source at once, merge the copies, rerank, cut.

The fan-out machinery it shares with SequentialMemory and the decorators lives in
``_fanout``; the merge in ``_merge``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, get_args

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import (
    CompositeQueryError,
    CompositeWriteError,
    InvalidArgumentType,
)
from agentkit.kernel.validate import check_choice, check_ids, check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.memory._fanout import (
    _ON_ERROR,
    OnErrorPolicy,
    _ask,
    _bind,
    _check_sources,
    _check_timeout,
    _guarded,
    _member_keys,
    _Outcome,
    _settle_all,
)
from agentkit.state.memory._forgetting import check_forget, forget_in_each, forgets
from agentkit.state.memory._item import MemoryItem, check_items
from agentkit.state.memory._merge import (
    DedupeMode,
    merge,
    merge_unstamped,
    rank_thunk,
    stamp_survivors,
)
from agentkit.state.memory._protocol import MemorySource, Reranker, accepts_writes
from agentkit.state.memory._rerank import _SOURCE_RANKS, score_sort_rerank

_DEDUPE_MODES: tuple[object, ...] = (*get_args(DedupeMode), None)


@traced_memory(member_timeout="timeout")
@dataclass
class CompositeMemory:
    """Parallel fan-out across many sources, merged into one top-k.

    Every member is asked for ``k`` items concurrently (each bounded by ``timeout``
    seconds). The pool is deduplicated first (``dedupe``), because a reranker scoring
    two copies of one passage pays twice and then spends two top-k slots on it; the
    reranker (default ``score_sort_rerank``) then orders it and the list is cut
    to ``k``. Items that did not collide come back as the very objects their backend
    returned; a survivor of a collision is a copy stamped ``dedupe_sources`` and
    ``dedupe_count``.

    Failures are reported per member name. When two members share a name, each of
    them is reported as ``f"{name}#{index}"`` (its position in ``sources``) so neither
    entry overwrites the other in the error's dicts or on the timeline. A member that
    answers something other than a list of MemoryItems (strings, dicts, ``None``) has
    failed, with InvalidArgumentType naming it, under either policy.

    Observation emitted: ``memory.source_failed`` (source, error type name, elapsed
    seconds), once per failing member, under ``on_error="skip"``.

    Args:
        sources: The members, asked concurrently. Their order breaks score ties and
            numbers members that share a name.
        reranker: Orders the deduplicated pool. ``None`` means ``score_sort_rerank``
            (raw scores, descending), which suits members on one scale; pass
            ``rrf_rerank`` when they score on different scales.
        name: This composite's own name, for attribution when it is nested in another.
        dedupe: ``"id"`` merges copies that share an id or have identical content,
            ``"content"`` merges identical content only, ``None`` keeps every copy
            (see ``DedupeMode``).
        on_error: ``"raise"`` or ``"skip"`` (see ``OnErrorPolicy``).
        timeout: Seconds each member may take per call; a member past it has failed.
            ``None`` waits as long as the slowest member.

    Raises:
        InvalidArgument: An unknown ``dedupe`` or ``on_error`` value, or a timeout that is
            not a positive number of seconds.
        InvalidArgumentType: A member without ``query()`` and ``write()``, or a reranker
            that is not callable.
    """

    sources: list[MemorySource]
    reranker: Reranker | None = None
    name: str = "composite"
    dedupe: DedupeMode | None = "id"
    on_error: OnErrorPolicy = field(default="raise", kw_only=True)
    timeout: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        self.sources = _check_sources(self.sources)
        check_choice("dedupe", self.dedupe, _DEDUPE_MODES)
        check_choice("on_error", self.on_error, _ON_ERROR)
        self.timeout = _check_timeout(self.timeout)
        if self.reranker is not None and not callable(self.reranker):
            raise InvalidArgumentType(
                f"reranker must be an async callable or None, got {type(self.reranker).__name__}"
            )

    @property
    def accepts_writes(self) -> bool:
        """True when at least one member can commit.

        Composites nest, so without this an all-read-only composite inside another
        would be filed under ``accepted`` one level up. ``any(())`` is False: an empty
        composite stores nothing.
        """
        return any(accepts_writes(source) for source in self.sources)

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Ask every member for ``k`` items at once; dedupe, rerank, keep the best ``k``.

        Args:
            query: The text to recall for.
            k: How many items to return at most; each member is asked for ``k`` too.
            ctx: The run's context; its scope reaches every member.
            where: Metadata equality filter, handed to every member as is.

        Returns:
            At most ``k`` items, best first, as the reranker ordered them.

        Raises:
            CompositeQueryError: Under ``on_error="raise"``, a member failed or timed
                out (``succeeded`` and ``failed`` name which); under ``"skip"``, all did.
            InvalidArgument: ``k`` below 1.
            InvalidArgumentType: A non-str query, a non-int ``k``, or a ``where`` that is
                not a mapping.
        """
        query = check_query(query)
        k = check_k(k)
        where = check_where(where)
        sources = list(self.sources)
        if not sources:
            return []
        timeout = self.timeout
        keys = _member_keys(sources)
        outcomes = await _settle_all(
            [
                _guarded(_bind(_ask, source, key, query, k, ctx, where), timeout)
                for key, source in zip(keys, sources, strict=True)
            ]
        )
        batches = _collect(keys, outcomes, ctx, self.on_error)
        return await _rank(query, batches, k, self.dedupe, self.reranker)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Broadcast to every member at once and report the split.

        Every member settles before anything is raised, so the error's ``accepted``
        / ``refused`` / ``failed`` buckets say exactly which backends committed; a
        member that returns but declares ``accepts_writes = False`` is ``refused``,
        never ``accepted``. An empty write touches no member.
        """
        batch = check_items(items)
        if not batch:
            return
        sources = list(self.sources)
        if not sources:
            return
        outcomes = await _settle_all(
            [_guarded(_bind(_put, source, batch, ctx), self.timeout) for source in sources]
        )
        accepted: list[str] = []
        refused: list[str] = []
        failed: dict[str, BaseException] = {}
        for key, source, (ok, value, _elapsed) in zip(
            _member_keys(sources), sources, outcomes, strict=True
        ):
            if not ok:
                failed[key] = value
            elif not accepts_writes(source):
                refused.append(key)
            else:
                accepted.append(key)
        if failed:
            raise CompositeWriteError(accepted=accepted, refused=refused, failed=failed)

    @property
    def forgets(self) -> bool:
        """True when at least one member can delete and forget."""
        return any(forgets(source) for source in self.sources)

    async def delete(self, ids: Sequence[str], *, ctx: Ctx) -> int:
        """Delete ``ids`` from every member that can forget, at once; the total removed.

        Ids are each backend's own keys, so the ids go to every forgetting member: use
        ids recalled from these members (``MemoryItem.id``), whose keyspaces agree.
        See ``forget`` for the per-member counts and what makes it raise.
        """
        wanted = check_ids(ids)
        if not wanted:
            return 0
        return await forget_in_each(
            self.sources, ctx, "delete", lambda s: s.delete(wanted, ctx=ctx), self.timeout
        )

    async def forget(
        self,
        where: Mapping[str, Any] | None = None,
        *,
        ctx: Ctx,
        all: bool = False,
    ) -> int:
        """Forget in every member that can, at once; returns the total removed.

        Each member's own count lands on the timeline as a ``memory.forgot``
        observation (source, n). Members that store nothing written here (read-only,
        ``accepts_writes`` False) are skipped. A member that accepts writes but cannot
        forget still holds what the composite wrote to it, so, like a member that
        failed, it is reported: once all have settled, CompositeWriteError with
        ``accepted`` naming the members that did forget.
        """
        checked = check_forget(where, all)
        return await forget_in_each(
            self.sources,
            ctx,
            "forget",
            lambda s: s.forget(checked, ctx=ctx, all=all),
            self.timeout,
        )


async def _rank(
    query: str,
    batches: list[list[MemoryItem]],
    k: int,
    dedupe: DedupeMode | None,
    reranker: Reranker | None,
) -> list[MemoryItem]:
    """Everything after the fan-out: pool, merge the copies, rerank, cut to ``k``."""
    pool = list(chain.from_iterable(batches))
    if reranker is None or reranker is score_sort_rerank:
        # It reads only scores and positions, so only the survivors that make the
        # cut are worth stamping.
        standins, pending = merge_unstamped(pool, dedupe)
        ranked = await score_sort_rerank(query, standins, k=k)
        return stamp_survivors(ranked[:k], pending)
    merged, roots, survivors = merge(pool, dedupe)
    token = _SOURCE_RANKS.set(rank_thunk(batches, pool, roots, survivors))
    try:
        ranked = await reranker(query, merged, k=k)
    finally:
        _SOURCE_RANKS.reset(token)
    return list(ranked)[:k]


async def _put(source: MemorySource, batch: list[MemoryItem], ctx: Ctx) -> None:
    await source.write(list(batch), ctx=ctx)


def _collect(
    keys: list[str],
    outcomes: list[_Outcome],
    ctx: Ctx,
    on_error: OnErrorPolicy,
) -> list[list[MemoryItem]]:
    """Split outcomes into batches and failures; apply the policy."""
    if all(ok for ok, _, _ in outcomes):
        return [value for _, value, _ in outcomes]
    succeeded: dict[str, list[MemoryItem]] = {}
    failed: dict[str, BaseException] = {}
    batches: list[list[MemoryItem]] = []
    for key, (ok, value, elapsed) in zip(keys, outcomes, strict=True):
        if ok:
            succeeded[key] = value
            batches.append(value)
            continue
        failed[key] = value
        if on_error == "skip":
            ctx.observe(
                "memory.source_failed", source=key, error=type(value).__name__, elapsed=elapsed
            )
    if on_error == "raise" or not succeeded:
        raise CompositeQueryError(succeeded=succeeded, failed=failed)
    return batches
