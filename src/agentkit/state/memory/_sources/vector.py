"""VectorMemory: the canonical RAG source over any VectorPort."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.dedupe import without_dedupe_stamps
from agentkit.kernel.errors import InvalidArgumentType, StoreError
from agentkit.kernel.validate import check_ids, check_k, check_metadata_where, check_query
from agentkit.kernel.where import merge_where
from agentkit.observability import traced_memory
from agentkit.state.memory._forgetting import check_forget
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._sources._args import check_ctx, check_items, scored_items
from agentkit.state.memory._stamps import held_by
from agentkit.vector.port import Chunk


@traced_memory(kind="client")
@dataclass
class VectorMemory:
    """A MemorySource backed by a VectorPort.

    Tenant isolation is the port's: ``ctx.scope`` is passed as the bucket key on
    every call. ``where`` is a default filter in the ``where`` language (operators
    included); a call-time ``where`` merges over it by top-level key, operator keys
    (``$and``, ``$or``, ``$not``) alike (``merge_where``), so a wired-in filter can
    be narrowed or overridden per query.
    Chunk ids come back as ``MemoryItem.id`` so a recalled item written back
    updates its row instead of duplicating it.

    Forgetting: ``delete(ids, ctx=...)`` removes those records of ``ctx.scope``;
    ``forget(where, ctx=...)`` every record of the scope matching ``where`` (merged
    over the default ``where``, as a query's is); ``forget(all=True, ctx=...)`` the
    whole scope, or, when a default ``where`` is set, everything this source can see.
    Each returns how many records went. ``forget`` needs the port's ``delete_where``
    and ``delete_scope`` (every agentkit store has them).

    Args:
        vector: The store: any ``VectorPort`` (``InMemoryVectorStore``,
            ``SQLiteVectorStore``, ``PostgresVectorStore``, or a bridge's port over a
            framework's store).
        where: A default filter, merged under every call's own.
        name: The name items and traces carry.

    Raises:
        InvalidArgumentType: A ``where`` that is not a mapping with str keys.
        InvalidFilter: A malformed ``where`` (unknown operator, wrong operand).
    """

    vector: Any
    where: dict[str, Any] | None = None
    name: str = "vector"

    forgets = True

    def __post_init__(self) -> None:
        self.where = check_metadata_where(self.where)

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Top-k within ``ctx.scope``, best first, stamped with this source's name."""
        query = check_query(query)
        k = check_k(k)
        call_where = check_metadata_where(where)
        ctx = check_ctx(ctx)
        merged = merge_where(self.where, call_where)
        hits = await self.vector.search(query, k=k, scope=ctx.scope, where=merged)
        return scored_items(hits, self.name, k)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Index items as chunks in ``ctx.scope``.

        The chunk id is ``item.id`` when that id is this source's own row (so a
        recalled item written back updates its row), else ``metadata["id"]``
        when the caller names one, else a fresh uuid. The id is this source's
        row when the item came from this source, or when it is a merge survivor
        one of whose copies this source returned under that same id: the usual
        case for a hybrid, where the lexical half over the same store reports
        the same chunk ids and its copy often survives. An ``item.id`` from
        another backend is never trusted: ids are unique only within one
        backend, and a composite broadcasts every item to every member, so
        trusting it would overwrite an unrelated row that shares the key.
        ``metadata["id"]`` and the merge's dedupe stamps are removed from the
        stored metadata: one id, not two, and stamps describe one query.
        """
        batch = check_items(items)
        ctx = check_ctx(ctx)
        chunks = [self._chunk(item) for item in batch]
        if chunks:
            await self.vector.upsert(chunks, scope=ctx.scope)

    async def delete(self, ids: Sequence[str], *, ctx: Ctx) -> int:
        """Remove these chunk ids (``MemoryItem.id``) from ``ctx.scope``; how many went.

        Unknown ids are ignored. A port that does not report a count (a third-party
        one returning None) is credited with the distinct ids named.
        """
        wanted = check_ids(ids)
        ctx = check_ctx(ctx)
        if not wanted:
            return 0
        removed = await self.vector.delete(wanted, scope=ctx.scope)
        return len(dict.fromkeys(wanted)) if removed is None else int(removed)

    async def forget(
        self,
        where: Mapping[str, Any] | None = None,
        *,
        ctx: Ctx,
        all: bool = False,
    ) -> int:
        """Remove the scope's records matching ``where``, or all of them with ``all=True``.

        A missing or empty ``where`` without ``all=True`` is refused (InvalidArgument),
        so a filter that went missing never wipes a tenant.
        """
        call_where = check_metadata_where(check_forget(where, all))
        ctx = check_ctx(ctx)
        merged = merge_where(self.where, call_where)
        if merged:
            return int(await self._port("delete_where")(merged, scope=ctx.scope))
        return int(await self._port("delete_scope")(scope=ctx.scope))

    def _port(self, method: str) -> Any:
        fn = getattr(self.vector, method, None)
        if not callable(fn):
            raise StoreError(
                f"memory source {self.name!r}: {type(self.vector).__name__} has no "
                f"{method}(), so it cannot forget by filter or scope (delete by ids works)"
            )
        return fn

    def _chunk(self, item: MemoryItem) -> Chunk:
        metadata = without_dedupe_stamps(item.metadata)
        explicit = metadata.pop("id", None)
        if explicit is not None and (
            isinstance(explicit, bool) or not isinstance(explicit, (str, int))
        ):
            raise InvalidArgumentType(
                f"metadata['id'] must be a str or int, got {type(explicit).__name__}"
            )
        if item.id is not None and held_by(item, self.name):
            chunk_id = item.id
        elif explicit is not None:
            chunk_id = str(explicit)
        else:
            chunk_id = uuid.uuid4().hex
        return Chunk(chunk_id, item.content, metadata)
