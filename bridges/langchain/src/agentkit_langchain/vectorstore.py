"""LangChainVectorPort: a LangChain VectorStore as an agentkit VectorPort.

So ``VectorMemory(LangChainVectorPort(store))`` keeps VectorMemory's write rules
(upsert by id, provenance-checked ids) on the store a LangChain user already has.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, cast

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, StoreError
from agentkit.kernel.threads import finish_or_undo
from agentkit.kernel.validate import check_k, check_query, check_scope, check_where
from agentkit.vector.port import Chunk, check_chunks, matches_where
from agentkit_langchain.mapping import (
    CHUNK_KEY,
    DOMAIN_KEY,
    ORG_KEY,
    RESERVED_PREFIX,
    check_unreserved,
    in_scope,
    scope_stamp,
)

FilterStyle = Literal["auto", "callable", "dict", "none"]
_STYLES = ("auto", "callable", "dict", "none")
_NAMESPACE = uuid.UUID("6f1d7c52-3a0e-4d8b-9a53-2f4b1c9e7a10")
# Results the store returns before our re-check drops some (other filters it ignored).
_OVERFETCH = 4


class LangChainVectorPort:
    """Upsert, search and delete on any LangChain VectorStore, bucketed by scope.

    Tenancy on a shared store: every record carries its scope in metadata
    (``agentkit_org_id``/``agentkit_domain_id``, ``""`` when unset) and its store id
    is a UUID derived from (org, domain, chunk id), so two tenants may both write
    chunk ``"1"``. Searches push the scope (and ``where``) down as a filter and
    re-check every hit on the way out; the stamps never reach the chunks returned.
    Records without stamps (written before agentkit) belong to the unscoped bucket;
    with a dict filter, which cannot say "key absent", an unscoped search makes a
    second, unfiltered pass to find them.

    ``filter_style`` says how the store takes a filter: ``"callable"`` (LangChain's
    InMemoryVectorStore), ``"dict"`` (``{key: value}`` equality, as Chroma, PGVector
    and FAISS accept for single keys), ``"none"``, or a function turning the
    equality dict into the store's own dialect. ``"auto"`` picks callable for
    InMemoryVectorStore, dict when the store's search declares a ``filter``
    parameter, else none. A store that cannot filter is refused for scoped use.

    Scores are relevance (higher is better): ``similarity_search_with_score`` for
    InMemoryVectorStore (cosine; it raises NotImplementedError for relevance
    scores), the store's ``*_with_relevance_scores`` otherwise, or your
    ``relevance_score_fn`` applied to ``similarity_search_with_score``.

    Writes that outlive their caller: LangChain's async methods often run the sync
    ones in a thread, which a timeout cannot stop. So every write first reads the
    records it will touch (``get_by_ids``); if the caller gives up midway, the port
    waits for the store to finish and puts those records back, so a write reported
    failed leaves nothing behind. A store without ``get_by_ids`` cannot be restored:
    then the port waits for the write and reports what it really did (a write that
    landed counts as done, even past the timeout).
    """

    def __init__(
        self,
        vectorstore: VectorStore,
        *,
        filter_style: FilterStyle | Callable[[dict[str, Any]], Any] = "auto",
        relevance_score_fn: Callable[[float], float] | None = None,
    ) -> None:
        if not isinstance(vectorstore, VectorStore):
            raise InvalidArgumentType(
                f"vectorstore must be a LangChain VectorStore, got {type(vectorstore).__name__}"
            )
        if not callable(filter_style) and filter_style not in _STYLES:
            raise InvalidArgument(
                f"unknown filter_style {filter_style!r}; expected one of {_STYLES!r} or a callable"
            )
        if relevance_score_fn is not None and not callable(relevance_score_fn):
            raise InvalidArgumentType("relevance_score_fn must be callable or None")
        self.vectorstore = vectorstore
        self._in_memory = isinstance(vectorstore, InMemoryVectorStore)
        self._style = _resolve_style(vectorstore, filter_style)
        self._relevance = relevance_score_fn

    def __repr__(self) -> str:
        return f"LangChainVectorPort({type(self.vectorstore).__name__})"

    # --- VectorPort ---

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        batch = _check_chunks(chunks)
        scope = check_scope(scope)
        if not batch:
            return
        self._refuse_unfiltered(scope)
        stamp = scope_stamp(scope)
        ids = [store_id(scope, chunk.id) for chunk in batch]
        docs = [
            Document(
                page_content=chunk.text,
                metadata={
                    **chunk.metadata,
                    ORG_KEY: stamp[0],
                    DOMAIN_KEY: stamp[1],
                    CHUNK_KEY: chunk.id,
                },
                id=sid,
            )
            for chunk, sid in zip(batch, ids, strict=True)
        ]
        store = self.vectorstore
        before = await self._snapshot(ids)

        async def write() -> None:
            if not self._in_memory:
                # Not every store replaces on a known id (FAISS refuses it): clear our
                # own namespaced ids first. They are never another tenant's or the user's.
                await self._delete_existing(ids, before)
            await store.aadd_documents(docs, ids=ids)

        await finish_or_undo(write(), self._undo(ids, before))

    async def search(
        self,
        query: str,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
    ) -> list[tuple[float, Chunk]]:
        query = check_query(query)
        k = check_k(k)
        wanted = check_where(where) or None
        scope = check_scope(scope)
        self._refuse_unfiltered(scope)
        stamp = scope_stamp(scope)
        store_filter, complete = self._filter(stamp, wanted)
        fetch = k if complete else k * _OVERFETCH
        kwargs: dict[str, Any] = {} if store_filter is None else {"filter": store_filter}
        hits = await self._scored(query, fetch, kwargs)
        if stamp == ("", "") and self._style not in ("callable", "none"):
            # An equality filter cannot match records with no stamp at all (written
            # before agentkit), yet they are the unscoped bucket: look again without
            # the scope condition, over-fetched, and let the re-check below keep
            # only unstamped records. Best effort when tenants crowd the top.
            only = None if wanted is None else self._where_only(wanted)
            legacy = {} if only is None else {"filter": only}
            extra = await self._scored(query, k * _OVERFETCH, legacy)
            hits = _merge_hits(hits, [(d, sc) for d, sc in extra if ORG_KEY not in d.metadata])
        out: list[tuple[float, Chunk]] = []
        for doc, score in hits:
            raw = doc.metadata
            if not in_scope(raw, stamp):
                continue
            metadata = {key: v for key, v in raw.items() if not key.startswith(RESERVED_PREFIX)}
            if wanted is not None and not matches_where(metadata, wanted):
                continue
            chunk_id = raw.get(CHUNK_KEY)
            if not isinstance(chunk_id, str) or not chunk_id:
                chunk_id = doc.id or _content_id(doc.page_content)
            out.append((float(score), Chunk(chunk_id, doc.page_content, metadata)))
            if len(out) == k:
                break
        return out

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> None:
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise InvalidArgumentType(f"ids must be a sequence of str, got {type(ids).__name__}")
        scope = check_scope(scope)
        wanted = [store_id(scope, _check_id(i)) for i in ids]
        if not wanted:  # delete(None) or delete([]) means "everything" to some stores
            return
        before = await self._snapshot(wanted)
        await finish_or_undo(self.vectorstore.adelete(ids=wanted), self._undo(wanted, before))

    # --- helpers ---

    def _refuse_unfiltered(self, scope: Scope) -> None:
        if self._style == "none" and scope != Scope():
            raise StoreError(
                f"{type(self.vectorstore).__name__} cannot filter by metadata (or agentkit "
                f"cannot tell how), so it cannot keep tenants apart: refusing scoped use "
                f"for {scope!r}. Pass filter_style='dict' or a filter-building function "
                f"if the store does filter, or use one store per tenant unscoped."
            )

    def _filter(
        self, stamp: tuple[str, str], where: dict[str, Any] | None
    ) -> tuple[Any, bool]:
        """The store-side filter and whether it covers everything the re-check will."""
        style = self._style
        if style == "none":
            return None, where is None
        if style == "callable":

            def keep(doc: Document) -> bool:
                meta = doc.metadata
                return in_scope(meta, stamp) and (where is None or matches_where(meta, where))

            return keep, True
        equality: dict[str, Any] = {ORG_KEY: stamp[0], DOMAIN_KEY: stamp[1]}
        complete = True
        for key, value in (where or {}).items():
            if isinstance(value, (list, tuple, set, frozenset, dict)):
                complete = False  # any-of has no portable dict spelling: re-check only
            else:
                equality[key] = value
        if callable(style):
            return style(equality), complete
        return equality, complete

    def _where_only(self, where: dict[str, Any]) -> Any:
        """The store filter for ``where`` alone (scalar keys; the re-check does the rest)."""
        equality = {
            key: value
            for key, value in where.items()
            if not isinstance(value, (list, tuple, set, frozenset, dict))
        }
        style = self._style
        if not equality:
            return None
        return style(equality) if callable(style) else equality

    async def _scored(
        self, query: str, k: int, kwargs: dict[str, Any]
    ) -> list[tuple[Document, float]]:
        store = self.vectorstore
        if self._in_memory:
            in_memory = cast(InMemoryVectorStore, store)
            vector = await in_memory.embedding.aembed_query(query)
            if not any(vector):
                # A query with no features (empty, punctuation only) is similar to
                # nothing; LangChain's cosine helper raises on the all-NaN row instead.
                return []
            return in_memory.similarity_search_with_score_by_vector(vector, k=k, **kwargs)
        if self._relevance is not None:
            raw = await store.asimilarity_search_with_score(query, k=k, **kwargs)
            fn = self._relevance
            return [(doc, fn(score)) for doc, score in raw]
        try:
            return await store.asimilarity_search_with_relevance_scores(query, k=k, **kwargs)
        except NotImplementedError as exc:
            raise StoreError(
                f"{type(store).__name__} gives no relevance scores; pass "
                f"relevance_score_fn= to convert its similarity_search_with_score values "
                f"(higher must mean more relevant)"
            ) from exc

    async def _snapshot(self, ids: list[str]) -> list[Document] | None:
        """The records ``ids`` name now, or None when the store cannot say."""
        try:
            return list(await self.vectorstore.aget_by_ids(ids))
        except NotImplementedError:
            return None

    def _undo(
        self, ids: list[str], before: list[Document] | None
    ) -> Callable[[], Awaitable[None]] | None:
        """How to put ``ids`` back as ``before`` found them (None: no way to)."""
        if before is None:
            return None
        store = self.vectorstore

        async def restore() -> None:
            await store.adelete(ids=ids)
            kept = [doc for doc in before if doc.id]
            if kept:
                await store.aadd_documents(kept, ids=[doc.id for doc in kept])

        return restore

    async def _delete_existing(self, ids: list[str], found: list[Document] | None) -> None:
        store = self.vectorstore
        if found is None:
            try:
                await store.adelete(ids=ids)
            except NotImplementedError:
                pass  # the store cannot delete; it may still replace on add
            return
        existing = [doc.id for doc in found if doc.id]
        if existing:
            await store.adelete(ids=existing)


def _merge_hits(
    first: list[tuple[Document, float]], second: list[tuple[Document, float]]
) -> list[tuple[Document, float]]:
    """Two result lists as one, best first, each record once."""
    seen: set[str] = set()
    merged: list[tuple[Document, float]] = []
    for doc, score in sorted([*first, *second], key=lambda hit: -float(hit[1])):
        key = doc.id or doc.page_content
        if key not in seen:
            seen.add(key)
            merged.append((doc, score))
    return merged


def store_id(scope: Scope, chunk_id: str) -> str:
    """The record id in the shared store: a UUID (accepted by every store) per tenant+id."""
    key = json.dumps([scope.org_id or "", scope.domain_id or "", chunk_id])
    return str(uuid.uuid5(_NAMESPACE, key))


def _content_id(text: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, text))


def _resolve_style(
    store: VectorStore, style: FilterStyle | Callable[[dict[str, Any]], Any]
) -> str | Callable[[dict[str, Any]], Any]:
    if style != "auto":
        return style
    if isinstance(store, InMemoryVectorStore):
        return "callable"
    for method in ("similarity_search_with_score", "similarity_search"):
        try:
            params = inspect.signature(getattr(type(store), method)).parameters
        except (TypeError, ValueError):
            continue
        if "filter" in params:
            return "dict"
    return "none"


def _check_id(chunk_id: object) -> str:
    if not isinstance(chunk_id, str) or not chunk_id:
        raise InvalidArgumentType(f"ids must be non-empty str, got {chunk_id!r}")
    return chunk_id


def _check_chunks(chunks: object) -> list[Chunk]:
    batch = check_chunks(chunks)
    for chunk in batch:
        check_unreserved(chunk.metadata)
    return batch
