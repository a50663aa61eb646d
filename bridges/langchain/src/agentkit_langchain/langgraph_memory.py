"""LangGraphStoreMemory: any LangGraph ``BaseStore`` namespace as an agentkit MemorySource.

Teams keep agent memories in a LangGraph store (``InMemoryStore``, ``SqliteStore``,
``PostgresStore``, their async twins); this adapter lets those memories join a
``CompositeMemory`` beside everything else, read and write, without copying them.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.store.base import BaseStore, SearchItem
from langgraph.store.base.embed import get_text_at_path

from agentkit.interop import run_blocking, usable_score, widen
from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.dedupe import without_dedupe_stamps
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_ctx, check_k, check_query, check_where
from agentkit.kernel.where import parse_where
from agentkit.observability import traced_memory
from agentkit.state.memory import MemoryItem
from agentkit.state.memory._item import check_items
from agentkit.state.memory._stamps import held_by

__all__ = ["DEFAULT_FIELD", "NAMESPACE_KEY", "SCOPE_ROOT", "LangGraphStoreMemory"]

#: Metadata key carrying the namespace an item was found in (below the tenant prefix).
NAMESPACE_KEY = "langgraph_namespace"
#: Where content goes when neither ``fields`` nor the store's index names a field.
DEFAULT_FIELD = "content"
#: First label of every tenant's namespace; refused as the start of a user namespace.
SCOPE_ROOT = "agentkit-scoped"

# Filter keys every LangGraph store reads as one plain key (SQLite pastes them into a
# JSON path; a dot there would mean nesting). Others are checked here, not pushed down.
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Scope ids are spelled with these characters as they are and everything else escaped,
# so no LIKE, GLOB or namespace wildcard (% _ * ? [ .) ever reaches a store's matcher.
_SAFE = re.compile(r"[A-Za-z0-9-]")
# Stores whose ``abatch`` is not a native async path (SqliteStore raises; PostgresStore
# borrows the default executor): their sync API runs on the interop pool instead.
_SYNC_ONLY = frozenset(
    {
        ("langgraph.store.sqlite.base", "SqliteStore"),
        ("langgraph.store.postgres.base", "PostgresStore"),
    }
)


@traced_memory(kind="client")
class LangGraphStoreMemory:
    """Recall from, and write to, one namespace of a LangGraph store.

    ``query`` searches the namespace (and the namespaces below it, as LangGraph
    searches do) with ``k`` as ``limit`` and ``where`` as ``filter``: plain keys with
    scalar values are pushed down; every hit is re-checked against ``where`` with
    agentkit's rule (a list means any-of), and the store is asked again, wider,
    when the re-check leaves fewer than ``k``. An item's ``id`` is the store key,
    its ``content`` the searched text (the ``fields`` of the value, joined by
    newlines; by default the store's index fields, else the ``content`` field, and a
    value holding none of them is shown whole), its ``score`` the store's, and its
    ``metadata`` the rest of the value plus ``NAMESPACE_KEY``.

    ``write`` puts each item as ``{**metadata, field: content}`` (``field`` the first
    plain content field) under its key: a recalled item written back updates the
    record it came from, in the namespace it came from. Ids from other backends are
    not trusted (as ``VectorMemory`` does): ``metadata["id"]`` names a key, else a
    fresh one is made. A value whose content was joined from several fields comes
    back with the joined text in the first: exact round trips need one field.

    Tenancy: a scoped ``ctx`` reads and writes under
    ``(SCOPE_ROOT, org, domain, *namespace)`` (ids escaped to letters, digits,
    ``-`` and ``~XX``; ``~`` for an unset half), and the unscoped ``Scope()`` under
    ``namespace`` itself, which may never start with ``SCOPE_ROOT``: LangGraph
    matches namespaces by whole labels, so no tenant reaches another's records or
    the unscoped ones. Every hit is checked to
    lie under the caller's prefix before it is returned.

    The store's native async API is used when it has one; ``SqliteStore`` and
    ``PostgresStore`` (sync drivers) run on the interop layer's thread pool, so a
    composite over several stores is concurrent and the event loop never blocks.

    Args:
        store: Any LangGraph ``BaseStore`` (in-memory, SQLite, Postgres, ...).
        namespace: The namespace to read and write, as a tuple of labels.
        name: The name items and traces carry.
        fields: The value fields that form an item's text; ``None`` uses the store's
            index fields, else ``content``.

    Raises:
        InvalidArgumentType: ``store`` is not a LangGraph ``BaseStore``, or a namespace
            or ``fields`` of the wrong type.
        InvalidArgument: An empty ``name``, namespace or ``fields``.
    """

    accepts_writes = True

    def __init__(
        self,
        store: BaseStore,
        namespace: Sequence[str],
        *,
        name: str = "langgraph",
        fields: str | Sequence[str] | None = None,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise InvalidArgumentType(
                f"store must be a LangGraph BaseStore, got {type(store).__name__}"
            )
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"name must be a non-empty str, got {name!r}")
        self.store = store
        self.namespace = _check_namespace(namespace)
        self.name = name
        self.fields = _content_fields(store, fields)
        self._target = next((f for f in self.fields if _PLAIN_KEY.match(f)), DEFAULT_FIELD)
        self._plain = frozenset(f for f in self.fields if _PLAIN_KEY.match(f))
        self._sync_only = _is_sync_only(store)

    def __repr__(self) -> str:
        return (
            f"LangGraphStoreMemory({type(self.store).__name__}, {self.namespace!r}, "
            f"name={self.name!r})"
        )

    # --- reading ---

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
        where = check_where(where) or None
        namespaces, rest = _split_namespaces(where)
        tree = parse_where(rest)  # the rest is agentkit's where language
        ctx = check_ctx(ctx)
        prefix = _tenant_prefix(ctx.scope)
        searched = prefix + self.namespace
        pushed = _pushdown(where)

        async def fetch(n: int) -> list[SearchItem]:
            return await self._search(searched, query, pushed, n)

        def keep(hit: SearchItem) -> bool:
            ns = tuple(hit.namespace)
            if ns[: len(searched)] != searched:
                return False  # never another tenant's, whatever the store matched
            if namespaces is not None and ns[len(prefix) :] not in namespaces:
                return False
            return tree is None or tree.matches(hit.value)

        hits = await widen(fetch, keep, k, first=k)
        return [self._item(hit, len(prefix)) for hit in hits[:k]]

    async def _search(
        self, namespace: tuple[str, ...], query: str, where: dict[str, Any] | None, n: int
    ) -> list[SearchItem]:
        store = self.store
        if not self._sync_only:
            try:
                return await store.asearch(namespace, query=query, filter=where, limit=n)
            except NotImplementedError:
                # A store with a sync API only (abatch raises before doing anything).
                self._sync_only = True
        call = functools.partial(store.search, namespace, query=query, filter=where, limit=n)
        return await run_blocking(call)

    def _item(self, hit: SearchItem, depth: int) -> MemoryItem:
        value = hit.value
        texts = [text for path in self.fields for text in get_text_at_path(value, path)]
        if texts:
            content = "\n".join(texts)
            metadata = {key: v for key, v in value.items() if key not in self._plain}
        else:
            content = json.dumps(value, sort_keys=True, ensure_ascii=False)
            metadata = dict(value)
        metadata[NAMESPACE_KEY] = tuple(hit.namespace)[depth:]
        return MemoryItem(content, self.name, usable_score(hit.score), metadata, id=hit.key)

    # --- writing ---

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Put every item, or none when any of them is refused (checked first)."""
        batch = check_items(items)
        ctx = check_ctx(ctx)
        prefix = _tenant_prefix(ctx.scope)
        puts = [self._put(item, i, prefix) for i, item in enumerate(batch)]
        if not puts:
            return
        store = self.store
        if not self._sync_only:
            try:
                await asyncio.gather(*(store.aput(ns, key, value) for ns, key, value in puts))
                return
            except NotImplementedError:
                self._sync_only = True
        await run_blocking(_put_all, store, puts)

    def _put(
        self, item: MemoryItem, i: int, prefix: tuple[str, ...]
    ) -> tuple[tuple[str, ...], str, dict[str, Any]]:
        metadata = without_dedupe_stamps(item.metadata)
        found_in = metadata.pop(NAMESPACE_KEY, None)
        explicit = metadata.pop("id", None)
        if explicit is not None and (
            isinstance(explicit, bool) or not isinstance(explicit, (str, int))
        ):
            raise InvalidArgumentType(
                f"items[{i}].metadata['id'] must be a str or int, got {type(explicit).__name__}"
            )
        ours = held_by(item, self.name)
        if ours and item.id is not None:
            key = item.id
        elif explicit is not None:
            key = str(explicit)
        else:
            key = uuid.uuid4().hex
        if self._target in metadata:
            raise InvalidArgument(
                f"items[{i}].metadata has a key {self._target!r}, the field this memory "
                "stores content in; rename it (it would be overwritten)"
            )
        value = {**metadata, self._target: item.content}
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidArgument(
                f"items[{i}] cannot be stored in a LangGraph store: its metadata is not "
                f"JSON ({exc})"
            ) from None
        namespace = self.namespace
        if ours and _is_below(found_in, namespace):
            namespace = tuple(found_in)  # back where it was recalled from
        return prefix + namespace, key, value


def _put_all(store: BaseStore, puts: list[tuple[tuple[str, ...], str, dict[str, Any]]]) -> None:
    for namespace, key, value in puts:
        store.put(namespace, key, value)


def _check_namespace(namespace: object) -> tuple[str, ...]:
    """LangGraph's own label rules, checked here so the error names agentkit's argument."""
    if isinstance(namespace, str) or not isinstance(namespace, Sequence):
        raise InvalidArgumentType(
            f"namespace must be a tuple of str labels, got {type(namespace).__name__}"
        )
    labels = tuple(namespace)
    if not labels:
        # An empty prefix would search every namespace in the store, tenants' included.
        raise InvalidArgument("namespace must have at least one label")
    for label in labels:
        if not isinstance(label, str):
            raise InvalidArgumentType(
                f"namespace labels must be str, got {type(label).__name__} in {labels!r}"
            )
        if not label or "." in label or "\x00" in label:
            raise InvalidArgument(
                f"namespace label {label!r} is not valid in LangGraph (empty, or holds '.' or NUL)"
            )
    if labels[0] in ("langgraph", SCOPE_ROOT):
        raise InvalidArgument(
            f"namespace may not start with {labels[0]!r} (reserved by "
            f"{'LangGraph' if labels[0] == 'langgraph' else 'agentkit tenancy'})"
        )
    return labels


def _is_below(found: object, namespace: tuple[str, ...]) -> bool:
    """True when ``found`` is a valid namespace at or under ``namespace``."""
    if isinstance(found, str) or not isinstance(found, Sequence):
        return False
    labels = tuple(found)
    if labels[: len(namespace)] != namespace:
        return False
    return all(
        isinstance(label, str) and label and "." not in label and "\x00" not in label
        for label in labels
    )


def _content_fields(store: BaseStore, fields: str | Sequence[str] | None) -> tuple[str, ...]:
    if fields is None:
        # The store's index fields, minus "$" (the whole value, LangGraph's default).
        config = getattr(store, "index_config", None)
        given = config.get("fields") if isinstance(config, Mapping) else None
        if isinstance(given, str):
            given = [given]
        indexed = tuple(f for f in given or () if isinstance(f, str) and f and f != "$")
        return indexed or (DEFAULT_FIELD,)
    if isinstance(fields, str):
        fields = [fields]
    if not isinstance(fields, Sequence):
        raise InvalidArgumentType(
            f"fields must be a list of str paths or None, got {type(fields).__name__}"
        )
    out = tuple(fields)
    if not out:
        raise InvalidArgument("fields must name at least one field")
    for path in out:
        if not isinstance(path, str) or not path:
            raise InvalidArgument(f"fields must be non-empty str paths, got {path!r}")
    if "$" in out:
        raise InvalidArgument(
            "fields may not include '$' (the whole value): a value holding none of the "
            "content fields is shown whole anyway"
        )
    return out


def _tenant_prefix(scope: Scope) -> tuple[str, ...]:
    if scope.org_id is None and scope.domain_id is None:
        return ()
    return (SCOPE_ROOT, _label(scope.org_id), _label(scope.domain_id))


def _label(part: str | None) -> str:
    """An injective, wildcard-free namespace label for a scope id (``~`` for None)."""
    if part is None:
        return "~"
    # Scope() turns "" into None, so ``part`` is never empty, and an escape is always
    # "~" and two hex digits: no spelled id can be the lone "~".
    return "".join(
        ch if _SAFE.match(ch) else "".join(f"~{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        for ch in part
    )


def _split_namespaces(
    where: dict[str, Any] | None,
) -> tuple[set[tuple[str, ...]] | None, dict[str, Any] | None]:
    """``where``'s ``NAMESPACE_KEY`` entry (a namespace, or a list of them: any of) apart
    from the metadata filter, which is agentkit's where language."""
    if not where or NAMESPACE_KEY not in where:
        return None, where
    rest = {k: v for k, v in where.items() if k != NAMESPACE_KEY}
    wanted = where[NAMESPACE_KEY]
    if isinstance(wanted, (list, tuple)) and all(isinstance(p, str) for p in wanted):
        wanted = [wanted]  # one namespace
    if not isinstance(wanted, (list, tuple, set, frozenset)) or not all(
        isinstance(ns, (list, tuple)) and all(isinstance(p, str) for p in ns) for ns in wanted
    ):
        raise InvalidArgumentType(
            f"where[{NAMESPACE_KEY!r}] must be a namespace (a tuple of str) or a list of them"
        )
    return {tuple(ns) for ns in wanted}, rest or None


def _pushdown(where: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of ``where`` every LangGraph store reads as agentkit does: plain keys,
    scalar values (equality). Lists (any-of in agentkit, one value in LangGraph),
    dicts (operators in LangGraph), None and the namespace key stay local."""
    if not where:
        return None
    pushed = {
        key: value
        for key, value in where.items()
        if key != NAMESPACE_KEY
        and _PLAIN_KEY.match(key)
        and isinstance(value, (str, int, float))
        and not (isinstance(value, float) and not math.isfinite(value))
    }
    return pushed or None


def _is_sync_only(store: BaseStore) -> bool:
    for cls in type(store).__mro__:
        if "abatch" in vars(cls):
            return (cls.__module__, cls.__qualname__) in _SYNC_ONLY
    return False
