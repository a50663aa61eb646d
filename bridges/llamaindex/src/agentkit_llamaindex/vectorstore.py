"""LlamaIndexVectorPort: a LlamaIndex vector index as an agentkit VectorPort.

So ``VectorMemory``'s write semantics (upsert by id, provenance-checked ids) hold on
the index a LlamaIndex app already has. Tenancy follows the shared codec in
``agentkit.interop`` (the LangChain port uses the same one): a scoped node carries
its scope in metadata and an injective store id; nodes without a stamp, such as
those written by plain LlamaIndex code, are the unscoped bucket under their own ids.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from llama_index.core import Settings, StorageContext, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.utils import embed_nodes
from llama_index.core.schema import BaseNode, MetadataMode, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)

from agentkit import interop
from agentkit.interop import check_unreserved, run_blocking
from agentkit.kernel import Scope
from agentkit.kernel.errors import (
    InvalidArgument,
    InvalidArgumentType,
    StoreError,
    UnsupportedOperation,
)
from agentkit.kernel.threads import CommitGate, run_gated
from agentkit.kernel.validate import (
    check_ids,
    check_k,
    check_metadata_where,
    check_query,
    check_scope,
)
from agentkit.vector._forgetting import SCAN_LIMIT, check_forget_where, check_scan
from agentkit.vector.port import Chunk, check_chunks, matches_where
from agentkit_llamaindex._chroma import exact_query, is_chroma
from agentkit_llamaindex._filters import (
    pushdown,
    store_can_filter,
    store_refuses_nul,
    without_orderings,
)
from agentkit_llamaindex._locks import ReadWriteLock
from agentkit_llamaindex.embedding import AgentkitEmbedding
from agentkit_llamaindex.mapping import STAMP_KEYS as ITEM_KEYS

__all__ = ["LlamaIndexVectorPort"]

T = TypeVar("T")

# The LLM never sees the port's bookkeeping (nor the item mapping's).
_HIDDEN = sorted({*interop.STAMP_KEYS, *ITEM_KEYS})
# A LlamaIndex node always carries its id, so a store nobody knows keeps ids plainly;
# known stores (Qdrant: UUIDs only) by ``agentkit.interop.id_convention``, as in the
# LangChain port.
_NODE_IDS = interop.IdConvention("llamaindex")
# When ``where`` can only be applied by the re-check, the first ask is this many
# times k, so the usual case is still one pass.
_OVERFETCH = 4


class _Hit(NamedTuple):
    score: float
    node: BaseNode


def _check_chunks(chunks: object) -> list[Chunk]:
    out = check_chunks(chunks)
    for chunk in out:
        for key in chunk.metadata:
            if not isinstance(key, str):
                raise InvalidArgumentType(f"chunk metadata keys must be str, got {key!r}")
        check_unreserved(chunk.metadata)
    return out


def _refuse_nul(scope: Scope, batch: list[Chunk]) -> None:
    """PostgreSQL text and JSONB cannot hold NUL: say so before anything is sent."""
    for name, value in (("org_id", scope.org_id), ("domain_id", scope.domain_id)):
        if value is not None and "\x00" in value:
            raise InvalidArgument(f"scope {name} {value!r} holds NUL, which PostgreSQL refuses")
    for chunk in batch:
        texts = [chunk.id, chunk.text, *chunk.metadata]
        texts += [v for v in chunk.metadata.values() if isinstance(v, str)]
        if any("\x00" in t for t in texts):
            raise InvalidArgument(f"chunk {chunk.id!r} holds NUL, which PostgreSQL refuses")


def _check_embed_model(model: object) -> None:
    if model is not None and not isinstance(model, BaseEmbedding):
        raise InvalidArgumentType(
            f"embed_model must be a llama_index BaseEmbedding, got {type(model).__name__}"
        )


def _stamped(metadata: Mapping[str, Any]) -> bool:
    return interop.ORG_KEY in metadata or interop.DOMAIN_KEY in metadata


def _relevance(raw: Any, distance: bool) -> float:
    # A query with no features (say, only punctuation) has a zero vector and cosine
    # is 0/0: no evidence of similarity, so 0.0 rather than NaN.
    if raw is None:
        return 0.0
    value = float(raw)
    if not math.isfinite(value):
        return 0.0
    return 1.0 / (1.0 + max(value, 0.0)) if distance else value


def _returns_distances(store: BasePydanticVectorStore) -> bool:
    """FAISS L2 indexes report squared distances (lower is better) as "similarities"."""
    if not any(cls.__name__ == "FaissVectorStore" for cls in type(store).__mro__):
        return False  # only FAISS does this among the stores we know
    try:
        faiss = importlib.import_module("faiss")
    except ImportError:
        return False
    return bool(getattr(store.client, "metric_type", None) == faiss.METRIC_L2)


def _missing_collection(store: BasePydanticVectorStore) -> bool:
    """True for a Qdrant store whose collection does not exist yet.

    LlamaIndex's ``QdrantVectorStore`` creates its collection on the first insert;
    a delete or query before that raises "Collection ... not found", which for us
    simply means there is nothing there yet.
    """
    client = getattr(store, "client", None)
    name = getattr(store, "collection_name", None)
    exists = getattr(client, "collection_exists", None)
    if not callable(exists) or not isinstance(name, str):
        return False
    return not exists(name)


def _index_embed_model(index: VectorStoreIndex) -> BaseEmbedding:
    """The model ``index`` embeds with, for a port built without ``embed_model=``.

    The bridges' ONLY read of a framework's private attribute, kept here on purpose
    and read once, when the port is built. llama-index-core gives ``VectorStoreIndex``
    no public accessor for its embed model and no public way to compare it with
    ``Settings.embed_model`` (its own retrievers read this same attribute). The public
    paths that use it implicitly do not fit the port: ``insert_nodes`` embeds inside
    the write, so a caller that times out while the text embeds could no longer be
    told "failed" with nothing landing later; a ``VectorIndexRetriever`` embeds the
    query only as part of its own store query (one more store round per search), and
    raises ``KeyError`` on the FAISS rows this port has unmapped. Defaulting to
    ``Settings.embed_model`` instead would silently mix two models' vectors in an
    index built with its own. ``LlamaIndexVectorPort(index, embed_model=...)`` and
    ``from_vector_store`` never come here.
    """
    model = getattr(index, "_embed_model", None)
    if not isinstance(model, BaseEmbedding):
        raise InvalidArgument(
            "cannot tell which embed model this VectorStoreIndex uses: pass it as "
            "LlamaIndexVectorPort(index, embed_model=...)"
        )
    return model


class LlamaIndexVectorPort:
    """A ``VectorStoreIndex`` (its vector store, docstore and embed model) as a VectorPort.

    Reads and writes go through the index's parts rather than the bare store because
    stores that keep no text (the simple store, FAISS) hold only ids and vectors; the
    text lives in the index's docstore. The embedding sees the chunk text only; the LLM
    sees user metadata but never the bridge's keys. Scores are relevance, higher is
    better (FAISS L2 distances are converted).

    Tenants: scope and ``where`` go to the store as ``MetadataFilters`` and every hit
    is re-checked; when the re-check leaves fewer than ``k``, the search asks again
    wider until ``k`` are found or the store has no more. A store that cannot filter
    (``FaissVectorStore``) is refused for scoped use before anything is written and
    works unscoped; ``can_filter=`` overrides the guess for a store we do not know.
    ``uuid_ids=`` likewise overrides whether record ids must be UUIDs (Qdrant).

    ``embed_model=`` names the model the index was built with: the port embeds
    chunks and queries with it itself (a write embeds before its commit point, so a
    caller that gives up meanwhile changes nothing). Pass it whenever you can;
    without it the port uses the index's own model (see ``_index_embed_model``).
    A different model than the index's would give vectors the index's own
    retrievers cannot compare.

    Args:
        index: The ``VectorStoreIndex`` to read and write.
        embed_model: The model the index was built with; ``None`` uses the index's own.
        can_filter: Whether the store filters by metadata (so scoped use is safe);
            ``None`` guesses from the store's class.
        uuid_ids: Whether the store needs UUID record ids; ``None`` guesses.

    Raises:
        InvalidArgumentType: ``index`` is not a ``VectorStoreIndex``.
    """

    def __init__(
        self,
        index: VectorStoreIndex,
        *,
        embed_model: BaseEmbedding | None = None,
        can_filter: bool | None = None,
        uuid_ids: bool | None = None,
    ) -> None:
        if not isinstance(index, VectorStoreIndex):
            raise InvalidArgumentType(
                f"index must be a llama_index VectorStoreIndex, got {type(index).__name__}"
            )
        _check_embed_model(embed_model)
        store = index.vector_store
        self.index = index
        self._embed_model = embed_model if embed_model is not None else _index_embed_model(index)
        self._can_filter = store_can_filter(store) if can_filter is None else bool(can_filter)
        known = interop.id_convention(store, _NODE_IDS)
        self._uuid_ids = known.uuid if uuid_ids is None else bool(uuid_ids)
        self._distances = _returns_distances(store)
        self._no_nul = store_refuses_nul(store)
        self._approximate = is_chroma(store)
        self._lock = ReadWriteLock()  # a search never sees a half-done replace

    @classmethod
    def from_vector_store(
        cls,
        store: BasePydanticVectorStore,
        *,
        embed_model: BaseEmbedding | None = None,
        can_filter: bool | None = None,
        uuid_ids: bool | None = None,
    ) -> LlamaIndexVectorPort:
        """Wrap a bare vector store; ``embed_model=None`` means ``Settings.embed_model``.

        The index built here gets the very model the port embeds with, so the two
        always agree.

        A store that keeps no text (the simple store, FAISS) gets a fresh docstore for
        it, so only what is written through this port can be read back; wrap the
        ``VectorStoreIndex`` that holds your nodes to reach those too.
        """
        if not isinstance(store, BasePydanticVectorStore):
            raise InvalidArgumentType(
                f"store must be a llama_index vector store, got {type(store).__name__}"
            )
        _check_embed_model(embed_model)
        model = embed_model if embed_model is not None else Settings.embed_model
        storage = StorageContext.from_defaults(vector_store=store)
        index = VectorStoreIndex(nodes=[], storage_context=storage, embed_model=model)
        return cls(index, embed_model=model, can_filter=can_filter, uuid_ids=uuid_ids)

    @property
    def vector_store(self) -> BasePydanticVectorStore:
        """The LlamaIndex vector store under the wrapped index, which holds the stamped records."""
        return self.index.vector_store

    @property
    def embed_model(self) -> BaseEmbedding:
        """The model chunks and queries are embedded with."""
        return self._embed_model

    def __repr__(self) -> str:
        return f"LlamaIndexVectorPort({type(self.vector_store).__name__})"

    def _check_scope(self, scope: object) -> Scope:
        checked = check_scope(scope)
        if not self._can_filter:
            interop.refuse_unfiltered(
                type(self.vector_store).__name__,
                checked,
                hint="pass can_filter=True if this store does honour MetadataFilters",
            )
        return checked

    async def _on_store(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread, where every store call of the port runs.

        That needs the store's sync client. A store built with an async client only
        (``QdrantVectorStore(aclient=...)``) fails there with an AttributeError on its
        missing client; that is said plainly instead. Nothing public tells such a store
        apart beforehand (``client`` is None also for a PGVectorStore not yet
        connected), so it is recognised by that failure.
        """
        try:
            return await run_blocking(fn, *args)
        except AttributeError as exc:
            if self.vector_store.client is not None:
                raise
            raise UnsupportedOperation(
                f"{type(self.vector_store).__name__} has no sync client (built with an "
                "async client only?): LlamaIndexVectorPort works through the store's sync "
                "API in a worker thread, so build the store with client= as well "
                "(LlamaIndexMemory reads an async-only store on its async path)"
            ) from exc

    def _record_id(self, scope: Scope, chunk_id: str) -> str:
        return interop.store_id(scope, chunk_id, uuid=self._uuid_ids)

    # -- writes -------------------------------------------------------------------

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        """Replace by id. A caller that gives up while the embedding runs changes nothing.

        The worker thread embeds first, then asks a gate before touching the index:
        once the caller has timed out or been cancelled it stops there, so a write
        reported failed never lands later. Past the gate the (short) index update is
        waited for and its real outcome reported.
        """
        batch = _check_chunks(chunks)
        scope = self._check_scope(scope)
        if self._no_nul:
            _refuse_nul(scope, batch)
        if not batch:
            return
        latest: dict[str, Chunk] = {c.id: c for c in batch}  # last write of an id wins
        nodes = [self._to_node(scope, c) for c in latest.values()]
        await run_gated(lambda gate: self._on_store(self._replace, nodes, gate))

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> int | None:
        """Remove by id; unknown ids are skipped. Gated like ``upsert``.

        Returns how many records went, counted under the write lock (None for a store
        that keeps text but cannot read nodes back by id, so cannot tell).
        """
        wanted = check_ids(ids)
        scope = self._check_scope(scope)
        if not wanted:
            return 0  # some stores read an empty id list as "everything"
        record_ids = list(dict.fromkeys(self._record_id(scope, i) for i in wanted))
        return await run_gated(lambda gate: self._on_store(self._delete_counted, record_ids, gate))

    def _to_node(self, scope: Scope, chunk: Chunk) -> TextNode:
        record_id = self._record_id(scope, chunk.id)
        meta: dict[str, Any] = dict(chunk.metadata)
        meta.update(interop.record_stamps(scope, chunk.id, record_id))
        return TextNode(
            id_=record_id,
            text=chunk.text,
            metadata=meta,
            excluded_embed_metadata_keys=list(meta),
            excluded_llm_metadata_keys=list(_HIDDEN),
        )

    def _replace(self, nodes: list[TextNode], gate: CommitGate | None = None) -> None:
        # Embed up front (the slow, side-effect-free part), so the gate sits right
        # before the first change to the index; insert_nodes keeps these vectors.
        vectors = embed_nodes(nodes, self._embed_model)
        for node in nodes:
            node.embedding = vectors[node.node_id]
        with self._lock.write():
            if gate is not None and not gate.enter():
                return  # the caller gave up and reported this write failed
            self._delete([n.node_id for n in nodes])
            self.index.insert_nodes(nodes)

    def _delete_counted(self, record_ids: list[str], gate: CommitGate | None = None) -> int | None:
        """``_delete_locked`` that first counts which of ``record_ids`` are held."""
        with self._lock.write():
            if gate is not None and not gate.enter():
                return 0
            held = self._held(record_ids)
            self._delete(record_ids)
            return held

    def _held(self, record_ids: list[str]) -> int | None:
        store = self.vector_store
        if not store.stores_text:
            table = self.index.index_struct.nodes_dict
            if isinstance(store, SimpleVectorStore):
                return sum(1 for i in record_ids if table.get(i) == i)
            wanted = set(record_ids)
            return sum(1 for node_id in set(table.values()) if node_id in wanted)
        try:
            return len({n.node_id for n in store.get_nodes(record_ids)})
        except NotImplementedError:
            return None
        except Exception:
            if _missing_collection(store):
                return 0
            raise

    def _delete_locked(self, record_ids: list[str], gate: CommitGate | None = None) -> None:
        with self._lock.write():
            if gate is not None and not gate.enter():
                return
            self._delete(record_ids)

    def _delete(self, record_ids: list[str]) -> None:
        store = self.vector_store
        if store.stores_text:
            try:
                store.delete_nodes(record_ids)
            except Exception:
                if _missing_collection(store):
                    return  # a fresh Qdrant collection: nothing to delete yet
                raise
            return
        self._delete_indexed(record_ids)

    def _delete_indexed(self, record_ids: list[str]) -> None:
        """Delete from a store that keeps no text: the index maps store ids to nodes.

        Only ids the index holds are passed on (the index struct raises on others).
        FAISS cannot delete a vector; its row is dropped from the index's map and
        docstore instead, so it can never be returned again (searches skip it).
        """
        index = self.index
        struct = index.index_struct
        table = struct.nodes_dict  # store id -> node id
        if isinstance(self.vector_store, SimpleVectorStore):
            held = {i: i for i in record_ids if table.get(i) == i}
        else:
            wanted = set(record_ids)
            held = {node_id: key for key, node_id in table.items() if node_id in wanted}
        if not held:
            return
        try:
            self.vector_store.delete_nodes(list(held))
        except NotImplementedError:
            pass  # FAISS: the vector stays, unreachable once unmapped below
        for node_id, key in held.items():
            struct.delete(key)
            index.docstore.delete_document(node_id, raise_error=False)
        index.storage_context.index_store.add_index_struct(struct)

    # -- reads --------------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
    ) -> list[tuple[float, Chunk]]:
        """The ``k`` most relevant chunks of ``scope``, best first, filtered by ``where``.

        Scope and ``where`` are pushed down as metadata filters where the store takes them,
        and every hit is checked again here. A scoped search on a store that pushed the
        scope filter yet returns another tenant's record raises StoreError: such a store
        cannot keep tenants apart, so it is refused rather than filtered after the fact.
        """
        query = check_query(query)
        k = check_k(k)
        wanted = check_metadata_where(where)
        scope = self._check_scope(scope)
        plan = pushdown(self.vector_store, scope, wanted, can_filter=self._can_filter)
        if plan is None:
            return []  # an empty any-of matches nothing
        filters, trusted = plan.filters, plan.scope_pushed
        embedded: list[list[float]] = []  # the query's vector, made once
        model = self._embed_model
        if isinstance(model, AgentkitEmbedding):
            # Natively async: embed on the loop. Any other model may block in its async
            # method too, so it embeds in the worker thread, with the first fetch.
            embedded.append(await model.aget_query_embedding(query))
        scoped = not interop.is_unscoped(scope)

        def keep(hit: _Hit | None) -> bool:
            if hit is None:
                return False
            meta = hit.node.metadata
            if not interop.in_scope(meta, scope):
                if scoped and trusted:
                    # The scope filter was pushed down: a store that still returns
                    # other tenants' rows ignores filters and cannot be trusted.
                    raise StoreError(
                        f"{type(self.vector_store).__name__} returned a record outside "
                        "the requested scope: it does not honour metadata filters, so it "
                        "cannot keep tenants apart; use a store that supports filtering "
                        "(or can_filter=False, unscoped only)"
                    )
                return False  # another tenant's record, met by an unscoped query
            return matches_where(interop.strip_stamps(meta), wanted)

        def fetcher(flt: MetadataFilters | None) -> Callable[[int], Awaitable[list[_Hit | None]]]:
            async def fetch(n: int) -> list[_Hit | None]:
                return await self._on_store(self._query, query, embedded, n, flt)

            return fetch

        first = k if plan.complete else k * _OVERFETCH
        hits: list[_Hit | None] | None = None
        if not scoped and plan.scope_in_filters:
            hits = await self._unscoped_first_pass(fetcher(plan.where_only), keep, k, first)
        if hits is None:
            hits = await interop.widen(fetcher(filters), keep, k, first=first)
        out: list[tuple[float, Chunk]] = []
        for hit in hits:
            assert hit is not None  # keep() refused the gaps
            node = hit.node
            meta = node.metadata
            chunk_id = interop.chunk_id_of(node.node_id, meta) or node.node_id
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            out.append((hit.score, Chunk(chunk_id, text, interop.strip_stamps(meta))))
        return out

    @staticmethod
    async def _unscoped_first_pass(
        fetch: Callable[[int], Awaitable[list[_Hit | None]]],
        keep: Callable[[_Hit | None], bool],
        k: int,
        first: int,
    ) -> list[_Hit | None] | None:
        """One plain pass for the unscoped bucket; None if tenants' records got in the way.

        With no tenant records among the hits, the plain search (no "not stamped"
        condition) is the whole answer, at the store's own speed; otherwise the caller
        widens with the bucket's filter, which the store evaluates exactly.
        """
        batch = await fetch(first)
        kept = [hit for hit in batch if keep(hit)]
        if len(kept) >= k:
            return kept[:k]
        foreign = any(hit is not None and _stamped(hit.node.metadata) for hit in batch)
        return None if foreign or len(batch) >= first else kept

    def _query(
        self,
        query: str,
        embedded: list[list[float]],
        n: int,
        filters: MetadataFilters | None,
    ) -> list[_Hit | None]:
        """One store query for ``n`` hits, best first; ``None`` marks an unreadable one.

        The query is embedded here, in the same worker hop as the first store call,
        and kept in ``embedded`` for any wider rounds. Gaps keep their place so the
        caller can tell a store that returned fewer than asked (exhausted) from one
        whose rows we could not use.
        """
        if not embedded:
            embedded.append(self._embed_model.get_query_embedding(query))
        store = self.vector_store
        request = VectorStoreQuery(
            query_embedding=embedded[0], similarity_top_k=n, filters=filters, query_str=query
        )
        with self._lock.read():
            try:
                result = store.query(request)
            except TypeError:
                dropped, rest = without_orderings(filters)
                if not dropped:
                    raise
                request.filters = rest  # the re-check applies the orderings
                result = store.query(request)
            except Exception:
                if _missing_collection(store):
                    return []
                raise
            got = len(result.ids or result.nodes or [])
            if got < n and self._approximate:
                # Chroma's HNSW can answer short while more match (identical vectors),
                # filtered or not: then the matches are ranked exactly.
                exact = exact_query(store, embedded[0], n, filters, got)
                if exact is not None:
                    result = exact
            return self._hits(result)

    # -- forgetting and listing (agentkit.vector.ForgettingPort) ---------------------

    async def delete_where(self, where: Mapping[str, Any], *, scope: Scope) -> int:
        """Remove the scope's records matching ``where``; how many went.

        The store lists candidates (``get_nodes`` with the pushed-down filters, or the
        index's own map for stores without text); each is re-checked for scope and
        ``where`` before it is deleted. An empty ``where`` is refused: use
        ``delete_scope``. StoreError when the store cannot list its records.
        """
        flt = check_forget_where(where)
        return await self._forget(self._check_scope(scope), flt)

    async def delete_scope(self, *, scope: Scope) -> int:
        """Remove every record of this one scope; other tenants' records stay."""
        return await self._forget(self._check_scope(scope), None)

    async def _forget(self, scope: Scope, where: dict[str, Any] | None) -> int:
        def matching() -> list[str]:
            with self._lock.read():
                nodes = self._listed(scope, where)
            return [
                node.node_id
                for node in nodes
                if interop.in_scope(node.metadata, scope)
                and matches_where(interop.strip_stamps(node.metadata), where)
            ]

        record_ids = list(dict.fromkeys(await self._on_store(matching)))
        if not record_ids:
            return 0
        await run_gated(lambda gate: self._on_store(self._delete_locked, record_ids, gate))
        return len(record_ids)

    async def scan(
        self,
        *,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        after: str | None = None,
        limit: int = SCAN_LIMIT,
    ) -> list[Chunk]:
        """A page of the scope's chunks by ascending chunk id, ids above ``after`` only.

        The same bucket ``search`` sees: the store lists candidates as for
        ``delete_where`` (``get_nodes`` with the pushed-down filters, or the index's own
        map for stores without text) and each is re-checked with the tenancy codec and
        ``where``. Store ids are not chunk ids, so each page lists the scope's records
        and sorts them. UnsupportedOperation when the store cannot list its records.
        """
        flt, cursor, size = check_scan(where, after, limit)
        scope = self._check_scope(scope)

        def listed() -> list[BaseNode]:
            with self._lock.read():
                return self._listed(scope, flt)

        page: list[Chunk] = []
        for node in await self._on_store(listed):
            meta = node.metadata
            if not interop.in_scope(meta, scope):
                continue
            own = interop.strip_stamps(meta)
            if not matches_where(own, flt):
                continue
            chunk_id = interop.chunk_id_of(node.node_id, meta) or node.node_id
            if cursor is None or chunk_id > cursor:
                text = node.get_content(metadata_mode=MetadataMode.NONE)
                page.append(Chunk(chunk_id, text, own))
        page.sort(key=lambda c: c.id)
        return page[:size]

    def _listed(self, scope: Scope, where: dict[str, Any] | None) -> list[BaseNode]:
        interop.check_where_unreserved(where)
        store = self.vector_store
        if not store.stores_text:
            node_ids = list(dict.fromkeys(self.index.index_struct.nodes_dict.values()))
            found = self.index.docstore.get_nodes(node_ids, raise_error=False)
            return [node for node in found if node is not None]
        plan = pushdown(store, scope, where, can_filter=self._can_filter)
        if plan is None:
            return []  # an empty any-of matches nothing
        try:
            return list(store.get_nodes(None, filters=plan.filters))
        except NotImplementedError as exc:
            raise UnsupportedOperation(
                f"{type(store).__name__} cannot list its records (no get_nodes), so "
                "LlamaIndexVectorPort cannot scan or delete by where or scope; search and "
                "delete by ids work"
            ) from exc
        except Exception:
            if _missing_collection(store):
                return []
            raise

    def _hits(self, result: VectorStoreQueryResult) -> list[_Hit | None]:
        scores = list(result.similarities or [])
        if result.nodes:
            nodes: list[BaseNode | None] = list(result.nodes)
        else:
            # A store without text returns store ids: the index maps them to nodes
            # kept in its docstore. An id it does not map (a FAISS row deleted above,
            # a node of another index sharing the store) is a gap.
            table = self.index.index_struct.nodes_dict
            node_ids = [table.get(i) for i in result.ids or []]
            found = self.index.docstore.get_nodes(
                [i for i in node_ids if i is not None], raise_error=False
            )
            by_id = {node.node_id: node for node in found if node is not None}
            nodes = [by_id.get(i) if i is not None else None for i in node_ids]
        out: list[_Hit | None] = []
        for position, node in enumerate(nodes):
            if node is None:
                out.append(None)
                continue
            raw = scores[position] if position < len(scores) else None
            out.append(_Hit(_relevance(raw, self._distances), node))
        return out
