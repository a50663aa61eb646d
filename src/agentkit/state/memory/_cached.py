"""CachedMemory: hot queries answered without touching the wrapped source."""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, ScopeViolation
from agentkit.kernel.validate import check_ctx, check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.memory._fanout import _check_answer, _check_member
from agentkit.state.memory._forgetting import forgets, forward_delete, forward_forget
from agentkit.state.memory._frozen import FrozenDict
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._protocol import MemorySource, accepts_writes

_Key = tuple[Scope, str, int, Hashable]


class _Unhashable(Exception):
    """A ``where`` value we cannot key on; such a query bypasses the cache."""


@traced_memory(cache=True)
@dataclass
class CachedMemory:
    """Cache ``query`` results for ``ttl_seconds`` (monotonic clock).

    The key is ``(ctx.scope, query, k, where)``: the scope is in it so one tenant's
    entry is never served to another, and ``where`` enters with its values in a
    canonical form (key order ignored, lists and nested mappings allowed) so two
    different filters never share an entry. A ``where`` that cannot be keyed goes
    straight to the wrapped source. Full cache: the oldest insertion is dropped.

    ``strict_scope=True`` refuses a query without a complete scope (ScopeViolation)
    before anything is looked up. Writes go to the wrapped source, then empty the
    cache; a query already in flight when a write lands does not store its (possibly
    stale) answer. ``delete`` and ``forget`` do the same, so a forgotten record is
    never served from here again. Not thread-safe: one event loop per instance.

    A cached answer is immune to what callers do with earlier ones. Items are frozen,
    so they are shared as they are, unless their metadata holds a value that can be
    changed in place (a list, a dict): such a value is copied when the answer is
    stored and again each time it is served. An answer that is not a list of
    MemoryItems is refused (InvalidArgumentType) and never stored.

    Args:
        inner: The source whose answers are cached.
        ttl_seconds: How long an answer is served from the cache.
        max_entries: How many answers are kept at most.
        name: The name items and traces carry; ``""`` takes the wrapped source's.
        strict_scope: Refuse queries whose scope lacks an org or a domain.

    Raises:
        InvalidArgumentType: A non-number ``ttl_seconds`` or a non-int ``max_entries``.
        InvalidArgument: ``ttl_seconds`` not above 0, or ``max_entries`` below 1.
        ScopeViolation: From ``query`` under ``strict_scope=True``, for an incomplete
            scope.
    """

    inner: MemorySource
    ttl_seconds: float = 60.0
    max_entries: int = 256
    name: str = ""
    strict_scope: bool = False
    _entries: dict[_Key, tuple[float, tuple[MemoryItem, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _generation: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_member(self.inner, "inner")
        ttl = self.ttl_seconds
        if isinstance(ttl, bool) or not isinstance(ttl, numbers.Real):
            raise InvalidArgumentType(f"ttl_seconds must be a number, got {type(ttl).__name__}")
        if math.isnan(ttl) or ttl <= 0:
            raise InvalidArgument(f"ttl_seconds must be > 0, got {ttl!r}")
        size = self.max_entries
        if isinstance(size, bool) or not isinstance(size, int):
            raise InvalidArgumentType(f"max_entries must be an int, got {type(size).__name__}")
        if size < 1:
            raise InvalidArgument(f"max_entries must be >= 1, got {size!r}")
        if not self.name:
            self.name = self.inner.name

    @property
    def accepts_writes(self) -> bool:
        """The cache stores nothing durably; the wrapped source decides."""
        return accepts_writes(self.inner)

    def __len__(self) -> int:
        return len(self._entries)

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Answer from the cache while an entry is younger than ``ttl_seconds``, else ask ``inner``.

        Entries are keyed by ``(ctx.scope, query, k, where)``, so a tenant only ever sees
        answers computed for its own scope. A miss stores the fresh answer unless a write,
        ``delete``, ``forget`` or ``clear`` happened while it was in flight.
        """
        query = check_query(query)
        k = check_k(k)
        where = check_where(where)
        ctx = check_ctx(ctx)  # the key reads ctx.scope: no ctx is a named error, not AttributeError
        if self.strict_scope and not ctx.scope.complete:
            raise ScopeViolation(
                f"memory source {self.name!r} (strict_scope) needs a complete scope, "
                f"got {ctx.scope!r}"
            )
        try:
            key: _Key = (ctx.scope, query, k, _canonical(where))
        except _Unhashable:
            answer = await self.inner.query(query, k=k, ctx=ctx, where=where)
            return list(_check_answer(answer, self.name))
        now = time.monotonic()
        hit = self._entries.get(key)
        if hit is not None:
            if now < hit[0]:
                return [_detached(item) for item in hit[1]]
            del self._entries[key]
        generation = self._generation
        answer = await self.inner.query(query, k=k, ctx=ctx, where=where)
        items = list(_check_answer(answer, self.name))
        if generation == self._generation:
            try:
                kept = tuple(_detached(item) for item in items)
            except Exception:
                return items  # metadata that cannot be copied is served, never cached
            self._store(key, kept)
        return items

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Forward, then invalidate (even if the write failed part-way)."""
        try:
            await self.inner.write(items, ctx=ctx)
        finally:
            self.clear()

    @property
    def forgets(self) -> bool:
        """Whether the wrapped source can delete and forget."""
        return forgets(self.inner)

    async def delete(self, ids: Sequence[str], *, ctx: Ctx) -> int:
        """Forward, then invalidate: no cached answer shows a deleted record again."""
        try:
            return await forward_delete(self.inner, self.name, ids, ctx)
        finally:
            self.clear()

    async def forget(
        self,
        where: Mapping[str, Any] | None = None,
        *,
        ctx: Ctx,
        all: bool = False,
    ) -> int:
        """Forward, then invalidate: no cached answer shows a forgotten record again."""
        try:
            return await forward_forget(self.inner, self.name, where, ctx, all)
        finally:
            self.clear()

    def clear(self) -> None:
        """Drop every entry and fence off queries that started before now."""
        self._entries.clear()
        self._generation += 1

    def _store(self, key: _Key, items: tuple[MemoryItem, ...]) -> None:
        entries = self._entries
        entries.pop(key, None)
        while len(entries) >= self.max_entries:
            del entries[next(iter(entries))]
        entries[key] = (time.monotonic() + self.ttl_seconds, items)


_SCALARS = frozenset({str, int, float, bool, complex, bytes, type(None)})


def _settled(value: object) -> bool:
    """True when nothing a caller can do through public API changes ``value``."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_settled(v) for v in value)
    if isinstance(value, FrozenDict):
        return all(_settled(v) for v in value.values())
    return False


def _detached(item: MemoryItem) -> MemoryItem:
    """``item`` itself, or a copy whose changeable metadata values are its own."""
    meta = item.metadata
    if all(_settled(v) for v in meta.values()):
        return item
    own = {key: v if _settled(v) else copy.deepcopy(v) for key, v in meta.items()}
    return dataclasses.replace(item, metadata=own)


def _canonical(value: object) -> Hashable:
    """A hashable stand-in for a ``where`` value that keeps every distinction.

    Mappings become frozensets of pairs (order-free); lists and tuples stay ordered
    (a reordered any-of list is at worst a miss); sets become frozensets. The type
    name rides along so ``1`` and ``"1"`` (and ``1`` and ``True``) never collide.
    """
    if value is None:
        return None
    if isinstance(value, Mapping):
        return ("map", frozenset((_canonical(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_canonical(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(_canonical(v) for v in value))
    try:
        hash(value)
    except TypeError:
        raise _Unhashable from None
    return (type(value).__qualname__, value)
