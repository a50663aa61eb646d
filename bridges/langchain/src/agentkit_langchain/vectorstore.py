"""LangChainVectorPort: a LangChain VectorStore as an agentkit VectorPort.

So ``VectorMemory(LangChainVectorPort(store))`` keeps VectorMemory's write rules
(upsert by id, provenance-checked ids) on the store a LangChain user already has.
Tenancy, ids and filters come from the interop layer (``agentkit.interop``), shared
with the LlamaIndex bridge; this module only speaks LangChain's VectorStore API.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from agentkit.interop import (
    CHUNK_KEY,
    Condition,
    Dialect,
    IdConvention,
    check_unreserved,
    check_where_unreserved,
    chunk_id_of,
    conditions,
    dialect_for,
    id_convention,
    in_scope,
    is_unscoped,
    record_stamps,
    refuse_unfiltered,
    run_blocking,
    scope_conditions,
    store_id,
    strip_stamps,
    where_conditions,
    widen,
)
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgumentType, StoreError, UnsupportedOperation
from agentkit.kernel.threads import finish_or_undo
from agentkit.kernel.validate import check_k, check_metadata_where, check_query, check_scope
from agentkit.vector._forgetting import SCAN_LIMIT, check_forget_where, check_scan
from agentkit.vector.port import Chunk, check_chunks, matches_where
from agentkit_langchain._chroma import exact_search, relevance

FilterStyle = str | Dialect | Callable[[dict[str, Any]], Any]
# A post-filtering store (FAISS) looks at this many candidates at least, as its own
# default fetch_k does, so a tenant sharing the store usually needs one pass.
_MIN_CANDIDATES = 20
_NAMESPACE = uuid.UUID("6f1d7c52-3a0e-4d8b-9a53-2f4b1c9e7a10")
_WIDTHS_KEPT = 1024
# (score, document, the record's own metadata) for one search hit.
_Hit = tuple[float, Document, dict[str, Any]]
_Scored = Callable[[int, dict[str, Any]], Awaitable[list[tuple[Document, float]]]]


class LangChainVectorPort:
    """Upsert, search and delete on any LangChain VectorStore, bucketed by scope.

    Tenancy on a shared store (``agentkit.interop``'s codec): a scoped record carries
    its scope in ``agentkit_*`` metadata keys and a store id that encodes (org,
    domain, chunk id) injectively, so two tenants may both write chunk ``"1"``. The
    unscoped bucket is everything without a stamp, including the records a user wrote
    with plain LangChain code: they keep their own ids, so they are read, updated in
    place and deleted by those ids. Searches push scope and ``where`` down in the
    store's own filter dialect, re-check every hit, and widen the fetch when the
    re-check (or a post-filtering store like FAISS) leaves fewer than ``k``; a short
    answer from Chroma (approximate), filtered or not, is checked by an exact metadata
    read and, when more records match, ranked exactly with the store's own scores.
    An unscoped search first asks without the scope filter, so a store holding no
    tenants' records is searched exactly as its owner would. The stamps never reach
    the chunks returned.

    ``filter_style`` picks the dialect: ``"auto"`` (by the store's class:
    InMemoryVectorStore, Chroma, QdrantVectorStore, FAISS, PGVector), a dialect name,
    ``"dict"`` (a flat equality dict), ``"none"``, an ``agentkit.interop.Dialect``, or
    a function from an equality dict to the store's filter. A store without a dialect
    cannot keep tenants apart: scoped use is refused before anything is written,
    unscoped use works.

    Ids follow the store's id convention (``agentkit.interop.id_convention``: UUID-only
    ids, where results carry the id, which keys the store adds, whether adding a known
    id replaces), found by the store's class whatever ``filter_style`` says, or given
    as ``store_ids=``. On a store nobody knows, every record the port writes carries
    its chunk id and its own metadata keys, so it reads back as written even when the
    store drops ids or adds keys; records are replaced by deleting first, and a store
    that can neither delete nor look ids up is refused writes (they could only leave
    a second copy beside the first).

    Scores are relevance (higher is better): cosine similarity for
    InMemoryVectorStore, the store's ``*_with_relevance_scores`` otherwise, or your
    ``relevance_score_fn`` applied to ``similarity_search_with_score``.

    Deleting ids that do not exist is not an error and never aborts the rest of the
    batch: only ids the store holds are handed to its ``delete`` (FAISS refuses the
    whole call over one unknown id). Stores that do not replace on a known id (FAISS)
    get delete-then-add.

    Writes that outlive their caller: LangChain's async methods often run the sync
    ones in a thread, which a timeout cannot stop. So every write first reads the
    records it will touch (``get_by_ids``); if the caller gives up midway, the port
    waits for the store to finish and puts those records back, so a write reported
    failed leaves nothing behind. A store without ``get_by_ids`` cannot be restored:
    then the port waits for the write and reports what it really did.

    Args:
        vectorstore: The LangChain ``VectorStore`` to read and write.
        filter_style: How scope and ``where`` become the store's filter (see above).
        relevance_score_fn: Turns ``similarity_search_with_score``'s raw score into
            relevance (higher is better), for stores without relevance scores.
        store_ids: How the store keeps record ids; None looks it up by the store's class.

    Raises:
        InvalidArgumentType: A ``vectorstore`` that is not a LangChain ``VectorStore``,
            an unusable ``filter_style``, a ``relevance_score_fn`` that is not callable,
            or ``store_ids`` that is not an ``IdConvention``.
    """

    def __init__(
        self,
        vectorstore: VectorStore,
        *,
        filter_style: FilterStyle = "auto",
        relevance_score_fn: Callable[[float], float] | None = None,
        store_ids: IdConvention | None = None,
    ) -> None:
        if not isinstance(vectorstore, VectorStore):
            raise InvalidArgumentType(
                f"vectorstore must be a LangChain VectorStore, got {type(vectorstore).__name__}"
            )
        if relevance_score_fn is not None and not callable(relevance_score_fn):
            raise InvalidArgumentType("relevance_score_fn must be callable or None")
        if store_ids is not None and not isinstance(store_ids, IdConvention):
            raise InvalidArgumentType(
                f"store_ids must be an agentkit.interop.IdConvention or None, got "
                f"{type(store_ids).__name__}"
            )
        self.vectorstore = vectorstore
        self.dialect = dialect_for(vectorstore, filter_style)
        # Independent of the dialect: a filter override never changes how ids are kept.
        self.ids = store_ids if store_ids is not None else id_convention(vectorstore)
        self._in_memory = isinstance(vectorstore, InMemoryVectorStore)
        self._relevance = relevance_score_fn
        # Per bucket, the candidate count a post-filtering store (FAISS) last needed,
        # so a tenant's next query usually takes one pass. Counts only, keyed by scope.
        self._widths: dict[tuple[Any, ...], int] = {}
        # Whether the dialect can say "the unscoped bucket" (else a first pass without
        # it would be the same search twice).
        self._bucket_filter = (
            self.dialect is not None and self.dialect.build(scope_conditions(Scope())) is not None
        )

    def __repr__(self) -> str:
        name = self.dialect.name if self.dialect is not None else "none"
        return (
            f"LangChainVectorPort({type(self.vectorstore).__name__}, dialect={name!r}, "
            f"ids={self.ids.name!r})"
        )

    # --- VectorPort ---

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        """Write ``chunks`` into ``scope``'s bucket, replacing records with the same id.

        Each record is stamped with its scope and gets a per-tenant store id; when a
        batch repeats an id, its last chunk wins. If the caller gives up midway, the
        touched records are put back as they were. A scoped write to a store without a
        filter dialect is refused before anything is written, and so is a write that
        could only add a second copy of a record (a store that does not replace on add
        and cannot delete).
        """
        batch = _check_chunks(chunks)
        scope = check_scope(scope)
        if not batch:
            return
        self._refuse_unfiltered(scope)
        by_id: dict[str, Document] = {}  # one record per id: the batch's last word wins
        describe = self.ids.self_describing
        for chunk in batch:
            sid = self._store_id(scope, chunk.id)
            own = chunk.metadata.keys() if describe else None
            metadata = {**chunk.metadata, **record_stamps(scope, chunk.id, sid, own_keys=own)}
            if not metadata:
                # Chroma stores {} as "no metadata" and then cannot read the record
                # back by id; the chunk key is stripped on the way out anyway.
                metadata[CHUNK_KEY] = chunk.id
            by_id[sid] = Document(page_content=chunk.text, metadata=metadata, id=sid)
        ids = list(by_id)
        docs = list(by_id.values())
        store = self.vectorstore
        before = await self._snapshot(ids)
        replace = not self.ids.replaces
        if replace and (before is None or before) and not _deletes(store):
            raise self._cannot_replace()

        async def write() -> None:
            if replace:
                await self._delete_known(ids, before, replacing=True)
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
        """The ``k`` most relevant chunks of ``scope``, best first, filtered by ``where``.

        Scope and ``where`` go down in the store's filter dialect and every hit is checked
        again here, widening the fetch when that leaves fewer than ``k``, so another
        tenant's record never surfaces even if the store's own filter is loose.
        """
        query = check_query(query)
        k = check_k(k)
        wanted = check_metadata_where(where) or None
        scope = check_scope(scope)
        self._refuse_unfiltered(scope)
        conds = conditions(scope, wanted)
        if conds is None:
            return []  # an empty any-of matches nothing
        scored = await self._scorer(query)

        def keep(hit: _Hit) -> bool:
            return in_scope(hit[1].metadata, scope) and (
                wanted is None or matches_where(hit[2], wanted)
            )

        if is_unscoped(scope) and self._bucket_filter:
            # A store without tenants' records needs no scope filter, and filtering
            # costs Chroma, local Qdrant and InMemoryVectorStore a scan: ask without it
            # first, and with it only when tenants' records crowd this answer.
            fetch, first, total = self._fetcher(query, scored, where_conditions(wanted) or [], k)
            batch = await fetch(first)
            kept = [hit for hit in batch if keep(hit)]
            if len(kept) >= k or _exhausted(first, batch, total):
                return self._chunks(kept[:k])
        fetch, first, total = self._fetcher(query, scored, conds, k)
        learned = None
        if total is not None:  # a post-filtering store: start where this bucket last ended
            learned = (scope.org_id, scope.domain_id, tuple(sorted(wanted or ())))
            first = max(first, min(self._widths.get(learned, 0), total))
        asked: list[int] = []

        async def counted(n: int) -> list[_Hit]:
            asked.append(n)
            return await fetch(n)

        hits = await widen(counted, keep, k, first=first, total=total)
        if learned is not None and len(hits) == k:
            self._learn(learned, asked[-1])
        return self._chunks(hits)

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> int | None:
        """Remove by id; unknown ids are skipped. Returns how many records went, known
        from the snapshot read first (None for a store without ``get_by_ids``)."""
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise InvalidArgumentType(f"ids must be a sequence of str, got {type(ids).__name__}")
        scope = check_scope(scope)
        wanted = list(dict.fromkeys(self._store_id(scope, _check_id(i)) for i in ids))
        return await self._delete_records(wanted)

    async def _delete_records(self, wanted: list[str]) -> int | None:
        if not wanted:  # delete(None) or delete([]) means "everything" to some stores
            return 0
        before = await self._snapshot(wanted)
        if before is not None and not before:
            return 0  # none of them exists: nothing to do, and nothing to hand the store
        await finish_or_undo(self._delete_known(wanted, before), self._undo(wanted, before))
        return None if before is None else len(before)

    # --- helpers ---

    def _fetcher(
        self, query: str, scored: _Scored, conds: list[Condition], k: int
    ) -> tuple[Callable[[int], Awaitable[list[_Hit]]], int, int | None]:
        """``fetch(n)`` for ``conds`` in the store's dialect, its first ``n``, and the
        store's size when a short answer does not mean "no more" (FAISS' fetch_k)."""
        dialect = self.dialect
        native = self._native(conds)
        post_filter = dialect is not None and dialect.fetch_k and native is not None
        approximate = dialect is not None and dialect.approximate
        total = None
        first = k
        if post_filter:
            assert dialect is not None
            total = dialect.size(self.vectorstore) if dialect.size is not None else None
            first = max(k, _MIN_CANDIDATES)

        async def fetch(n: int) -> list[_Hit]:
            kwargs: dict[str, Any] = {}
            if native is not None:
                kwargs["filter"] = native
                if post_filter:
                    kwargs["fetch_k"] = n
            found = await scored(n, kwargs)
            if len(found) < n and approximate:
                found = await self._exact(query, n, native, found)
            return [(float(score), doc, self._own_metadata(doc)) for doc, score in found]

        return fetch, first, total

    def _native(self, conds: list[Condition]) -> Any:
        """``conds`` in the store's filter dialect (None: nothing to push). A refusal
        from a dialect that does not know the store (``filter_style="dict"`` or a
        function) is told which store it was for."""
        if self.dialect is None or not conds:
            return None
        try:
            return self.dialect.build(conds)
        except UnsupportedOperation as exc:
            name = type(self.vectorstore).__name__
            if name in str(exc):
                raise
            style = self.dialect.name
            raise UnsupportedOperation(f"{name} (filter_style {style!r}): {exc}") from exc

    def _learn(self, key: tuple[Any, ...], width: int) -> None:
        """Remember how many candidates this bucket needed (bounded: oldest go first)."""
        widths = self._widths
        widths.pop(key, None)
        if len(widths) >= _WIDTHS_KEPT:
            widths.pop(next(iter(widths)))
        widths[key] = width

    def _chunks(self, hits: list[_Hit]) -> list[tuple[float, Chunk]]:
        return [(score, self._chunk(doc, meta)) for score, doc, meta in hits]

    def _store_id(self, scope: Scope, chunk_id: str) -> str:
        return store_id(scope, chunk_id, uuid=self.ids.uuid)

    def _cannot_replace(self) -> StoreError:
        name = type(self.vectorstore).__name__
        return StoreError(
            f"{name} cannot delete records, so LangChainVectorPort cannot replace a record "
            f"by id: this write could leave a second copy beside one already stored, and "
            f"nothing was written. Use a store that deletes (or has get_by_ids, so new ids "
            f"can be told apart), or pass store_ids=IdConvention(..., replaces=True) if "
            f"adding a known id does replace the record"
        )

    def _refuse_unfiltered(self, scope: Scope) -> None:
        if self.dialect is None:
            refuse_unfiltered(
                type(self.vectorstore).__name__,
                scope,
                hint="pass filter_style= (a dialect name, a Dialect or a filter-building "
                "function) if the store does filter",
            )

    def _record_id(self, doc: Document) -> str | None:
        if doc.id:
            return doc.id
        key = self.ids.id_key
        carried = doc.metadata.get(key) if key is not None else None
        return str(carried) if carried is not None else None

    def _own_metadata(self, doc: Document) -> dict[str, Any]:
        """What the user stored: no port stamps, no keys the store adds on the way out."""
        meta = strip_stamps(doc.metadata)
        for key in self.ids.added_keys:
            meta.pop(key, None)
        return meta

    def _chunk(self, doc: Document, metadata: dict[str, Any]) -> Chunk:
        chunk_id = chunk_id_of(self._record_id(doc), doc.metadata)
        if chunk_id is None:  # a store that returns no ids at all: stable per text
            chunk_id = str(uuid.uuid5(_NAMESPACE, doc.page_content))
        return Chunk(chunk_id, doc.page_content, metadata)

    async def _scorer(self, query: str) -> _Scored:
        """The store's scored search for ``query``, as ``(k, kwargs) -> hits``."""
        store = self.vectorstore
        if self._in_memory:
            in_memory = cast(InMemoryVectorStore, store)
            vector = await in_memory.embedding.aembed_query(query)  # once, for every round

            async def by_vector(n: int, kwargs: dict[str, Any]) -> list[tuple[Document, float]]:
                if not any(vector):
                    # A query with no features (empty, punctuation only) is similar to
                    # nothing; LangChain's cosine helper raises on the all-NaN row.
                    return []
                return in_memory.similarity_search_with_score_by_vector(vector, k=n, **kwargs)

            return by_vector
        relevance = self._relevance
        if relevance is not None:
            fn = relevance

            async def converted(n: int, kwargs: dict[str, Any]) -> list[tuple[Document, float]]:
                raw = await store.asimilarity_search_with_score(query, k=n, **kwargs)
                return [(doc, fn(score)) for doc, score in raw]

            return converted

        async def relevant(n: int, kwargs: dict[str, Any]) -> list[tuple[Document, float]]:
            try:
                return await store.asimilarity_search_with_relevance_scores(query, k=n, **kwargs)
            except NotImplementedError as exc:
                raise StoreError(
                    f"{type(store).__name__} gives no relevance scores; pass "
                    f"relevance_score_fn= to convert its similarity_search_with_score "
                    f"values (higher must mean more relevant)"
                ) from exc

        return relevant

    async def _exact(
        self, query: str, n: int, native: Any, found: list[tuple[Document, float]]
    ) -> list[tuple[Document, float]]:
        """A short answer from an approximate store (Chroma), filtered or not, made exact
        when more records match than came back (``agentkit_langchain._chroma``), scored
        as the store's own search scores them."""
        store = self.vectorstore
        exact = await exact_search(store, query, n, native, len(found))
        if exact is None:
            return found  # the answer was complete
        score = self._relevance or relevance(store, exact.space)
        return [(doc, score(distance)) for doc, distance in exact.hits]

    async def _snapshot(self, ids: list[str]) -> list[Document] | None:
        """The records ``ids`` name now, as they were written, or None when the store
        cannot say (no ``get_by_ids``, or a record it returns without its id)."""
        store = self.vectorstore
        try:
            if self.ids.name == "chroma":
                found = await _chroma_get(store, ids)
            else:
                found = list(await store.aget_by_ids(ids))
        except NotImplementedError:
            return None
        out: list[Document] = []
        for doc in found:
            rid = self._record_id(doc)
            if rid is None:
                return None
            meta = dict(doc.metadata)
            for key in self.ids.added_keys:
                meta.pop(key, None)
            out.append(Document(page_content=doc.page_content, metadata=meta, id=rid))
        return out

    async def _delete_known(
        self, ids: list[str], found: list[Document] | None, *, replacing: bool = False
    ) -> None:
        """Delete the records of ``ids`` that exist.

        With a snapshot, only the ids it found go to the store (FAISS refuses a whole
        batch over one unknown id). Without one, the batch is tried whole, then id by
        id, an id the store calls unknown (ValueError/KeyError) being skipped.
        ``replacing``: clearing ids before an add; a store that cannot delete then
        cannot replace either, which is refused before the add.
        """
        store = self.vectorstore
        if found is not None:
            existing = [doc.id for doc in found if doc.id]
            if existing:
                await store.adelete(ids=existing)
            return
        try:
            await store.adelete(ids=ids)
        except NotImplementedError as exc:
            if replacing:
                raise self._cannot_replace() from exc
            raise StoreError(f"{type(store).__name__} cannot delete records") from exc
        except (ValueError, KeyError):
            if len(ids) == 1:
                return  # that one id is unknown: nothing to delete
            for one in ids:
                try:
                    await store.adelete(ids=[one])
                except (ValueError, KeyError):
                    continue

    def _undo(
        self, ids: list[str], before: list[Document] | None
    ) -> Callable[[], Awaitable[None]] | None:
        """How to put ``ids`` back as ``before`` found them (None: no way to)."""
        if before is None:
            return None
        store = self.vectorstore

        async def restore() -> None:
            now = await self._snapshot(ids)
            await self._delete_known(ids, now)
            if before:
                await store.aadd_documents(before, ids=[cast(str, doc.id) for doc in before])

        return restore

    # --- forgetting and listing (agentkit.vector.ForgettingPort) ---

    async def delete_where(self, where: Mapping[str, Any], *, scope: Scope) -> int:
        """Remove the scope's records whose own metadata matches ``where``; how many.

        The store's records are listed exactly (see ``_listed``) and re-checked for
        scope and ``where``; an empty ``where`` is refused (use ``delete_scope``).
        """
        flt = check_forget_where(where)
        return await self._forget(check_scope(scope), flt)

    async def delete_scope(self, *, scope: Scope) -> int:
        """Remove every record of this one scope; other tenants' records stay."""
        return await self._forget(check_scope(scope), None)

    async def _forget(self, scope: Scope, where: dict[str, Any] | None) -> int:
        self._refuse_unfiltered(scope)
        check_where_unreserved(where)
        wanted = [
            rid
            for rid, meta in await _listed(self.vectorstore)
            if in_scope(meta, scope) and matches_where(self._own_metadata(
                Document(page_content="", metadata=meta)), where)
        ]
        removed = await self._delete_records(wanted)
        return len(wanted) if removed is None else removed

    async def scan(
        self,
        *,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        after: str | None = None,
        limit: int = SCAN_LIMIT,
    ) -> list[Chunk]:
        """A page of the scope's chunks by ascending chunk id, ids above ``after`` only.

        The same bucket ``search`` sees (the tenancy codec's ``in_scope`` on every
        record, ``where`` on the record's own metadata), listed exactly where the store
        can list: LangChain's InMemoryVectorStore, Chroma, Qdrant and FAISS. Store ids
        are not chunk ids (tenants' ids are encoded or hashed), so each page lists the
        scope's records and sorts them; UnsupportedOperation for other stores.
        """
        flt, cursor, size = check_scan(where, after, limit)
        scope = check_scope(scope)
        self._refuse_unfiltered(scope)
        conds = where_conditions(flt)
        if conds is None:
            return []  # an empty any-of matches nothing
        if not is_unscoped(scope):
            conds = [*scope_conditions(scope), *conds]  # the unscoped bucket: re-check only
        native = self._native(conds)
        page: list[Chunk] = []
        for doc in await _records(self.vectorstore, self.dialect, native, "scan"):
            own = self._own_metadata(doc)
            if not in_scope(doc.metadata, scope) or not matches_where(own, flt):
                continue
            chunk = self._chunk(doc, own)
            if cursor is None or chunk.id > cursor:
                page.append(chunk)
        page.sort(key=lambda c: c.id)
        return page[:size]


async def _listed(store: VectorStore) -> list[tuple[str, dict[str, Any]]]:
    """Every record of ``store`` as (store id, metadata), read exactly (``_records``)."""
    docs = await _records(store, None, None, "delete by where or scope")
    return [(cast(str, doc.id), dict(doc.metadata)) for doc in docs]


async def _records(
    store: VectorStore, dialect: Dialect | None, native: Any, op: str
) -> list[Document]:
    """Every record of ``store`` (id, text, metadata as stored), read exactly.

    LangChain's VectorStore has no way to list records; these stores do: LangChain's
    InMemoryVectorStore (its dict), Chroma (``get``), Qdrant (``scroll``) and FAISS
    (its id map and docstore). ``native``, built by ``dialect``, narrows the read on
    Chroma and Qdrant; callers re-check every record anyway. Other stores get
    UnsupportedOperation naming ``op``.
    """
    name = dialect.name if dialect is not None else None
    if isinstance(store, InMemoryVectorStore):
        return [
            Document(id=rid, page_content=str(rec.get("text") or ""),
                     metadata=dict(rec.get("metadata") or {}))
            for rid, rec in list(store.store.items())
        ]
    kind = type(store).__name__
    getter = getattr(store, "get", None)
    if kind == "Chroma" and callable(getter):
        kwargs: dict[str, Any] = {"include": ["documents", "metadatas"]}
        if name == "chroma" and native is not None:
            kwargs["where"] = native
        result = await run_blocking(functools.partial(getter, **kwargs))
        return [
            Document(id=rid, page_content=text or "", metadata=dict(meta or {}))
            for rid, text, meta in zip(
                result["ids"], result["documents"], result["metadatas"], strict=False
            )
        ]
    if kind == "QdrantVectorStore" and hasattr(store, "collection_name"):
        flt = native if name == "qdrant" else None
        return await run_blocking(_qdrant_records, store, flt)
    if kind == "FAISS" and hasattr(store, "index_to_docstore_id"):
        return await run_blocking(_faiss_records, store)
    raise UnsupportedOperation(
        f"LangChainVectorPort cannot {op} on {kind}: LangChain offers no way to list a "
        "store's records (supported: InMemoryVectorStore, Chroma, QdrantVectorStore, "
        "FAISS); search, and delete by ids, work"
    )


def _qdrant_records(store: Any, flt: Any) -> list[Document]:
    """Every point of langchain-qdrant's collection, paged with ``scroll``."""
    client, name = store.client, store.collection_name
    if not client.collection_exists(name):
        return []
    out: list[Document] = []
    offset: Any = None
    while True:
        points, offset = client.scroll(
            name, scroll_filter=flt, limit=1000, offset=offset, with_payload=True,
            with_vectors=False,
        )
        for point in points:
            payload = point.payload or {}
            out.append(
                Document(
                    id=str(point.id),
                    page_content=str(payload.get(store.content_payload_key) or ""),
                    metadata=dict(payload.get(store.metadata_payload_key) or {}),
                )
            )
        if offset is None:
            return out


def _faiss_records(store: Any) -> list[Document]:
    """FAISS' mapped rows, read from its docstore (``search`` by id)."""
    out: list[Document] = []
    for rid in list(dict.fromkeys(store.index_to_docstore_id.values())):
        doc = store.docstore.search(rid)
        if isinstance(doc, Document):
            out.append(Document(id=rid, page_content=doc.page_content, metadata=dict(doc.metadata)))
    return out


async def _chroma_get(store: Any, ids: list[str]) -> list[Document]:
    """Chroma's get_by_ids fails on a record stored without metadata; read it directly."""
    result = await run_blocking(store.get, list(ids))
    return [
        Document(page_content=text or "", metadata=meta or {}, id=rid)
        for rid, text, meta in zip(
            result["ids"], result["documents"], result["metadatas"], strict=False
        )
    ]


def _deletes(store: VectorStore) -> bool:
    """Whether ``store``'s class implements delete (the base one only raises), as
    LangChain's own indexing API tells it."""
    kind = type(store)
    return kind.delete is not VectorStore.delete or kind.adelete is not VectorStore.adelete


def _exhausted(n: int, batch: list[_Hit], total: int | None) -> bool:
    """Whether an answer of ``batch`` to a fetch of ``n`` means the store has no more."""
    return n >= total if total is not None else len(batch) < n


def _check_id(chunk_id: object) -> str:
    if not isinstance(chunk_id, str) or not chunk_id:
        raise InvalidArgumentType(f"ids must be non-empty str, got {chunk_id!r}")
    return chunk_id


def _check_chunks(chunks: object) -> list[Chunk]:
    batch = check_chunks(chunks)
    for chunk in batch:
        check_unreserved(chunk.metadata)
    return batch
