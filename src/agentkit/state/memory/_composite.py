"""CompositeMemory: ask every source at once, merge the copies, rerank, cut.

Also home of the two helpers the other composites share: ``_settle_all`` (run
coroutines concurrently, never leave one running) and ``_member_keys`` (the names a
failure is reported under).
"""

from __future__ import annotations

import asyncio
import math
import numbers
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Literal, TypeVar, get_args

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import (
    CompositeQueryError,
    CompositeWriteError,
    InvalidArgument,
    InvalidArgumentType,
)
from agentkit.kernel.validate import check_choice, check_k, check_query, check_where
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._merge import (
    DedupeMode,
    merge,
    merge_unstamped,
    rank_thunk,
    stamp_survivors,
)
from agentkit.state.memory._protocol import MemorySource, Reranker, accepts_writes
from agentkit.state.memory._rerank import _SOURCE_RANKS, score_sort_rerank

OnErrorPolicy = Literal["raise", "skip"]
"""What a composite does when a member's query fails or times out.

``"raise"``: wait for every member, then raise CompositeQueryError with the split.
``"skip"``: answer from the healthy members and put a ``memory.source_failed``
observation on the timeline per casualty; if every member failed, raise anyway, since
an empty answer would hide an outage.
"""

_DEDUPE_MODES: tuple[object, ...] = (*get_args(DedupeMode), None)
_ON_ERROR: tuple[object, ...] = get_args(OnErrorPolicy)

T = TypeVar("T")
# (ok, value-or-exception, elapsed seconds)
_Outcome = tuple[bool, Any, float]


@dataclass
class CompositeMemory:
    """Parallel fan-out across many sources, merged into one top-k.

    Every member is asked for ``k`` items concurrently (each bounded by ``timeout``
    seconds). The pool is deduplicated first (``dedupe``), because a reranker scoring
    two copies of one passage pays twice and then spends two top-k slots on it; the
    reranker (default :func:`score_sort_rerank`) then orders it and the list is cut
    to ``k``. Items that did not collide come back as the very objects their backend
    returned; a survivor of a collision is a copy stamped ``dedupe_sources`` and
    ``dedupe_count``.

    Failures are reported per member name. When two members share a name, each of
    them is reported as ``f"{name}#{index}"`` (its position in ``sources``) so neither
    entry overwrites the other in the error's dicts or on the timeline.

    Observation emitted: ``memory.source_failed`` (source, error type name, elapsed
    seconds), once per failing member, under ``on_error="skip"``.
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
        query = check_query(query)
        k = check_k(k)
        where = check_where(where)
        sources = list(self.sources)
        if not sources:
            return []
        timeout = self.timeout
        outcomes = await _settle_all(
            [
                _guarded(_bind(_ask, source, query, k, ctx, where), timeout)
                for source in sources
            ]
        )
        batches = _collect(sources, outcomes, ctx, self.on_error)
        return await _rank(query, batches, k, self.dedupe, self.reranker)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Broadcast to every member at once and report the split.

        Every member settles before anything is raised, so the error's ``accepted``
        / ``refused`` / ``failed`` buckets say exactly which backends committed; a
        member that returns but declares ``accepts_writes = False`` is ``refused``,
        never ``accepted``. An empty write touches no member.
        """
        batch = _materialise(items)
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


async def _ask(
    source: MemorySource, query: str, k: int, ctx: Ctx, where: dict[str, Any] | None
) -> list[MemoryItem]:
    # Each member gets its own copy of ``where`` so one cannot edit another's filter.
    return list(
        await source.query(query, k=k, ctx=ctx, where=None if where is None else dict(where))
    )


async def _put(source: MemorySource, batch: list[MemoryItem], ctx: Ctx) -> None:
    await source.write(list(batch), ctx=ctx)


def _bind(fn: Callable[..., Awaitable[T]], *args: Any) -> Callable[[], Awaitable[T]]:
    return lambda: fn(*args)


async def _guarded(call: Callable[[], Awaitable[T]], limit: float | None) -> _Outcome:
    """Turn a member's result or failure into a value, so siblings keep running.

    The member is called inside the guard, so even a synchronous raise on call is
    captured as that member's failure.

    Only ``Exception`` is captured. Cancellation of the caller propagates; a
    CancelledError a member raises on its own (nobody cancelled us) counts as that
    member's failure.
    """
    start = time.monotonic()
    try:
        if limit is None:
            value = await call()
        else:
            async with asyncio.timeout(limit):
                value = await call()
    except Exception as exc:
        return (False, exc, time.monotonic() - start)
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise
        return (False, exc, time.monotonic() - start)
    return (True, value, time.monotonic() - start)


async def _settle_all(guarded: Sequence[Awaitable[_Outcome]]) -> list[_Outcome]:
    """Run every coroutine concurrently and wait for all of them.

    A TaskGroup gives the one guarantee that matters under cancellation: if the
    caller is cancelled, every child is cancelled AND awaited before the cancellation
    propagates, so no member keeps running behind the caller's back.
    """
    if len(guarded) == 1:
        return [await guarded[0]]
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(_as_coroutine(g)) for g in guarded]
    return [task.result() for task in tasks]


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _collect(
    sources: list[MemorySource],
    outcomes: list[_Outcome],
    ctx: Ctx,
    on_error: OnErrorPolicy,
) -> list[list[MemoryItem]]:
    """Split outcomes into batches and failures; apply the policy."""
    if all(ok for ok, _, _ in outcomes):
        return [value for _, value, _ in outcomes]
    keys = _member_keys(sources)
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


def _member_keys(sources: Sequence[object]) -> list[str]:
    """Member names, with ``#index`` appended to every name that occurs twice."""
    names = [str(getattr(source, "name", type(source).__name__)) for source in sources]
    counts = Counter(names)
    return [f"{n}#{i}" if counts[n] > 1 else n for i, n in enumerate(names)]


# --- validation --------------------------------------------------------------------


def _check_sources(sources: object) -> list[MemorySource]:
    if isinstance(sources, (str, bytes)) or not isinstance(sources, Iterable):
        raise InvalidArgumentType(
            f"sources must be a list of MemorySource, got {type(sources).__name__}"
        )
    # A list is kept as the caller's own object, as a plain dataclass field would be.
    members = sources if isinstance(sources, list) else list(sources)
    for i, source in enumerate(members):
        _check_member(source, f"sources[{i}]")
    return members


def _check_member(source: object, label: str) -> MemorySource:
    """Duck check at construction, so a wrong object fails where it is wired."""
    if not callable(getattr(source, "query", None)) or not callable(
        getattr(source, "write", None)
    ):
        raise InvalidArgumentType(
            f"{label} is not a MemorySource (needs query() and write()), "
            f"got {type(source).__name__}"
        )
    return source  # type: ignore[return-value]


def _check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise InvalidArgumentType(
            f"timeout must be a number of seconds or None, got {type(timeout).__name__}"
        )
    value = float(timeout)
    if math.isnan(value) or value <= 0:
        raise InvalidArgument(f"timeout must be > 0 seconds or None, got {timeout!r}")
    return value


def _materialise(items: Iterable[MemoryItem]) -> list[MemoryItem]:
    """Build the write batch once and reject anything that is not a MemoryItem."""
    if isinstance(items, (str, bytes, MemoryItem)) or not isinstance(items, Iterable):
        raise InvalidArgumentType(
            f"items must be an iterable of MemoryItem, got {type(items).__name__}"
        )
    batch = list(items)
    for i, item in enumerate(batch):
        if not isinstance(item, MemoryItem):
            raise InvalidArgumentType(
                f"items[{i}] must be a MemoryItem, got {type(item).__name__}"
            )
    return batch
