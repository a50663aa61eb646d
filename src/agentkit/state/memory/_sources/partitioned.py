"""PerScopeMemory: one backend per tenant, for backends that have no notion of scope.

A file tree, a scratch index or any store that cannot bucket by tenant is made safe
for multi-tenant use the only way that cannot leak: each complete scope gets its own
instance, so one tenant's query physically cannot reach another's data.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import InvalidArgumentType, ScopeViolation
from agentkit.kernel.validate import check_ids, check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.files import LocalFiles
from agentkit.state.memory._fanout import _check_member
from agentkit.state.memory._forgetting import (
    check_forget,
    forgets,
    forward_delete,
    forward_forget,
)
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._protocol import MemorySource, accepts_writes
from agentkit.state.memory._sources._args import check_ctx, check_items
from agentkit.state.memory._sources.files import FileMemory

SourceFactory = Callable[[Scope], "MemorySource | Awaitable[MemorySource]"]
ExistsProbe = Callable[[Scope], "bool | Awaitable[bool]"]

# Scope ids become directory names; longer encodings fall back to a digest so a name
# never exceeds the usual 255-byte file name limit.
_MAX_NAME = 200
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


@traced_memory
@dataclass
class PerScopeMemory:
    """Route each call to the source built for its ``ctx.scope``, building on first use.

    ``factory(scope)`` (sync or async) makes the source for one complete scope; it is
    called once per scope, even when many first calls race. A scope without both
    org and domain is refused with ScopeViolation before any source is built or
    touched: there is no shared bucket to fall back to. Items pass through as the
    tenant's source stamped them, so write-back by provenance keeps working. Every
    built source is kept for the life of this object (``close()`` closes those that
    can be closed).

    ``exists(scope)`` (sync or async, optional) says whether a tenant has anything
    stored yet. When given, a query for a scope it denies answers ``[]`` without
    building or keeping a source: reads never create, so probing a thousand unknown
    tenants leaves nothing behind. Writes always build; ``delete`` and ``forget`` go
    to the tenant's own source and, like reads, never build one for a tenant
    ``exists`` denies.

    Args:
        factory: ``factory(scope)``, sync or async, building one tenant's source.
        name: The name traces carry (items keep their own source's name).
        exists: Optional ``exists(scope)``, sync or async: whether a tenant has
            anything stored; lets queries for unknown tenants build nothing.

    Raises:
        InvalidArgumentType: A ``factory`` or ``exists`` that is not callable, or an
            empty name.
        ScopeViolation: From ``query``, ``write``, ``delete`` and ``forget``, for a
            scope without both ids.
    """

    factory: SourceFactory
    name: str = "per-scope"
    exists: ExistsProbe | None = field(default=None, kw_only=True)
    _sources: dict[Scope, MemorySource] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _building: dict[Scope, asyncio.Future[MemorySource]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not callable(self.factory):
            raise InvalidArgumentType(
                f"factory must be a callable taking a Scope, got {type(self.factory).__name__}"
            )
        if not isinstance(self.name, str) or not self.name:
            raise InvalidArgumentType("name must be a non-empty str")
        if self.exists is not None and not callable(self.exists):
            raise InvalidArgumentType(
                f"exists must be a callable taking a Scope or None, "
                f"got {type(self.exists).__name__}"
            )

    @property
    def accepts_writes(self) -> bool:
        """What the built sources say; before any is built, assume the factory's do."""
        return all(accepts_writes(s) for s in self._sources.values())

    @property
    def scopes(self) -> list[Scope]:
        """The scopes that have a source so far."""
        return list(self._sources)

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Ask the source of ``ctx.scope`` alone, cut to ``k``.

        An incomplete scope is refused; a tenant ``exists`` denies gets ``[]`` and no
        source is built for it, so reads never create tenants.
        """
        query = check_query(query)
        k = check_k(k)
        where = check_where(where)
        ctx = check_ctx(ctx)
        source = await self._source_to_read(ctx.scope)
        if source is None:
            return []
        return list(await source.query(query, k=k, ctx=ctx, where=where))[:k]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Write to the source of ``ctx.scope``, building it on first use.

        The source is built even for an empty batch, so a tenant's first write marks it as
        known; an incomplete scope is refused before anything is built.
        """
        batch = check_items(items)
        ctx = check_ctx(ctx)
        source = await self.source_for(ctx.scope)
        if batch:
            await source.write(batch, ctx=ctx)

    @property
    def forgets(self) -> bool:
        """What the built sources say; before any is built, assume the factory's do."""
        return all(forgets(s) for s in self._sources.values())

    async def delete(self, ids: Sequence[str], *, ctx: Ctx) -> int:
        """Delete ``ids`` from the tenant's own source; how many went.

        Routed like a query: with ``exists`` given, a tenant that has nothing stored
        answers 0 and no source is built for it (forgetting never creates).
        """
        wanted = check_ids(ids)
        ctx = check_ctx(ctx)
        source = await self._source_to_read(ctx.scope)
        if source is None or not wanted:
            return 0
        return await forward_delete(source, self.name, wanted, ctx)

    async def forget(
        self,
        where: Mapping[str, Any] | None = None,
        *,
        ctx: Ctx,
        all: bool = False,
    ) -> int:
        """Forget in the tenant's own source (routed like ``delete``); how many went."""
        checked = check_forget(where, all)
        ctx = check_ctx(ctx)
        source = await self._source_to_read(ctx.scope)
        if source is None:
            return 0
        return await forward_forget(source, self.name, checked, ctx, all)

    async def source_for(self, scope: Scope) -> MemorySource:
        """The source for ``scope``, built once; refuses an incomplete scope."""
        self._check_scope(scope)
        while True:
            found = self._sources.get(scope)
            if found is not None:
                return found
            pending = self._building.get(scope)
            if pending is None:
                return await self._build(scope)
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # we were cancelled ourselves
                # the builder was cancelled, not us: try again

    async def _source_to_read(self, scope: Scope) -> MemorySource | None:
        """The source to query, or None when ``exists`` says there is nothing to read."""
        self._check_scope(scope)
        probe = self.exists
        if probe is None or scope in self._sources or scope in self._building:
            return await self.source_for(scope)
        there = probe(scope)
        if inspect.isawaitable(there):
            there = await there
        return await self.source_for(scope) if there else None

    def _check_scope(self, scope: object) -> None:
        if not isinstance(scope, Scope):
            raise InvalidArgumentType(f"scope must be a Scope, got {type(scope).__name__}")
        if not scope.complete:
            raise ScopeViolation(
                f"memory source {self.name!r} keeps one backend per tenant and needs a "
                f"complete scope (org_id and domain_id set), got {scope!r}"
            )

    async def _build(self, scope: Scope) -> MemorySource:
        pending: asyncio.Future[MemorySource] = asyncio.get_running_loop().create_future()
        self._building[scope] = pending
        try:
            built = self.factory(scope)
            if inspect.isawaitable(built):
                built = await built
            built = _check_member(built, f"what the factory of {self.name!r} returned")
        except BaseException as exc:
            del self._building[scope]  # a later call may retry
            if isinstance(exc, asyncio.CancelledError):
                pending.cancel()
            else:
                pending.set_exception(exc)
                pending.exception()  # mark retrieved; waiters re-raise it themselves
            raise
        self._sources[scope] = built
        del self._building[scope]
        pending.set_result(built)
        return built

    async def close(self) -> None:
        """Close every built source that has an async ``close()``; forget them all."""
        sources, self._sources = list(self._sources.values()), {}
        for source in sources:
            closer = getattr(source, "close", None)
            if callable(closer):
                result = closer()
                if inspect.isawaitable(result):
                    await result


def files_per_scope(
    root: str | os.PathLike[str],
    *,
    name: str = "files",
    max_bytes: int | None = 64 * 1024 * 1024,
) -> PerScopeMemory:
    """FileMemory over ``root/<org>/<domain>/``, one LocalFiles root per tenant.

    The two path parts are encoded (lower-case letters, digits, ``_`` and ``-`` kept;
    everything else, upper case included, as ``%XX`` bytes; very long ids as a digest)
    so any scope id is one safe, distinct directory name, even on a case-insensitive
    file system, and ``..`` or ``/`` in an id can never climb out of ``root``.
    A tenant's directory is made by its first write; a query for a tenant without
    one answers ``[]`` and creates nothing.

    Args:
        root: An existing directory holding one sub-directory per tenant.
        name: The name items and traces carry.
        max_bytes: Files larger than this are skipped (``None``: no limit).

    Returns:
        A ``PerScopeMemory`` building one ``FileMemory`` per tenant.

    Raises:
        InvalidArgumentType: ``root`` is not a path.
        NotADirectoryError: ``root`` does not exist or is not a directory.
    """
    if not isinstance(root, (str, os.PathLike)):
        raise InvalidArgumentType(f"root must be a path, got {type(root).__name__}")
    base = os.path.realpath(os.fspath(root))
    if not os.path.isdir(base):
        raise NotADirectoryError(f"root must be an existing directory: {base!r}")

    def folder(scope: Scope) -> str:
        assert scope.org_id is not None and scope.domain_id is not None
        return os.path.join(base, scope_dirname(scope.org_id), scope_dirname(scope.domain_id))

    async def build(scope: Scope) -> MemorySource:
        path = folder(scope)
        await asyncio.to_thread(os.makedirs, path, exist_ok=True)
        return FileMemory(LocalFiles(path, max_bytes=max_bytes), name=name)

    async def exists(scope: Scope) -> bool:
        return await asyncio.to_thread(os.path.isdir, folder(scope))

    return PerScopeMemory(build, name=name, exists=exists)


def scope_dirname(part: str) -> str:
    """One scope id as a directory name: injective, never ``.``/``..``, case-proof."""
    encoded = "".join(
        ch if ch in _SAFE else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in part
    )
    if len(encoded) > _MAX_NAME:
        return "h-" + hashlib.sha256(part.encode("utf-8")).hexdigest()
    return "s-" + encoded
