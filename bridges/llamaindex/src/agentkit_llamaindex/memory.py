"""LlamaIndexMemory: any LlamaIndex retriever as a read-only MemorySource."""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, ObjectType, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from agentkit import interop
from agentkit.interop import run_blocking
from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_ctx, check_k, check_metadata_where, check_query
from agentkit.observability import traced_memory
from agentkit.state.memory import MemoryItem
from agentkit.vector.port import matches_where
from agentkit_llamaindex._chroma import exact_query, is_chroma
from agentkit_llamaindex._filters import has_empty_any_of, merge_filters, pushdown, query_bundle
from agentkit_llamaindex.mapping import from_node
from agentkit_llamaindex.retriever import AgentkitRetriever

__all__ = ["LlamaIndexMemory"]

# When ``where`` can only be applied by the re-check, the first ask is this many
# times ``k``; the fetch widens from there if the re-check still leaves too few.
OVERFETCH = 4

# Settings from_index passes on to each VectorIndexRetriever, read off its public
# signature (its **kwargs only carries vector_store_kwargs); the rest are ours.
_RETRIEVER_KEYWORDS = (
    frozenset(inspect.signature(VectorIndexRetriever.__init__).parameters)
    - {"self", "index", "similarity_top_k", "filters", "node_ids", "doc_ids", "kwargs"}
) | {"vector_store_kwargs"}

# A per-call retriever asking for ``n`` results (None: nothing can match).
_Make = Callable[[int], BaseRetriever | None]
# A short answer of ``got`` nodes, ranked exactly for ``n`` (None: it was complete).
_Exact = Callable[[QueryBundle, int, int], list[NodeWithScore] | None]
# VectorIndexRetriever settings that leave its search a plain top-n.
_PLAIN_KEYWORDS = frozenset({"embed_model", "verbose", "callback_manager"})


def _native_async(retriever: BaseRetriever) -> bool:
    """Whether awaiting ``aretrieve`` is safe and non-blocking.

    LlamaIndex's default ``_aretrieve`` runs the sync path on the loop. A
    VectorIndexRetriever's async path is only as good as its store's: the simple
    store's ``aquery`` runs the sync search on the loop, and a Qdrant store built
    with a sync client only (the usual local set-up) has none at all. So its sync
    path goes to a worker thread, unless the store turns out to have no sync path
    (see ``LlamaIndexMemory._retrieve``).

    ``_aretrieve`` is the hook LlamaIndex documents for retriever subclasses to
    override; comparing it with the base class's is the only way to tell whether a
    retriever has its own async path (nothing public says so). It is read on the
    class, never called.
    """
    if type(retriever) is VectorIndexRetriever:
        return False
    return type(retriever)._aretrieve is not BaseRetriever._aretrieve


def _check_ids(name: str, ids: object) -> list[str] | None:
    if ids is None:
        return None
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise InvalidArgumentType(f"{name} must be a list of str, got {type(ids).__name__}")
    out = list(ids)
    for one in out:
        if not isinstance(one, str):
            raise InvalidArgumentType(f"{name} must hold str ids, got {one!r}")
    return out


@dataclasses.dataclass(frozen=True)
class _IndexSpec:
    """What ``from_index`` was told: everything a per-query retriever is built from.

    Held here because a ``VectorIndexRetriever`` exposes none of it publicly; with
    it, ``where`` is merged into the filters and the restrictions are re-checked.
    """

    index: VectorStoreIndex
    filters: MetadataFilters | None = None
    node_ids: list[str] | None = None
    doc_ids: list[str] | None = None
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def build(self, n: int, filters: MetadataFilters | None) -> VectorIndexRetriever:
        return VectorIndexRetriever(
            self.index,
            similarity_top_k=n,
            filters=filters,
            node_ids=None if self.node_ids is None else list(self.node_ids),
            doc_ids=None if self.doc_ids is None else list(self.doc_ids),
            **self.kwargs,
        )

    def plan(self, where: dict[str, Any] | None) -> tuple[_Make, bool]:
        """Rebuilt per query rather than copied: the index may have grown since."""
        filters, complete = self._filters(where)
        return (lambda n: self.build(n, filters)), complete

    def exact(self, where: dict[str, Any] | None) -> _Exact | None:
        """On Chroma (approximate), how to rank a short answer's matches exactly.

        None for other stores, and when the retriever is asked for more than a plain
        top-n (node or doc ids, a query mode, store kwargs): an exact ranking here
        would not reproduce what the store does with those.
        """
        store = self.index.vector_store
        plain = self.node_ids is None and self.doc_ids is None
        if not is_chroma(store) or not plain or set(self.kwargs) - _PLAIN_KEYWORDS:
            return None
        filters, _ = self._filters(where)
        docstore = self.index.docstore

        def ranked(bundle: QueryBundle, n: int, got: int) -> list[NodeWithScore] | None:
            # The retriever's own query vector: VectorIndexRetriever's (sync) retrieve
            # embeds the bundle it is handed, with its embed model, and keeps the vector
            # there, so the exact ranking uses the very vector the store was asked with.
            vector = bundle.embedding
            if vector is None:
                return None  # nothing was embedded: the store's answer stands
            result = exact_query(store, vector, n, filters, got)
            if result is None:
                return None
            return [
                NodeWithScore(node=_stored(docstore, node), score=score)
                for node, score in zip(result.nodes or [], result.similarities or [], strict=True)
            ]

        return ranked

    def _filters(self, where: dict[str, Any] | None) -> tuple[MetadataFilters | None, bool]:
        # The simple store's orderings raise on a value of another type mid-retrieve,
        # where they cannot be taken back: the re-check applies them instead.
        pushed = pushdown(self.index.vector_store, None, where, orderings=False)
        filters, complete = self.filters, not where
        if pushed is not None:  # (an empty any-of never gets here)
            filters, merged = merge_filters(self.filters, pushed.filters)
            complete = pushed.complete and merged
        return filters, complete

    def allowed(self) -> Callable[[NodeWithScore], bool] | None:
        """The ``node_ids``/``doc_ids`` restriction, as a re-check.

        Several stores (Chroma, Postgres, FAISS) ignore them in the query; a wider
        fetch must still never bring back a node outside the user's restriction.
        """
        if self.node_ids is None and self.doc_ids is None:
            return None
        nodes = None if self.node_ids is None else frozenset(self.node_ids)
        docs = None if self.doc_ids is None else frozenset(self.doc_ids)

        def allowed(nws: NodeWithScore) -> bool:
            node = nws.node
            if nodes is not None and node.node_id not in nodes:
                return False
            return docs is None or node.ref_doc_id in docs

        return allowed


def _stored(docstore: Any, node: BaseNode) -> BaseNode:
    """A non-text node (an IndexNode) as the docstore holds it, as VectorIndexRetriever
    swaps it in; a text node, or one the docstore lacks, as the store returned it."""
    if node.as_related_node_info().node_type == ObjectType.TEXT:
        return node
    found: BaseNode | None = docstore.get_node(node.node_id, raise_error=False)
    return found if found is not None else node


def _bm25_plan(r: Any, where: dict[str, Any] | None) -> _Make:
    # BM25Retriever takes filters only at construction, as a weight mask over its
    # corpus. The mask only zeroes scores: masked nodes still come back (at 0.0) when
    # k exceeds the matches, which is why every result is re-checked afterwards.
    corpus = r.corpus
    mask: list[int] | None = None
    if where:
        mask = [int(matches_where(entry, where)) for entry in corpus]
        if r.corpus_weight_mask:
            mask = [a & int(bool(b)) for a, b in zip(mask, r.corpus_weight_mask, strict=True)]

    def make(n: int) -> BaseRetriever | None:
        if mask is not None and not any(mask):
            return None
        clone = copy.copy(r)
        clone.similarity_top_k = min(n, len(corpus))
        if mask is not None:
            clone.corpus_weight_mask = mask
        out: BaseRetriever = clone
        return out

    return make


def _top_k_plan(r: BaseRetriever) -> _Make | None:
    """A copy with its public ``similarity_top_k`` set, if the retriever has one.

    The copy keeps everything else the user configured (a VectorIndexRetriever's
    ``node_ids``, ``doc_ids`` and filters among them), so nothing is widened.
    """
    current = getattr(r, "similarity_top_k", None)
    if not isinstance(current, int) or isinstance(current, bool):
        return None
    probe = copy.copy(r)
    try:
        probe.similarity_top_k = current  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return None  # read-only or validated: ask as configured, cut afterwards

    def make(n: int) -> BaseRetriever:
        clone = copy.copy(r)
        clone.similarity_top_k = n  # type: ignore[attr-defined]
        return clone

    return make


def _tenant_view(item: MemoryItem, scope: Scope) -> MemoryItem | None:
    """Records a LlamaIndexVectorPort wrote for a tenant stay that tenant's.

    An index can hold both the app's shared corpus and tenant facts written through
    the port. Unstamped nodes pass; a stamped node passes only for its own scope, and
    comes back as the port would return it: its chunk id, no scope keys.
    """
    meta = item.metadata
    if interop.ORG_KEY not in meta and interop.DOMAIN_KEY not in meta:
        if interop.CHUNK_KEY not in meta:
            return item
    elif not interop.in_scope(meta, scope):
        return None
    chunk_id = interop.chunk_id_of(item.id, meta)
    return dataclasses.replace(item, metadata=interop.strip_stamps(meta), id=chunk_id)


def _nested_where(
    own: dict[str, Any] | None, where: dict[str, Any] | None
) -> dict[str, Any] | None:
    # The nested retriever's own where is its restriction and stays; ours is added
    # (where a key clashes, the re-check applies ours on top of its answer).
    if not own and not where:
        return None
    return {**(where or {}), **(own or {})}


def _cut(
    items: list[MemoryItem | None], keep: Callable[[MemoryItem | None], bool], k: int
) -> list[MemoryItem]:
    return [i for i in items if i is not None and keep(i)][:k]


@traced_memory(kind="client")
class LlamaIndexMemory:
    """A LlamaIndex retriever queried as an agentkit MemorySource.

    Give it the index itself (``LlamaIndexMemory(index)``, or ``from_index`` with
    filters, ``node_ids``, ``doc_ids``) and each query builds its own public
    ``VectorIndexRetriever``: ``k`` is its ``similarity_top_k``, ``where`` is ANDed
    onto your filters and goes to the store, ``node_ids``/``doc_ids`` are re-checked
    on every hit (Chroma, Postgres and FAISS ignore them in a query), and nodes
    inserted later are found. Give it a retriever and it is queried as you built it:
    ``k`` goes into a per-call copy's public ``similarity_top_k`` (yours is never
    mutated), and the copy keeps your own filters and restrictions, so nothing is
    widened; what a store does with them is the store's own behaviour (a retriever
    from ``index.as_retriever()`` is LlamaIndex's snapshot of the nodes the index
    held then). Every result is re-checked against ``where`` and cut to ``k``; when
    the re-check leaves fewer than ``k``, the retriever is asked again wider until
    ``k`` match or it has no more. Sync-only
    retrievers run on agentkit's wide thread pool, so a CompositeMemory over several
    of them is concurrent; retrievers with their own ``_aretrieve`` are awaited.

    A wrapped ``AgentkitRetriever`` runs its stack with the caller's ``ctx`` (its
    tenant and timeline), ``k`` and ``where`` added to its own.

    Nodes a ``LlamaIndexVectorPort`` wrote for a tenant are returned only to that
    tenant (``ctx.scope``); everything else in the index is treated as shared. Scope
    any other per-tenant data with ``where`` or wrap this source in ``ScopedMemory``.
    Read-only: writes go through ``VectorMemory(LlamaIndexVectorPort(index))``.

    Args:
        retriever: A LlamaIndex retriever, or a ``VectorStoreIndex`` to build one per
            query from.
        name: The name items and traces carry.

    Raises:
        InvalidArgumentType: ``retriever`` is neither a ``BaseRetriever`` nor a
            ``VectorStoreIndex``.
        InvalidArgument: An empty ``name``.
    """

    accepts_writes = False

    def __init__(
        self, retriever: BaseRetriever | VectorStoreIndex, name: str = "llamaindex"
    ) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"name must be a non-empty str, got {name!r}")
        self.name = name
        if isinstance(retriever, VectorStoreIndex):
            self._use_index(_IndexSpec(retriever))
            return
        if not isinstance(retriever, BaseRetriever):
            raise InvalidArgumentType(
                "retriever must be a llama_index BaseRetriever or VectorStoreIndex, "
                f"got {type(retriever).__name__}"
            )
        self.retriever: BaseRetriever = retriever
        self._index: _IndexSpec | None = None
        self._native = _native_async(retriever)
        self._allowed: Callable[[NodeWithScore], bool] | None = None

    @classmethod
    def from_index(
        cls,
        index: VectorStoreIndex,
        *,
        name: str = "llamaindex",
        filters: MetadataFilters | None = None,
        node_ids: Sequence[str] | None = None,
        doc_ids: Sequence[str] | None = None,
        **retriever_kwargs: Any,
    ) -> LlamaIndexMemory:
        """An index queried through a fresh ``VectorIndexRetriever`` per query.

        ``filters``, ``node_ids``, ``doc_ids`` and any other ``VectorIndexRetriever``
        keyword (``vector_store_query_mode``, ``alpha``, ``vector_store_kwargs``...)
        are your restriction and settings: ``where`` is ANDed onto ``filters``, and
        ``node_ids``/``doc_ids`` are re-checked on every hit. ``similarity_top_k``
        is each query's ``k``, so it is refused here.
        """
        if not isinstance(index, VectorStoreIndex):
            raise InvalidArgumentType(
                f"index must be a llama_index VectorStoreIndex, got {type(index).__name__}"
            )
        if filters is not None and not isinstance(filters, MetadataFilters):
            raise InvalidArgumentType(
                f"filters must be llama_index MetadataFilters, got {type(filters).__name__}"
            )
        if "similarity_top_k" in retriever_kwargs:
            raise InvalidArgument("similarity_top_k is set per query from k; do not pass it")
        unknown = sorted(set(retriever_kwargs) - _RETRIEVER_KEYWORDS)
        if unknown:
            # VectorIndexRetriever swallows unknown keywords: a typo would do nothing.
            raise InvalidArgument(
                f"VectorIndexRetriever takes no keyword {', '.join(unknown)}; "
                f"known: {', '.join(sorted(_RETRIEVER_KEYWORDS))}"
            )
        spec = _IndexSpec(
            index,
            filters,
            _check_ids("node_ids", node_ids),
            _check_ids("doc_ids", doc_ids),
            dict(retriever_kwargs),
        )
        mem = cls(index, name=name)
        mem._use_index(spec)
        return mem

    def _use_index(self, spec: _IndexSpec) -> None:
        # A sample of the per-query retriever: what ``retriever`` shows, and a bad
        # setting (say, an unknown query mode) fails here, not at the first query.
        self.retriever = spec.build(DEFAULT_SIMILARITY_TOP_K, spec.filters)
        self._index = spec
        self._native = _native_async(self.retriever)
        self._allowed = spec.allowed()

    def __repr__(self) -> str:
        return f"LlamaIndexMemory({type(self.retriever).__name__}, name={self.name!r})"

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Retrieve with ``k`` and ``where`` pushed down, then re-check and cut to ``k``.

        Nodes stamped for another tenant or failing ``where`` are dropped, and the retriever
        is asked again wider until ``k`` are kept or it runs out; a nested
        ``AgentkitRetriever`` gets the caller's ``ctx``.
        """
        query = check_query(query)
        k = check_k(k)
        where = check_metadata_where(where) or None
        ctx = check_ctx(ctx)
        if has_empty_any_of(where):
            return []
        bundle = query_bundle(query)
        scope = ctx.scope

        def keep(item: MemoryItem | None) -> bool:
            return item is not None and (where is None or matches_where(item.metadata, where))

        r = self.retriever
        if isinstance(r, AgentkitRetriever):
            call = r.bind(ctx=ctx, k=k, where=_nested_where(r.where, where))
            nodes = await call.aretrieve(bundle)
            return _cut(self._items(nodes, scope), keep, k)

        make, first = self._plan(k, where)
        if make is None:  # k cannot be set: one ask as configured, cut to k
            return _cut(self._items(await self._retrieve(r, bundle), scope), keep, k)

        exact = self._index.exact(where) if self._index is not None else None

        async def fetch(n: int) -> list[MemoryItem | None]:
            call = make(n)
            if call is None:
                return []
            nodes = await self._retrieve(call, bundle)
            if len(nodes) < n and exact is not None:
                # Chroma's HNSW can answer short while more match (identical vectors):
                # then the matches are ranked exactly, so widening does not stop early.
                ranked = await run_blocking(exact, bundle, n, len(nodes))
                if ranked is not None:
                    nodes = ranked
            return self._items(nodes, scope)

        return _cut(await interop.widen(fetch, keep, k, first=first), keep, k)

    def _plan(self, k: int, where: dict[str, Any] | None) -> tuple[_Make | None, int]:
        """How to ask the retriever for ``n`` results, and how many to ask first."""
        r = self.retriever
        overfetch = k * OVERFETCH
        if self._index is not None:
            make, complete = self._index.plan(where)
            return make, k if complete else overfetch
        if hasattr(r, "bm25") and isinstance(getattr(r, "corpus", None), list):
            return _bm25_plan(r, where), k
        return _top_k_plan(r), k if not where else overfetch

    async def _retrieve(self, call: BaseRetriever, bundle: QueryBundle) -> list[NodeWithScore]:
        if self._native:
            return await call.aretrieve(bundle)
        try:
            return await run_blocking(call.retrieve, bundle)
        except Exception:
            if not isinstance(call, VectorIndexRetriever):
                raise
            # A store with no sync path (QdrantVectorStore(aclient=...) only) shows
            # itself here: nothing public says so beforehand (``client`` is None also
            # for a PGVectorStore not yet connected, and a user's retriever does not
            # show its store). A query changes nothing, so it is asked on its async
            # path; if that answers, this source uses that path from now on, else the
            # sync path's error stands.
            try:
                nodes = await call.aretrieve(bundle)
            except Exception:
                pass
            else:
                self._native = True
                return nodes
            raise

    def _items(self, nodes: list[NodeWithScore], scope: Scope) -> list[MemoryItem | None]:
        allowed = self._allowed
        return [
            _tenant_view(from_node(nws, source=self.name), scope)
            if allowed is None or allowed(nws)
            else None
            for nws in nodes
        ]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """No-op: a retriever has nowhere to write (see ``accepts_writes``)."""
