"""LlamaIndexMemory: any LlamaIndex retriever as a read-only MemorySource."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from agentkit import interop
from agentkit.interop import run_blocking
from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_ctx, check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.memory import MemoryItem
from agentkit.vector.port import matches_where
from agentkit_llamaindex._filters import has_empty_any_of, merge_filters, pushdown, query_bundle
from agentkit_llamaindex.mapping import from_node
from agentkit_llamaindex.retriever import AgentkitRetriever

__all__ = ["LlamaIndexMemory"]

# When ``where`` can only be applied by the re-check, the first ask is this many
# times ``k``; the fetch widens from there if the re-check still leaves too few.
OVERFETCH = 4

# A per-call retriever asking for ``n`` results (None: nothing can match).
_Make = Callable[[int], BaseRetriever | None]


def _native_async(retriever: BaseRetriever) -> bool:
    """Whether awaiting ``aretrieve`` is safe and non-blocking.

    LlamaIndex's default ``_aretrieve`` runs the sync path on the loop. A
    VectorIndexRetriever's async path is only as good as its store's: the simple
    store's ``aquery`` runs the sync search on the loop, and a Qdrant store built
    with a sync client only (the usual local set-up) has none at all. Its sync path
    works on every store, so it goes to a worker thread.
    """
    if type(retriever) is VectorIndexRetriever:
        return False
    return type(retriever)._aretrieve is not BaseRetriever._aretrieve


def _own_node_ids(r: BaseRetriever) -> list[str] | None:
    """The node ids a VectorIndexRetriever is restricted to, or None for "the index".

    ``as_retriever()`` passes a snapshot of every node the index holds at that
    moment; that is not a restriction but a stale view (later inserts would be
    invisible), so it is followed live. Any other list was chosen by the user and is
    kept as it is: the bridge never widens a retriever's own restriction. (A list
    equal to all of the index's nodes when wrapped cannot be told from the snapshot.)
    """
    if type(r) is not VectorIndexRetriever or r._node_ids is None:
        return None
    snapshot = list(r._index.index_struct.nodes_dict.values())
    return None if r._node_ids == snapshot else list(r._node_ids)


def _allowed(
    r: BaseRetriever, node_ids: list[str] | None
) -> Callable[[NodeWithScore], bool] | None:
    """A VectorIndexRetriever's own ``node_ids``/``doc_ids``, as a re-check.

    Several stores (Chroma, Postgres, FAISS) ignore them in the query; a wider fetch
    must still never bring back a node outside the user's restriction.
    """
    doc_ids = r._doc_ids if type(r) is VectorIndexRetriever else None
    if node_ids is None and doc_ids is None:
        return None
    nodes = None if node_ids is None else frozenset(node_ids)
    docs = None if doc_ids is None else frozenset(doc_ids)

    def allowed(nws: NodeWithScore) -> bool:
        node = nws.node
        if nodes is not None and node.node_id not in nodes:
            return False
        return docs is None or node.ref_doc_id in docs

    return allowed


def _vector_index_plan(
    r: VectorIndexRetriever, node_ids: list[str] | None, where: dict[str, Any] | None
) -> tuple[_Make, bool]:
    """Rebuilt per query rather than copied: the index may have grown since."""
    index = r._index
    plan = pushdown(index.vector_store, None, where)
    filters, complete = r._filters, not where
    if plan is not None:  # (an empty any-of never gets here)
        filters, merged = merge_filters(r._filters, plan.filters)
        complete = plan.complete and merged

    def make(n: int) -> BaseRetriever:
        return VectorIndexRetriever(
            index,
            similarity_top_k=n,
            vector_store_query_mode=r._vector_store_query_mode,
            filters=filters,
            alpha=r._alpha,
            node_ids=list(node_ids) if node_ids is not None else None,
            doc_ids=r._doc_ids,
            sparse_top_k=r._sparse_top_k,
            hybrid_top_k=r._hybrid_top_k,
            callback_manager=r.callback_manager,
            object_map=r.object_map,
            embed_model=r._embed_model,
            verbose=r._verbose,
            vector_store_kwargs=r._kwargs,
        )

    return make, complete


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
    """A copy with ``similarity_top_k`` set, if the retriever lets us set it."""
    for attr in ("similarity_top_k", "_similarity_top_k"):
        current = getattr(r, attr, None)
        if not isinstance(current, int) or isinstance(current, bool):
            continue
        probe = copy.copy(r)
        try:
            setattr(probe, attr, current)
        except (AttributeError, TypeError, ValueError):
            continue  # read-only or validated: ask as configured, cut afterwards

        def make(n: int, attr: str = attr) -> BaseRetriever:
            clone = copy.copy(r)
            setattr(clone, attr, n)
            return clone

        return make
    return None


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

    ``k`` and ``where`` are pushed down where the retriever can take them (a per-call
    copy; yours is never mutated, and its own ``node_ids``, ``doc_ids`` and filters
    still hold: ``where`` is ANDed onto them). Every result is re-checked against
    ``where`` and cut to ``k``; when the re-check leaves fewer than ``k``, the
    retriever is asked again wider until ``k`` match or it has no more. Sync-only
    retrievers run on agentkit's wide thread pool, so a CompositeMemory over several
    of them is concurrent; retrievers with their own ``_aretrieve`` are awaited.

    A wrapped ``AgentkitRetriever`` runs its stack with the caller's ``ctx`` (its
    tenant and timeline), ``k`` and ``where`` added to its own.

    Nodes a ``LlamaIndexVectorPort`` wrote for a tenant are returned only to that
    tenant (``ctx.scope``); everything else in the index is treated as shared. Scope
    any other per-tenant data with ``where`` or wrap this source in ``ScopedMemory``.
    Read-only: writes go through ``VectorMemory(LlamaIndexVectorPort(index))``.
    """

    accepts_writes = False

    def __init__(self, retriever: BaseRetriever, name: str = "llamaindex") -> None:
        if not isinstance(retriever, BaseRetriever):
            raise InvalidArgumentType(
                f"retriever must be a llama_index BaseRetriever, got {type(retriever).__name__}"
            )
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"name must be a non-empty str, got {name!r}")
        self.retriever = retriever
        self.name = name
        self._native = _native_async(retriever)
        self._node_ids = _own_node_ids(retriever)
        self._allowed = _allowed(retriever, self._node_ids)

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
        query = check_query(query)
        k = check_k(k)
        where = check_where(where) or None
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

        async def fetch(n: int) -> list[MemoryItem | None]:
            call = make(n)
            if call is None:
                return []
            return self._items(await self._retrieve(call, bundle), scope)

        return _cut(await interop.widen(fetch, keep, k, first=first), keep, k)

    def _plan(self, k: int, where: dict[str, Any] | None) -> tuple[_Make | None, int]:
        """How to ask the retriever for ``n`` results, and how many to ask first."""
        r = self.retriever
        overfetch = k * OVERFETCH
        if type(r) is VectorIndexRetriever:
            make, complete = _vector_index_plan(r, self._node_ids, where)
            return make, k if complete else overfetch
        if hasattr(r, "bm25") and isinstance(getattr(r, "corpus", None), list):
            return _bm25_plan(r, where), k
        return _top_k_plan(r), k if not where else overfetch

    async def _retrieve(self, call: BaseRetriever, bundle: QueryBundle) -> list[NodeWithScore]:
        if self._native:
            return await call.aretrieve(bundle)
        return await run_blocking(call.retrieve, bundle)

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
